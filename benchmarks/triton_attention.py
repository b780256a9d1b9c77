"""Triton attention kernels for the probes, each the algorithm of tile's example.

A FlashAttention forward for the attention probe: the algorithm of
Triton's fused-attention tutorial (one program per BLOCK_M queries of a (batch,
head), online softmax in base 2 with the scale folded into the exponent, the
key blocks below the diagonal without a mask and the diagonal ones with it),
written with plain pointer loads, which Triton pipelines itself, and timed at
the same (BLOCK_M, BLOCK_N, num_warps, num_stages) configs as tile's.

A paged attention decode for the decode probe: examples/paged_attention.py's
kernels written in Triton (a program per sequence, head and split of the pages,
then a kernel combining the splits).

Imports triton at the top: the probe imports it only on the GPU.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _attend(acc, l_i, m_i, q, k_base, v_base, s_kn, s_vn, offs_m, lo, hi, qk_scale,
            BLOCK_N: tl.constexpr, D: tl.constexpr, MASKED: tl.constexpr):
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    for start in range(lo, hi, BLOCK_N):
        k = tl.load(k_base + (start + offs_n)[None, :] * s_kn + offs_d[:, None])
        s = tl.dot(q, k)
        if MASKED:
            s = s * qk_scale + tl.where(offs_m[:, None] >= start + offs_n[None, :], 0.0, -1.0e6)
            m_new = tl.maximum(m_i, tl.max(s, 1))
            s = s - m_new[:, None]
        else:
            m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
            s = s * qk_scale - m_new[:, None]
        p = tl.math.exp2(s)
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + (start + offs_n)[:, None] * s_vn + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attention_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, n_ctx, qk_scale, H,
                         s_qb, s_qh, s_qm, s_kb, s_kh, s_kn, s_vb, s_vh, s_vn, s_ob, s_oh, s_om,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    b = tl.program_id(1) // H
    h = tl.program_id(1) % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + b * s_qb + h * s_qh + offs_m[:, None] * s_qm + offs_d[None, :])
    k_base = k_ptr + b * s_kb + h * s_kh
    v_base = v_ptr + b * s_vb + h * s_vh
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    unmasked_end = start_m * BLOCK_M if CAUSAL else n_ctx
    acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, s_kn, s_vn, offs_m, 0, unmasked_end, qk_scale,
                            BLOCK_N, D, False)
    if CAUSAL:
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, s_kn, s_vn, offs_m, unmasked_end,
                                (start_m + 1) * BLOCK_M, qk_scale, BLOCK_N, D, True)
    out = acc / l_i[:, None]
    tl.store(o_ptr + b * s_ob + h * s_oh + offs_m[:, None] * s_om + offs_d[None, :], out.to(o_ptr.dtype.element_ty))


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, block_m: int, block_n: int,
              num_warps: int, num_stages: int) -> torch.Tensor:
    """q, k, v (B, H, N, D), the last dimension contiguous, N a multiple of block_m and block_n."""
    B, H, N, D = q.shape
    assert N % block_m == 0 and N % block_n == 0 and q.stride(3) == k.stride(3) == v.stride(3) == 1
    out = torch.empty_like(q)
    attention_fwd_kernel[(N // block_m, B * H)](
        q, k, v, out, N, 1.0 / math.sqrt(D) * 1.4426950408889634, H,
        q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
        v.stride(0), v.stride(1), v.stride(2), out.stride(0), out.stride(1), out.stride(2),
        BLOCK_M=block_m, BLOCK_N=block_n, D=D, CAUSAL=causal, num_warps=num_warps, num_stages=num_stages)
    return out


@triton.jit
def paged_attention_kernel(q_ptr, k_ptr, v_ptr, tables, lens, o_ptr, part_acc, part_ml, scale, H, per_split,
                           s_qb, s_qh, s_cn, s_cp, s_ch, s_tb, s_ob, s_oh,
                           PAGE: tl.constexpr, D: tl.constexpr, BLOCK_N: tl.constexpr, STAGES: tl.constexpr,
                           SPLITS: tl.constexpr):
    bh = tl.program_id(0)
    split = tl.program_id(1)
    b = bh // H
    h = bh % H
    rd = tl.arange(0, D)
    rn = tl.arange(0, BLOCK_N)
    q = tl.load(q_ptr + b * s_qb + h * s_qh + rd).to(tl.float32)
    seq_len = tl.load(lens + b)
    m = tl.full((), float("-inf"), tl.float32)
    l_sum = tl.zeros((), tl.float32)
    acc = tl.zeros((D,), tl.float32)
    first = split * per_split
    last = tl.minimum(first + per_split, tl.cdiv(seq_len, BLOCK_N))
    for i in tl.range(first, last, num_stages=STAGES):
        t = i * BLOCK_N + rn
        valid = t < seq_len
        page = tl.load(tables + b * s_tb + t // PAGE, mask=valid, other=0)
        at = page[:, None] * s_cn + (t % PAGE)[:, None] * s_cp + h * s_ch + rd[None, :]
        k = tl.load(k_ptr + at, mask=valid[:, None], other=0.0).to(tl.float32)
        v = tl.load(v_ptr + at, mask=valid[:, None], other=0.0).to(tl.float32)
        s = tl.where(valid, tl.sum(k * q[None, :], axis=1) * scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        p = tl.exp(s - m_new)
        alpha = tl.exp(m - m_new)
        l_sum = l_sum * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    if SPLITS == 1:
        tl.store(o_ptr + b * s_ob + h * s_oh + rd, (acc / l_sum).to(o_ptr.dtype.element_ty))
    else:
        at = bh * SPLITS + split
        tl.store(part_acc + at * D + rd, acc)
        tl.store(part_ml + at * 2, m)
        tl.store(part_ml + at * 2 + 1, l_sum)


@triton.jit
def combine_splits_kernel(part_acc, part_ml, o_ptr, H, s_ob, s_oh, D: tl.constexpr, SPLITS: tl.constexpr):
    bh = tl.program_id(0)
    at = bh * SPLITS + tl.arange(0, SPLITS)
    rd = tl.arange(0, D)
    m = tl.load(part_ml + at * 2)
    weight = tl.exp(m - tl.max(m, axis=0))
    l_sum = tl.sum(weight * tl.load(part_ml + at * 2 + 1), axis=0)
    acc = tl.sum(weight[:, None] * tl.load(part_acc + at[:, None] * D + rd[None, :]), axis=0)
    tl.store(o_ptr + bh // H * s_ob + bh % H * s_oh + rd, (acc / l_sum).to(o_ptr.dtype.element_ty))


def paged_attention(q, k_cache, v_cache, block_tables, seq_lens, stages: int, splits: int, block_n: int,
                    num_warps: int = 4):
    """examples/paged_attention.py's calling convention; the last dimension of q and the caches contiguous."""
    B, H, D = q.shape
    PAGE = k_cache.shape[1]
    assert q.stride(2) == k_cache.stride(3) == 1 and k_cache.stride() == v_cache.stride()
    assert block_n % PAGE == 0
    out = torch.empty_like(q)
    part_acc = torch.empty(B * H * splits * D if splits > 1 else 1, dtype=torch.float32, device=q.device)
    part_ml = torch.empty(B * H * splits * 2 if splits > 1 else 1, dtype=torch.float32, device=q.device)
    steps = -(-block_tables.shape[1] * PAGE // block_n)
    paged_attention_kernel[(B * H, splits)](
        q, k_cache, v_cache, block_tables, seq_lens, out, part_acc, part_ml, 1.0 / math.sqrt(D), H, -(-steps // splits),
        q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), block_tables.stride(0),
        out.stride(0), out.stride(1), PAGE=PAGE, D=D, BLOCK_N=block_n, STAGES=stages, SPLITS=splits,
        num_warps=num_warps)
    if splits > 1:
        combine_splits_kernel[(B * H,)](part_acc, part_ml, out, H, out.stride(0), out.stride(1), D=D, SPLITS=splits)
    return out
