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
    dtype = x.dtype if x.dtype.is_floating_point else torch.int32 if x.dtype.itemsize < 4 else x.dtype
    return fn(x.flip(axis), axis, dtype=dtype).flip(axis) if reverse else fn(x, axis, dtype=dtype)


def run_cumsum(device, dtype, M, N, BM, BN, axis, reverse, prod=False):
    """(what the kernel gave, torch's) for a strided M x N view in a BM x BN block."""
    g = torch.Generator().manual_seed(M * N)
    x = (1 + torch.rand(N, M, generator=g) * 0.1) if prod else (torch.randn(N, M, generator=g) * 4).to(dtype)
    x = x.t()  # a strided view
    want = _masked_reference(x, axis, reverse, prod)
    out = torch.empty(M, N, dtype=want.dtype, device=device)
    x = x.to(device)
    cumsum_2d_kernel[(1,)](x, out, M, N, x.stride(0), x.stride(1), BLOCK_M=BM, BLOCK_N=BN, AXIS=axis,
                           REVERSE=reverse, PROD=prod)
    return out, want


@pytest.mark.parametrize("dtype, axis, reverse", [
    (torch.float32, 1, False),
    (torch.float32, 0, True),
    (torch.int32, 0, False),
    (torch.int8, 1, True),
    (torch.int64, 1, False),
])
def test_cumsum_2d(dtype, axis, reverse):
    torch.testing.assert_close(*run_cumsum("cpu", dtype, 13, 27, 16, 32, axis, reverse), rtol=1e-5, atol=1e-4)


def test_cumprod_2d():
    torch.testing.assert_close(*run_cumsum("cpu", torch.float32, 9, 30, 16, 32, 1, True, prod=True))


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


def run_recurrence(device, L, D, BL, BD, reverse):
    g = torch.Generator().manual_seed(L * D)
    a, b = torch.rand(L, D, generator=g) * 0.5 + 0.5, torch.randn(L, D, generator=g)
    want, h = torch.empty(L, D, dtype=torch.float64), torch.zeros(D, dtype=torch.float64)
    for t in (reversed(range(L)) if reverse else range(L)):
        h = a[t].double() * h + b[t].double()
        want[t] = h
    out = torch.empty(L, D, device=device)
    recurrence_kernel[(tile.cdiv(D, BD),)](a.to(device), b.to(device), out, L, D, BLOCK_L=BL, BLOCK_D=BD, REVERSE=reverse)
    return out, want.float()


@pytest.mark.parametrize("reverse", [False, True])
def test_linear_recurrence(reverse):
    torch.testing.assert_close(*run_recurrence("cpu", 29, 20, 32, 8, reverse), rtol=1e-4, atol=1e-4)


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


def run_argmax(device, M, N, BM, BN):
    """Row maxima and their first index, many ties among them: (got, want) of both, stacked."""
    x = torch.randint(-3, 4, (M, N), generator=torch.Generator().manual_seed(M)).float()
    value, index = torch.empty(M, device=device), torch.empty(M, dtype=torch.int32, device=device)
    argmax_kernel[(tile.cdiv(M, BM),)](x.to(device), value, index, M, N, BLOCK_M=BM, BLOCK_N=BN)
    return torch.stack([value, index.float()]), torch.stack([x.max(1).values, x.argmax(1).float()])


def test_argmax_by_reduce():
    torch.testing.assert_close(*run_argmax("cpu", 37, 50, 16, 64))


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


def run_whole_tile(device, N, BLOCK):
    x = torch.randint(0, 1 << 20, (N,), dtype=torch.int32, generator=torch.Generator().manual_seed(N))
    out = torch.empty(3 + N, dtype=torch.int32, device=device)
    whole_tile_kernel[(1,)](x.to(device), out, N, BLOCK=BLOCK)
    xs = x.numpy()
    head = [int(xs.sum()), int(np.bitwise_xor.reduce(xs)), int(np.bitwise_or.reduce(xs))]
    return out, torch.cat([torch.tensor(head, dtype=torch.int32), torch.cumsum(x, 0, dtype=torch.int32)])


def test_whole_tile_reductions():
    got, want = run_whole_tile("cpu", 45, 64)
    assert got.tolist() == want.tolist()


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


def run_counting(device, T, E, BT):
    expert = torch.randint(0, E, (T,), dtype=torch.int32, generator=torch.Generator().manual_seed(T))
    count, slot = torch.empty(E, dtype=torch.int32, device=device), torch.empty(T, dtype=torch.int32, device=device)
    count_kernel[(1,)](expert.to(device), count, slot, T, E=E, BLOCK_T=BT)
    want = [int((expert[:i] == expert[i]).sum()) for i in range(T)]
    return torch.cat([count, slot]), torch.cat([torch.bincount(expert, minlength=E).to(torch.int32),
                                                torch.tensor(want, dtype=torch.int32)])


def test_moe_token_counting():
    got, want = run_counting("cpu", 50, 8, 64)
    assert got.tolist() == want.tolist()


@tile.kernel
def running_cumsum_kernel(x_ptr, out_ptr, n, BLOCK: tile.constexpr):
    """A row longer than the block, block by block, each block's cumsum offset by the total so
    far (a chunked scan, as linear-attention kernels run them)."""
    offs = tile.arange(0, BLOCK)
    total = 0.0
    for start in range(0, n, BLOCK):
        mask = start + offs < n
        x = tile.load(x_ptr + offs, mask=mask, other=0.0)
        c = tile.cumsum(x, 0) + total
        tile.store(out_ptr + offs, c, mask=mask)
        total += tile.sum(x, 0)
        x_ptr += BLOCK
        out_ptr += BLOCK


def run_running_cumsum(device, n, BLOCK):
    x = torch.randn(n, generator=torch.Generator().manual_seed(n))
    out = torch.empty(n, device=device)
    running_cumsum_kernel[(1,)](x.to(device), out, n, BLOCK=BLOCK)
    return out, torch.cumsum(x.double(), 0).float()


def test_running_cumsum():
    torch.testing.assert_close(*run_running_cumsum("cpu", 300, 64), rtol=1e-4, atol=1e-4)


# The GPU half (benchmarks/language_on_device.py): name -> (runner, arguments after the device, tolerance)
DEVICE_CASES = {
    "cumsum 1x1024": (run_cumsum, (torch.float32, 1, 1000, 1, 1024, 1, False), 1e-3),
    "cumsum 64x64 axis 0": (run_cumsum, (torch.float32, 61, 64, 64, 64, 0, False), 1e-4),
    "cumsum 64x64 axis 1 reverse": (run_cumsum, (torch.float32, 64, 63, 64, 64, 1, True), 1e-4),
    "cumsum int8 13x27 axis 0 reverse": (run_cumsum, (torch.int8, 13, 27, 16, 32, 0, True), 0),
    "cumsum int64 13x27 axis 1": (run_cumsum, (torch.int64, 13, 27, 16, 32, 1, False), 0),
    "cumsum f16 16x8 axis 1": (run_cumsum, (torch.float16, 16, 8, 16, 8, 1, False), 1e-2),
    "cumprod 9x30 axis 1 reverse": (run_cumsum, (torch.float32, 9, 30, 16, 32, 1, True, True), 1e-5),
    "linear recurrence 29x20": (run_recurrence, (29, 20, 32, 8, False), 1e-4),
    "linear recurrence 64x64 reverse": (run_recurrence, (64, 64, 64, 64, True), 1e-4),
    "argmax by reduce 37x50": (run_argmax, (37, 50, 16, 64), 0),
    "argmax by reduce 64x1000": (run_argmax, (64, 1000, 2, 1024), 0),
    "whole-tile reduce, xor_sum, reduce_or, cumsum": (run_whole_tile, (1000, 1024), 0),
    "MoE token counting": (run_counting, (50, 8, 64), 0),
    "cumsum block by block in a loop": (run_running_cumsum, (3000, 256), 1e-3),
}


@pytest.mark.parametrize("name", ["cumsum 64x64 axis 0", "cumsum f16 16x8 axis 1", "argmax by reduce 64x1000"])
def test_device_cases_on_the_cpu(name):
    """A few of the GPU half's cases, on the CPU target (the script's --cpu runs them all)."""
    run, args, tol = DEVICE_CASES[name]
    torch.testing.assert_close(*run("cpu", *args), rtol=tol, atol=tol)


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


def _meta(*shape, dtype=torch.float32):
    return torch.empty(*shape, dtype=dtype, device="meta")


def _counts(ptx: str) -> dict:
    return {k: len(re.findall(k, ptx)) for k in ("shfl.sync.up", "shfl.sync.down", "shfl.sync.idx", "shfl.sync.bfly",
                                                 "bar.sync", r"\.local", "ld.shared")}


@pytest.mark.parametrize("BM, BN, axis, reverse", [(1, 1024, 1, False), (64, 64, 0, False), (64, 64, 1, True)])
def test_scan_ptx(BM, BN, axis, reverse, gpu_target):
    """Along the fastest axis, shuffles within the warps (down for a reverse scan) and, where
    warps lie along it, one exchange through shared memory; no local memory."""
    gpu_target()
    launcher = cumsum_2d_kernel.compile(_meta(BM, BN), _meta(BM, BN), BM, BN, BN, 1, BLOCK_M=BM, BLOCK_N=BN,
                                        AXIS=axis, REVERSE=reverse, PROD=False)
    n = _counts(launcher.asm["ptx"])
    assert n[r"\.local"] == 0 and launcher.metadata["ptxas"]["spill_stores"] == 0
    if BN == 1024:  # 32 lanes and 4 warps along the row: a 5-step scan up, then the warps' totals
        assert n["shfl.sync.up"] >= 5 and n["bar.sync"] == 2 and n["ld.shared"] >= 1
    if axis == 1 and BN == 64:  # a row within a warp: shuffles only
        assert n["shfl.sync.down"] > 0 and n["shfl.sync.up"] == 0 and n["bar.sync"] == 0


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_combines_compile_for_the_gpu(target, gpu_target):
    """Tuple scans and reductions, 8-, 32- and 64-bit and boolean values, whole-tile reductions."""
    gpu_target(target)
    launcher = argmax_kernel.compile(_meta(64, 64), _meta(64), _meta(64, dtype=torch.int32), 64, 64, BLOCK_M=64,
                                     BLOCK_N=64)
    n = _counts(launcher.asm["ptx"])
    assert n["shfl.sync.bfly"] > 0 and n[r"\.local"] == 0
    launcher = recurrence_kernel.compile(_meta(64, 64), _meta(64, 64), _meta(64, 64), 64, 64, BLOCK_L=64, BLOCK_D=64,
                                         REVERSE=False)
    assert launcher.metadata["ptxas"]["spill_stores"] == 0
    whole_tile_kernel.compile(_meta(64, dtype=torch.int32), _meta(67, dtype=torch.int32), 64, BLOCK=64)
    count_kernel.compile(_meta(50, dtype=torch.int32), _meta(8, dtype=torch.int32), _meta(50, dtype=torch.int32), 50,
                         E=8, BLOCK_T=64)
    for dtype in (torch.int64, torch.float16, torch.int8):
        cumsum_2d_kernel.compile(_meta(16, 32, dtype=dtype), _meta(16, 32, dtype=torch.int32 if dtype == torch.int8 else dtype),
                                 16, 32, 32, 1, BLOCK_M=16, BLOCK_N=32, AXIS=1, REVERSE=False, PROD=False)


# Triton's spelling of the scans, run by Triton's interpreter and, after
# `s/tl\./tile./; s/triton.jit/tile.kernel/`, by tile.
TRITON_SOURCE = '''
import triton
import triton.language as tl


@triton.jit
def _recurrence(a1, b1, a2, b2):
    return a2 * a1, a2 * b1 + b2


@triton.jit
def _first_max(v1, i1, v2, i2):
    pick = (v1 > v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(pick, v1, v2), tl.where(pick, i1, i2)


@triton.jit
def scans_kernel(
    x_ptr, g_ptr, out_ptr, idx_ptr,
    M, N,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    offs = rm[:, None] * N + rn[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    g = tl.load(g_ptr + offs, mask=mask, other=1.0)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=1, reverse=True).to(tl.float32), mask=mask)
    out_ptr += M * N
    _, h = tl.associative_scan((g, x.to(tl.float32)), 0, _recurrence)
    tl.store(out_ptr + offs, h, mask=mask)
    out_ptr += M * N
    tl.store(out_ptr + offs, x.to(tl.float32).cumprod(0, reverse=True), mask=mask)
    cols = tl.broadcast_to(rn[None, :], (BLOCK_M, BLOCK_N))
    _, first = tl.reduce((tl.where(mask, x, -1000), cols), 1, _first_max)
    tl.store(idx_ptr + rm, first, mask=rm < M)
    tl.store(idx_ptr + M + rm, tl.xor_sum(x, axis=1), mask=rm < M)
'''

TRITON_SCRIPT = """
import sys, torch
sys.path.insert(0, sys.argv[1])
import triton_scans
from test_scans import scans_inputs
x, g, out, idx = scans_inputs()
triton_scans.scans_kernel[(1,)](x, g, out, idx, 13, 27, BLOCK_M=16, BLOCK_N=32)
torch.save((out, idx), sys.argv[2])
"""


def scans_inputs():
    gen = torch.Generator().manual_seed(3)
    x = torch.randint(-3, 4, (13, 27), dtype=torch.int32, generator=gen)
    g = torch.rand(13, 27, generator=gen) * 0.5 + 0.5
    return x, g, torch.empty(3, 13, 27), torch.empty(2 * 13, dtype=torch.int32)


def test_triton_source_matches_triton_interpreter(tmp_path):
    """The same source, Triton's on its interpreter (a process of its own: TRITON_INTERPRET is
    read when triton.language is imported) and tile's after the spelling change."""
    pytest.importorskip("triton")
    (tmp_path / "triton_scans.py").write_text(TRITON_SOURCE)
    ported = re.sub(r"tl\.", "tile.", TRITON_SOURCE).replace("triton.jit", "tile.kernel")
    (tmp_path / "tile_scans.py").write_text(ported.replace("import triton.language as tl", "import tile"))
    sys.path.insert(0, str(tmp_path))
    try:
        import tile_scans
    finally:
        sys.path.remove(str(tmp_path))
    x, g, out, idx = scans_inputs()
    tile_scans.scans_kernel[(1,)](x, g, out, idx, 13, 27, BLOCK_M=16, BLOCK_N=32)
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": os.path.dirname(__file__)}
    run = subprocess.run([sys.executable, "-c", TRITON_SCRIPT, str(tmp_path), str(tmp_path / "theirs.pt")], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    their_out, their_idx = torch.load(tmp_path / "theirs.pt")
    torch.testing.assert_close(out, their_out, rtol=1e-5, atol=1e-5)
    assert idx.tolist() == their_idx.tolist()
    assert idx[:13].tolist() == x.argmax(1).tolist()  # (and both are right)
