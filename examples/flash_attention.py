"""FlashAttention forward: softmax(Q K^T / sqrt(D)) V for (B, H, N, D) tensors of any strides.

One program per BLOCK_M queries of one (batch, head) keeps its queries in a tile
and streams keys and values in blocks of BLOCK_N: scores by `dot` (K read
transposed through its strides), an online softmax in the exp2 domain (running
row maximum m and sum l; the accumulator rescaled by exp2(m_old - m_new) as the
maximum grows), and the probabilities, cast to the inputs' dtype, `dot` V into
an f32 accumulator. CAUSAL stops each program's keys at its last query and masks
the scores above the diagonal. As in Triton's tutorial, the blocks that need no
mask (whole blocks of keys, below the diagonal) run in a loop of their own.
"""

import math

import torch

import tile


@tile.func
def attend(qt, kb, vb, m_i, l_i, acc, rm, rd, lo, hi, n_ctx, qk_scale, s_kn, s_kd, s_vn, s_vd, BLOCK_N, MASKED, CAUSAL,
           WARP_SPECIALIZE):
    """Keys and values lo .. hi into the running (m_i, l_i, acc); MASKED: some keys of a
    block lie past n_ctx or (CAUSAL) above the diagonal, whose scores count as -inf."""
    for start_n in tile.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        rn = start_n + tile.arange(0, BLOCK_N)
        kt = tile.load(kb + rd[:, None] * s_kd + rn[None, :] * s_kn, mask=rn[None, :] < n_ctx, other=0.0)
        s = tile.dot(qt, kt)
        if MASKED:
            keep = rn[None, :] < n_ctx
            if CAUSAL:
                keep = keep & (rn[None, :] <= rm[:, None])
            s = tile.where(keep, s, float("-inf"))
        m_new = tile.maximum(m_i, tile.max(s, axis=1) * qk_scale)
        p = tile.exp2(s * qk_scale - m_new[:, None])  # one fma an element: the scale folded in
        alpha = tile.exp2(m_i - m_new)
        l_i = l_i * alpha + tile.sum(p, axis=1)
        vt = tile.load(vb + rn[:, None] * s_vn + rd[None, :] * s_vd, mask=rn[:, None] < n_ctx, other=0.0)
        acc = tile.dot(p.to(vt.dtype), vt, acc * alpha[:, None])
        m_i = m_new
    return m_i, l_i, acc


@tile.func
def key_range(start_m, n_ctx, BLOCK_M, BLOCK_N, CAUSAL):
    """The keys query block start_m attends to end at `end`; the blocks of whole keys
    before `whole` (below the diagonal, if CAUSAL) need no mask, the rest do."""
    end = n_ctx
    whole = n_ctx // BLOCK_N * BLOCK_N
    if CAUSAL:
        end = tile.minimum((start_m + 1) * BLOCK_M, n_ctx)
        whole = tile.minimum(start_m * BLOCK_M // BLOCK_N * BLOCK_N, whole)
    return whole, end


@tile.kernel
def attention_kernel(q, k, v, out, n_ctx, scale, H,
                     s_qb, s_qh, s_qm, s_qd, s_kb, s_kh, s_kn, s_kd, s_vb, s_vh, s_vn, s_vd, s_ob, s_oh, s_om, s_od,
                     BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr, D: tile.constexpr, CAUSAL: tile.constexpr,
                     lse=None, group=1, WARP_SPECIALIZE: tile.constexpr = False):
    start_m = tile.program_id(0)
    bh = tile.program_id(1)
    b, h = bh // H, bh % H
    rm = start_m * BLOCK_M + tile.arange(0, BLOCK_M)
    rd = tile.arange(0, D)
    qt = tile.load(q + b * s_qb + h * s_qh + rm[:, None] * s_qm + rd[None, :] * s_qd, mask=rm[:, None] < n_ctx, other=0.0)
    m_i = tile.full((BLOCK_M,), float("-inf"), tile.float32)
    l_i = tile.zeros((BLOCK_M,), tile.float32)
    acc = tile.zeros((BLOCK_M, D), tile.float32)
    qk_scale = scale * 1.4426950408889634  # exp(x) = exp2(x * log2(e))
    whole, end = key_range(start_m, n_ctx, BLOCK_M, BLOCK_N, CAUSAL)
    kb = k + b * s_kb + h // group * s_kh
    vb = v + b * s_vb + h // group * s_vh
    m_i, l_i, acc = attend(qt, kb, vb, m_i, l_i, acc, rm, rd, 0, whole, n_ctx, qk_scale, s_kn, s_kd, s_vn, s_vd,
                           BLOCK_N, False, CAUSAL, WARP_SPECIALIZE)
    m_i, l_i, acc = attend(qt, kb, vb, m_i, l_i, acc, rm, rd, whole, end, n_ctx, qk_scale, s_kn, s_kd, s_vn, s_vd,
                           BLOCK_N, True, CAUSAL, WARP_SPECIALIZE)
    o = acc / l_i[:, None]
    tile.store(out + b * s_ob + h * s_oh + rm[:, None] * s_om + rd[None, :] * s_od, o, mask=rm[:, None] < n_ctx)
    if lse is not None:
        # m_i is the running max in the log2 domain of the scaled scores: back to natural log.
        tile.store(lse + bh * n_ctx + rm, (m_i + tile.log2(l_i)) * 0.6931471805599453, mask=rm < n_ctx)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
              BLOCK_M: int = 64, BLOCK_N: int = 64, sm_scale: float | None = None, return_lse: bool = False,
              **launch):
    """softmax(Q K^T * sm_scale) V (sm_scale 1/sqrt(D) by default); K and V may have fewer heads
    than Q (GQA), a divisor of them. return_lse: also the (B, H, N) f32 log-sum-exp per query."""
    B, H, N, D = q.shape
    Hkv = k.shape[1]
    if H % Hkv or v.shape[1] != Hkv:
        raise ValueError(f"K and V heads ({Hkv}, {v.shape[1]}) must be equal and divide Q's {H}")
    out = torch.empty_like(q)
    lse = torch.empty(B, H, N, device=q.device, dtype=torch.float32) if return_lse else None
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    grid = (tile.cdiv(N, BLOCK_M), B * H)
    attention_kernel[grid](q, k, v, out, N, scale, H, *q.stride(), *k.stride(), *v.stride(), *out.stride(),
                           BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, D=D, CAUSAL=causal, lse=lse, group=H // Hkv, **launch)
    return (out, lse) if return_lse else out


def reference(q, k, v, causal=False):
    return torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal).to(q.dtype)


def reference_lse(q, k, v, causal=False, sm_scale=None):
    """Each query row's log-sum-exp of its scaled scores (f32), GQA heads repeated."""
    group = q.shape[1] // k.shape[1]
    k = k.float().repeat_interleave(group, dim=1)
    s = q.float() @ k.transpose(-1, -2) * (sm_scale or 1.0 / math.sqrt(q.shape[-1]))
    if causal:
        n = q.shape[2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.logsumexp(s, dim=-1)


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    # N not a multiple of the blocks; the second case's K is a (B, N, H, D) tensor viewed as (B, H, N, D)
    for dtype, (B, H, N, D), causal in [(torch.float16, (2, 3, 100, 64), False), (torch.bfloat16, (1, 2, 130, 32), True)]:
        q, v = (torch.randn(B, H, N, D, device=device, dtype=dtype) for _ in range(2))
        k = torch.randn(B, N, H, D, device=device, dtype=dtype).transpose(1, 2)
        got = attention(q, k, v, causal)
        torch.testing.assert_close(got, reference(q, k, v, causal), rtol=2e-2, atol=2e-2)
    # GQA (4 query heads on 2 KV heads) with the log-sum-exp, causal, 70 keys (one masked block)
    q = torch.randn(1, 4, 70, 64, device=device, dtype=torch.float16)
    k, v = (torch.randn(1, 2, 70, 64, device=device, dtype=torch.float16) for _ in range(2))
    got, lse = attention(q, k, v, True, return_lse=True)
    want = reference(q, k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1), True)
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(lse, reference_lse(q, k, v, True), rtol=1e-3, atol=1e-3)
    print(f"flash_attention: f16 (100 keys), bf16 causal (130 keys, K strided), GQA with LSE on {device} match torch")


if __name__ == "__main__":
    main()
