"""PagedAttention decode: one new query per (sequence, head) attends to that
sequence's keys and values, which live in fixed-size pages of a shared cache
(vLLM's layout idea): `block_tables[b, i]` is the cache page holding the
sequence's tokens i*PAGE .. i*PAGE + PAGE - 1, and `seq_lens[b]` its length.

A program per (sequence, head, split) walks its share of the sequence BLOCK_N
tokens a step: it looks up each token's page in the table (the pointer chasing
of paged attention; PAGE tokens share an entry), reads the step's keys and values
as BLOCK_N x D tiles gathered through the cache's strides, both before any
reduction so that they are in flight together, and keeps an online softmax
(running maximum and sum, the accumulator rescaled as the maximum grows). With
one query the scores are a matrix-vector product: elementwise products summed
along D, no tensor cores. A step of several pages matters: a page a step (16
tokens) reached 71% of the H100's copy rate, where 128 tokens reach all of it
(benchmarks/results/README.md, 2026-12-05 12:21).

Decoding has few (sequence, head) pairs and long sequences, so one program each
can leave the GPU's memory system idle; splitting each sequence's steps among
SPLITS programs (flash-decoding) multiplies the loads in flight. Each split then
writes its maximum, sum and unnormalized output, and a second kernel combines
the splits, rescaling each by exp(its maximum - the overall maximum).
"""

import math

import torch

import tile


@tile.kernel
def paged_attention_kernel(q, k_cache, v_cache, block_tables, seq_lens, out, part_acc, part_ml, scale, H, per_split,
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
    m = tile.full((), float("-inf"), tile.float32)  # run-time scalars: the loop updates them
    l_sum = tile.zeros((), tile.float32)
    acc = tile.zeros((D,), tile.float32)
    first = split * per_split
    last = tile.minimum(first + per_split, tile.cdiv(seq_len, BLOCK_N))
    # Each step reads BLOCK_N tokens (BLOCK_N / PAGE pages: a table entry per token, the
    # same address PAGE times over, from the cache); STAGES - 1 steps ahead, through rings.
    for i in tile.range(first, last, num_stages=STAGES):
        t = i * BLOCK_N + rn
        valid = t < seq_len
        page = tile.load(block_tables + b * s_tb + t // PAGE, mask=valid, other=0)
        at = page[:, None] * s_cn + (t % PAGE)[:, None] * s_cp + h * s_ch + rd[None, :] * s_cd
        # both loads before the reductions: a step's keys and values in flight together
        kp = tile.load(k_cache + at, mask=valid[:, None], other=0.0).to(tile.float32)
        vp = tile.load(v_cache + at, mask=valid[:, None], other=0.0).to(tile.float32)
        s = tile.where(valid, tile.sum(kp * qv[None, :], axis=1) * scale, float("-inf"))
        m_new = tile.maximum(m, tile.max(s, axis=0))
        p = tile.exp(s - m_new)
        alpha = tile.exp(m - m_new)
        l_sum = l_sum * alpha + tile.sum(p, axis=0)
        acc = acc * alpha + tile.sum(p[:, None] * vp, axis=0)
        m = m_new
    if SPLITS == 1:
        tile.store(out + b * s_ob + h * s_oh + rd * s_od, acc / l_sum)
    else:  # a split past the sequence's end leaves m = -inf, l = 0: it weighs nothing in the combine
        at = bh * SPLITS + split
        tile.store(part_acc + at * D + rd, acc)
        tile.store(part_ml + at * 2, m)
        tile.store(part_ml + at * 2 + 1, l_sum)


@tile.kernel
def combine_splits_kernel(part_acc, part_ml, out, H, s_ob, s_oh, s_od, D: tile.constexpr, SPLITS: tile.constexpr):
    bh = tile.program_id(0)
    rs = tile.arange(0, SPLITS)
    rd = tile.arange(0, D)
    at = bh * SPLITS + rs
    m = tile.load(part_ml + at * 2)
    weight = tile.exp(m - tile.max(m, axis=0))
    l_sum = tile.sum(weight * tile.load(part_ml + at * 2 + 1), axis=0)
    acc = tile.sum(weight[:, None] * tile.load(part_acc + at[:, None] * D + rd[None, :]), axis=0)
    tile.store(out + bh // H * s_ob + bh % H * s_oh + rd * s_od, acc / l_sum)


def default_config(row_bytes: int) -> tuple[int, int, int]:
    """(tokens a step, num_warps, stages) by the bytes of a key's row, the best measured on the
    H100 (benchmarks/results/README.md, 2026-12-05 12:21 and 13:12): rows of 256 bytes or more
    (D = 128 in 16 bits: a row a warp, the scores' statistics in registers), 128 tokens on 8
    warps in 1 stage, 99-100% of copy; shorter rows, 64 tokens on 4 warps in 2 stages, 93%."""
    return (128, 8, 1) if row_bytes >= 256 else (64, 4, 2)


def default_splits(programs: int, steps: int) -> int:
    """Splits enough for about 4096 programs (a few dozen an SM), each of at least 16 steps."""
    splits = 1
    while splits < 16 and programs * splits < 4096 and steps >= 32 * splits:
        splits *= 2
    return splits


def paged_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, block_tables: torch.Tensor,
                    seq_lens: torch.Tensor, stages: int | None = None, splits: int | None = None,
                    block_n: int | None = None, num_warps: int | None = None) -> torch.Tensor:
    """q (B, H, D); caches (pages, PAGE, H, D), both with the same strides; block_tables (B, max pages)
    and seq_lens (B,) int32. Returns (B, H, D) in q's dtype. `stages`: the token loop's pipelining depth;
    `splits` (a power of two): programs per (sequence, head), each over a share of the tokens; `block_n`
    (a power of two, a multiple of the page): tokens a step. What is not given, `default_config` and
    `default_splits` choose."""
    B, H, D = q.shape
    PAGE = k_cache.shape[1]
    assert k_cache.stride() == v_cache.stride(), "the key and value caches must share their layout"
    tokens, warps, depth = default_config(D * k_cache.element_size())
    block_n = max(tokens, PAGE) if block_n is None else block_n
    num_warps = warps if num_warps is None else num_warps
    stages = depth if stages is None else stages
    assert block_n % PAGE == 0, f"block_n ({block_n}) must be a multiple of the page ({PAGE} tokens)"
    steps = -(-block_tables.shape[1] * PAGE // block_n)
    splits = default_splits(B * H, steps) if splits is None else splits
    assert splits > 0 and splits & (splits - 1) == 0, f"splits must be a power of two, got {splits}"
    out = torch.empty_like(q)
    part_acc = torch.empty(B * H * splits * D if splits > 1 else 1, dtype=torch.float32, device=q.device)
    part_ml = torch.empty(B * H * splits * 2 if splits > 1 else 1, dtype=torch.float32, device=q.device)
    paged_attention_kernel[(B * H, splits)](q, k_cache, v_cache, block_tables, seq_lens, out, part_acc, part_ml,
                                            1.0 / math.sqrt(D), H, -(-steps // splits),
                                            *q.stride(), *k_cache.stride(), block_tables.stride(0), *out.stride(),
                                            PAGE=PAGE, D=D, BLOCK_N=block_n, STAGES=stages, SPLITS=splits,
                                            num_warps=num_warps)
    if splits > 1:
        combine_splits_kernel[(B * H,)](part_acc, part_ml, out, H, *out.stride(), D=D, SPLITS=splits)
    return out


def reference(q, k_cache, v_cache, block_tables, seq_lens):
    out = torch.empty_like(q)
    for b in range(q.shape[0]):
        n = int(seq_lens[b])
        pages = block_tables[b, : -(-n // k_cache.shape[1])].long()
        k = k_cache[pages].flatten(0, 1)[:n].float()  # (n, H, D)
        v = v_cache[pages].flatten(0, 1)[:n].float()
        scores = torch.einsum("hd,nhd->hn", q[b].float(), k) / math.sqrt(q.shape[-1])
        out[b] = torch.einsum("hn,nhd->hd", scores.softmax(-1), v).to(q.dtype)
    return out


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    B, H, D, PAGE, pages = 3, 4, 64, 16, 40
    seq_lens = torch.tensor([1, 77, 130], dtype=torch.int32, device=device)  # a page and a bit, ragged tails
    block_tables = torch.randperm(pages, device=device)[: B * 12].view(B, 12).to(torch.int32)  # scattered pages
    # a page a step in 3 stages (two pages ahead, on a GPU); two pages a step in 4 splits of two steps (the
    # first sequence's last three splits are empty); the default step (64 tokens: every sequence's last ragged)
    for dtype, stages, splits, block_n in ((torch.bfloat16, 3, 1, 16), (torch.float16, 2, 4, 32),
                                           (torch.float16, 1, 1, None)):
        q = torch.randn(B, H, D, device=device, dtype=dtype)
        k_cache, v_cache = (torch.randn(pages, PAGE, H, D, device=device, dtype=dtype) for _ in range(2))
        got = paged_attention(q, k_cache, v_cache, block_tables, seq_lens, stages, splits, block_n)
        torch.testing.assert_close(got, reference(q, k_cache, v_cache, block_tables, seq_lens), rtol=2e-2, atol=2e-2)
    print(f"paged_attention: {B} sequences of {seq_lens.tolist()} tokens in {PAGE}-token pages, bf16 a page a step "
          f"in 3 stages, f16 two pages a step in 4 splits, f16 at the default step, on {device} match torch")


if __name__ == "__main__":
    main()
