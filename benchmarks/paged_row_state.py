"""A variant of examples/paged_attention.py under test (`paged_variants_probe.py`): every
token slot of a step keeps its own online softmax (a running maximum and sum per row of the
BLOCK_N x D tile, and a BLOCK_N x D accumulator), so that a step's only reduction is each
row's dot product with the query, within a warp; the rows are combined once, at the end.
The example's step reduces over the rows three times (maximum, sum, weighted values), each a
cross-warp exchange through shared memory with its barriers.
"""

from __future__ import annotations

import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import tile  # noqa: E402
from paged_attention import combine_splits_kernel  # noqa: E402


@tile.kernel
def row_state_kernel(q, k_cache, v_cache, block_tables, seq_lens, out, part_acc, part_ml, scale, H, per_split,
                     s_qb, s_qh, s_qd, s_cn, s_cp, s_ch, s_cd, s_tb, s_ob, s_oh, s_od,
                     PAGE: tile.constexpr, D: tile.constexpr, BLOCK_N: tile.constexpr, STAGES: tile.constexpr,
                     SPLITS: tile.constexpr):
    bh = tile.program_id(0)
    split = tile.program_id(1)
    b, h = bh // H, bh % H
    rd = tile.arange(0, D)
    rn = tile.arange(0, BLOCK_N)
    qv = tile.load(q + b * s_qb + h * s_qh + rd * s_qd).to(tile.float32)
    seq_len = tile.load(seq_lens + b)
    m = tile.full((BLOCK_N,), float("-inf"), tile.float32)
    l_sum = tile.zeros((BLOCK_N,), tile.float32)
    acc = tile.zeros((BLOCK_N, D), tile.float32)
    first = split * per_split
    last = tile.minimum(first + per_split, tile.cdiv(seq_len, BLOCK_N))
    for i in tile.range(first, last, num_stages=STAGES):
        t = i * BLOCK_N + rn
        valid = t < seq_len
        page = tile.load(block_tables + b * s_tb + t // PAGE, mask=valid, other=0)
        at = page[:, None] * s_cn + (t % PAGE)[:, None] * s_cp + h * s_ch + rd[None, :] * s_cd
        kp = tile.load(k_cache + at, mask=valid[:, None], other=0.0).to(tile.float32)
        vp = tile.load(v_cache + at, mask=valid[:, None], other=0.0).to(tile.float32)
        s = tile.where(valid, tile.sum(kp * qv[None, :], axis=1) * scale, float("-inf"))
        m_new = tile.maximum(m, s)
        m_ok = tile.where(m_new == float("-inf"), 0.0, m_new)  # a slot with no token yet: no -inf - -inf
        p = tile.exp(s - m_ok)
        alpha = tile.exp(m - m_ok)
        l_sum = l_sum * alpha + p
        acc = acc * alpha[:, None] + p[:, None] * vp
        m = m_new
    top = tile.max(m, axis=0)
    top_ok = tile.where(top == float("-inf"), 0.0, top)
    weight = tile.exp(m - top_ok)
    l_all = tile.sum(l_sum * weight, axis=0)
    acc_all = tile.sum(acc * weight[:, None], axis=0)
    if SPLITS == 1:
        tile.store(out + b * s_ob + h * s_oh + rd * s_od, acc_all / l_all)
    else:
        at = bh * SPLITS + split
        tile.store(part_acc + at * D + rd, acc_all)
        tile.store(part_ml + at * 2, top)
        tile.store(part_ml + at * 2 + 1, l_all)


def paged_attention(q, k_cache, v_cache, block_tables, seq_lens, stages: int = 1, splits: int = 1,
                    block_n: int = 64, num_warps: int = 8):
    """examples/paged_attention.py's calling convention."""
    B, H, D = q.shape
    PAGE = k_cache.shape[1]
    assert k_cache.stride() == v_cache.stride() and block_n % PAGE == 0
    steps = -(-block_tables.shape[1] * PAGE // block_n)
    out = torch.empty_like(q)
    part_acc = torch.empty(B * H * splits * D if splits > 1 else 1, dtype=torch.float32, device=q.device)
    part_ml = torch.empty(B * H * splits * 2 if splits > 1 else 1, dtype=torch.float32, device=q.device)
    row_state_kernel[(B * H, splits)](q, k_cache, v_cache, block_tables, seq_lens, out, part_acc, part_ml,
                                      1.0 / math.sqrt(D), H, -(-steps // splits),
                                      *q.stride(), *k_cache.stride(), block_tables.stride(0), *out.stride(),
                                      PAGE=PAGE, D=D, BLOCK_N=block_n, STAGES=stages, SPLITS=splits,
                                      num_warps=num_warps)
    if splits > 1:
        combine_splits_kernel[(B * H,)](part_acc, part_ml, out, H, *out.stride(), D=D, SPLITS=splits)
    return out
