"""Triton's scans and reductions by a combine function: `tile.associative_scan`, `cumsum`,
`cumprod` (`tile.scan`), and `tile.reduce`, `xor_sum`, `reduce_or` (`tile.reduce_region`),
run on the CPU against torch and Triton's interpreter, and compiled for sm_90a / sm_80."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

import tile


@tile.jit
def _add(a, b):
    return a + b


@tile.jit
def _linear_recurrence(a1, b1, a2, b2):
    # h = a * h + b: (a1, b1) then (a2, b2) is h -> a2 * (a1 * h + b1) + b2
    return a2 * a1, a2 * b1 + b2


@tile.jit
def _argmax_combine(value1, index1, value2, index2):
    # the larger value; of equal ones, the smaller index (torch's first maximum)
    gt = value1 > value2
    tie = (value1 == value2) & (index1 < index2)
    pick = gt | tie
    return tile.where(pick, value1, value2), tile.where(pick, index1, index2)


@tile.kernel
def cumsum_2d_kernel(
    x_ptr, out_ptr,
    M, N,
    stride_xm, stride_xn,
    BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr,
    AXIS: tile.constexpr, REVERSE: tile.constexpr, PROD: tile.constexpr,
):
    rm = tile.arange(0, BLOCK_M)
    rn = tile.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tile.load(x_ptr + rm[:, None] * stride_xm + rn[None, :] * stride_xn, mask=mask, other=1 if PROD else 0)
    if PROD:
        y = tile.cumprod(x, axis=AXIS, reverse=REVERSE)
    else:
        y = x.cumsum(AXIS, reverse=REVERSE)
    tile.store(out_ptr + rm[:, None] * N + rn[None, :], y, mask=mask)


def _masked_reference(x, axis, reverse, prod):
    """torch's cumsum/cumprod of the tile the kernel loads: padded to the block with the
    identity, which a reverse scan reads first."""
    fn = torch.cumprod if prod else torch.cumsum
    dtype = x.dtype if x.dtype.is_floating_point else torch.int32
    return fn(x.flip(axis), axis, dtype=dtype).flip(axis) if reverse else fn(x, axis, dtype=dtype)


@pytest.mark.parametrize("dtype, axis, reverse", [
    (torch.float32, 1, False),
    (torch.float32, 0, True),
    (torch.int32, 0, False),
    (torch.int8, 1, True),
])
def test_cumsum_2d(dtype, axis, reverse):
    M, N = 13, 27
    x = (torch.randn(N, M) * 4).to(dtype).t()  # a strided view
    out = torch.empty(M, N, dtype=torch.int32 if dtype == torch.int8 else dtype)
    cumsum_2d_kernel[(1,)](x, out, M, N, x.stride(0), x.stride(1), BLOCK_M=16, BLOCK_N=32, AXIS=axis,
                           REVERSE=reverse, PROD=False)
    torch.testing.assert_close(out, _masked_reference(x, axis, reverse, False), rtol=1e-5, atol=1e-4)


def test_cumprod_2d():
    M, N = 9, 30
    x = 1 + torch.rand(M, N) * 0.1
    out = torch.empty(M, N)
    cumsum_2d_kernel[(1,)](x, out, M, N, x.stride(0), x.stride(1), BLOCK_M=16, BLOCK_N=32, AXIS=1, REVERSE=True,
                           PROD=True)
    torch.testing.assert_close(out, _masked_reference(x, 1, True, True))


@tile.kernel
def recurrence_kernel(a_ptr, b_ptr, h_ptr, L, D, BLOCK_L: tile.constexpr, BLOCK_D: tile.constexpr,
                      REVERSE: tile.constexpr):
    """h[t] = a[t] * h[t - 1] + b[t] along the sequence (dim 0), each channel (dim 1) apart:
    a Mamba-style scan, one block of channels per program."""
    pid = tile.program_id(0)
    offs_l = tile.arange(0, BLOCK_L)
    offs_d = pid * BLOCK_D + tile.arange(0, BLOCK_D)
    mask = (offs_l[:, None] < L) & (offs_d[None, :] < D)
    a_ptr += offs_l[:, None] * D + offs_d[None, :]
    b_ptr += offs_l[:, None] * D + offs_d[None, :]
    a = tile.load(a_ptr, mask=mask, other=1.0)
    b = tile.load(b_ptr, mask=mask, other=0.0)
    _, h = tile.associative_scan((a, b), 0, _linear_recurrence, reverse=REVERSE)
    tile.store(h_ptr + offs_l[:, None] * D + offs_d[None, :], h, mask=mask)


def _recurrence_reference(a, b, reverse):
    h, out = torch.zeros(a.shape[1], dtype=torch.float64), torch.empty(a.shape, dtype=torch.float64)
    for t in (reversed(range(a.shape[0])) if reverse else range(a.shape[0])):
        h = a[t].double() * h + b[t].double()
        out[t] = h
    return out.float()


@pytest.mark.parametrize("reverse", [False, True])
def test_linear_recurrence(reverse):
    L, D = 29, 20
    a, b = torch.rand(L, D) * 0.5 + 0.5, torch.randn(L, D)
    h = torch.empty(L, D)
    recurrence_kernel[(tile.cdiv(D, 8),)](a, b, h, L, D, BLOCK_L=32, BLOCK_D=8, REVERSE=reverse)
    torch.testing.assert_close(h, _recurrence_reference(a, b, reverse), rtol=1e-4, atol=1e-4)


@tile.kernel
def argmax_kernel(x_ptr, value_ptr, index_ptr, M, N, BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr):
    rm = tile.program_id(0) * BLOCK_M + tile.arange(0, BLOCK_M)
    rn = tile.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tile.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask, other=-float("inf"))
    index = tile.broadcast_to(rn[None, :], (BLOCK_M, BLOCK_N))
    value, arg = tile.reduce((x, index), 1, _argmax_combine)
    tile.store(value_ptr + rm, value, mask=rm < M)
    tile.store(index_ptr + rm, arg, mask=rm < M)


def test_argmax_by_reduce():
    M, N = 37, 50
    x = torch.randint(-3, 4, (M, N)).float()  # many ties: the first index wins
    value, index = torch.empty(M), torch.empty(M, dtype=torch.int32)
    argmax_kernel[(tile.cdiv(M, 16),)](x, value, index, M, N, BLOCK_M=16, BLOCK_N=64)
    torch.testing.assert_close(value, x.max(1).values)
    torch.testing.assert_close(index, x.argmax(1).to(torch.int32))


@tile.kernel
def whole_tile_kernel(x_ptr, out_ptr, N, BLOCK: tile.constexpr):
    """The reductions of the whole tile (axis=None), kept as (1, 1) tiles, and a 1-D scan."""
    offs = tile.arange(0, BLOCK)
    x = tile.load(x_ptr + offs, mask=offs < N, other=0)
    x2 = tile.reshape(x, (4, BLOCK // 4))
    total = tile.reduce(x2, None, _add, keep_dims=True)
    tile.store(out_ptr + tile.arange(0, 1)[:, None] + tile.arange(0, 1)[None, :], total)
    tile.store(out_ptr + 1, tile.xor_sum(x2))
    tile.store(out_ptr + 2, tile.reduce_or(x, 0))
    tile.store(out_ptr + 3 + offs, tile.cumsum(x), mask=offs < N)


def test_whole_tile_reductions():
    N = 45
    x = torch.randint(0, 1 << 20, (N,), dtype=torch.int32)
    out = torch.empty(3 + N, dtype=torch.int32)
    whole_tile_kernel[(1,)](x, out, N, BLOCK=64)
    xs = x.numpy()
    assert out[0] == int(xs.sum())
    assert out[1] == int(np.bitwise_xor.reduce(xs))
    assert out[2] == int(np.bitwise_or.reduce(xs))
    torch.testing.assert_close(out[3:], torch.cumsum(x, 0, dtype=torch.int32))


@tile.kernel
def count_kernel(expert_ptr, count_ptr, slot_ptr, T, E: tile.constexpr, BLOCK_T: tile.constexpr):
    """MoE token counting: per expert, how many tokens chose it, and each token's slot among
    them (a cumsum of a mask, with Triton's int32 accumulation)."""
    t = tile.arange(0, BLOCK_T)
    e = tile.arange(0, E)
    expert = tile.load(expert_ptr + t, mask=t < T, other=-1)
    hit = expert[:, None] == e[None, :]
    tile.store(count_ptr + e, tile.sum(hit.to(tile.int32), axis=0))
    slot = tile.sum(tile.where(hit, tile.cumsum(hit, axis=0) - 1, 0), axis=1)
    tile.store(slot_ptr + t, slot, mask=t < T)


def test_moe_token_counting():
    T, E = 50, 8
    expert = torch.randint(0, E, (T,), dtype=torch.int32)
    count, slot = torch.empty(E, dtype=torch.int32), torch.empty(T, dtype=torch.int32)
    count_kernel[(1,)](expert, count, slot, T, E=E, BLOCK_T=64)
    torch.testing.assert_close(count, torch.bincount(expert, minlength=E).to(torch.int32))
    want = [int((expert[:i] == expert[i]).sum()) for i in range(T)]
    assert slot.tolist() == want


@tile.jit
def _bad_count(a, b):
    return a + b, a


@tile.kernel
def bad_scan_kernel(x_ptr, BLOCK: tile.constexpr):
    x = tile.load(x_ptr + tile.arange(0, BLOCK))
    tile.store(x_ptr + tile.arange(0, BLOCK), tile.associative_scan(x, 0, _bad_count))


def _plain(a, b):
    return a + b


@tile.kernel
def not_jit_kernel(x_ptr, BLOCK: tile.constexpr):
    x = tile.load(x_ptr + tile.arange(0, BLOCK))
    tile.store(x_ptr, tile.reduce(x, 0, _plain))


@tile.kernel
def mixed_shapes_kernel(x_ptr, BLOCK: tile.constexpr):
    x = tile.load(x_ptr + tile.arange(0, BLOCK))
    tile.store(x_ptr, tile.reduce((x, x[None, :]), 0, _argmax_combine)[0])


@pytest.mark.parametrize("kernel, message", [
    (bad_scan_kernel, r"combine_fn must return 1 value \(one per input\), got 2"),
    (not_jit_kernel, r"combine_fn must be a @tile.jit"),
    (mixed_shapes_kernel, r"inputs must have one shape"),
])
def test_bad_combines(kernel, message):
    with pytest.raises(tile.CompilationError, match=message) as e:
        kernel[(1,)](torch.ones(8), BLOCK=8)
    assert re.search(r"test_scans.py:\d+", str(e.value))
