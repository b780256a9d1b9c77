"""PagedAttention decode: one new query per (sequence, head) attends to that
sequence's keys and values, which live in fixed-size pages of a shared cache
(vLLM's layout idea): `block_tables[b, i]` is the cache page holding the
sequence's tokens i*PAGE .. i*PAGE + PAGE - 1, and `seq_lens[b]` its length.

One program per (sequence, head) walks the pages its table lists (a scalar load
per page: the pointer chasing of paged attention), reads each page's keys and
values as PAGE x D tiles through the cache's strides, and keeps an online
softmax (running maximum and sum, the accumulator rescaled as the maximum
grows). With one query the scores are a matrix-vector product: elementwise
products summed along D, no tensor cores.
"""

import math

import torch

import tile


@tile.kernel
def paged_attention_kernel(q, k_cache, v_cache, block_tables, seq_lens, out, scale, H,
                           s_qb, s_qh, s_qd, s_cn, s_cp, s_ch, s_cd, s_tb, s_ob, s_oh, s_od,
                           PAGE: tile.constexpr, D: tile.constexpr, STAGES: tile.constexpr):
    bh = tile.program_id(0)
    b, h = bh // H, bh % H
    rd = tile.arange(0, D)
    rp = tile.arange(0, PAGE)
    qv = tile.load(q + b * s_qb + h * s_qh + rd * s_qd).to(tile.float32)
    seq_len = tile.load(seq_lens + b)
    m = tile.full((), float("-inf"), tile.float32)  # run-time scalars: the loop updates them
    l_sum = tile.zeros((), tile.float32)
    acc = tile.zeros((D,), tile.float32)
    # The pages' loads run STAGES - 1 pages ahead, through shared-memory rings.
    for i in tile.range(0, tile.cdiv(seq_len, PAGE), num_stages=STAGES):
        page = tile.load(block_tables + b * s_tb + i)
        valid = i * PAGE + rp < seq_len
        at = page * s_cn + rp[:, None] * s_cp + h * s_ch + rd[None, :] * s_cd
        kp = tile.load(k_cache + at, mask=valid[:, None], other=0.0).to(tile.float32)
        s = tile.where(valid, tile.sum(kp * qv[None, :], axis=1) * scale, float("-inf"))
        m_new = tile.maximum(m, tile.max(s, axis=0))
        p = tile.exp(s - m_new)
        alpha = tile.exp(m - m_new)
        l_sum = l_sum * alpha + tile.sum(p, axis=0)
        vp = tile.load(v_cache + at, mask=valid[:, None], other=0.0).to(tile.float32)
        acc = acc * alpha + tile.sum(p[:, None] * vp, axis=0)
        m = m_new
    tile.store(out + b * s_ob + h * s_oh + rd * s_od, acc / l_sum)


def paged_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, block_tables: torch.Tensor,
                    seq_lens: torch.Tensor, stages: int = 2) -> torch.Tensor:
    """q (B, H, D); caches (pages, PAGE, H, D), both with the same strides; block_tables (B, max pages)
    and seq_lens (B,) int32. Returns (B, H, D) in q's dtype. `stages`: the page loop's pipelining depth."""
    B, H, D = q.shape
    PAGE = k_cache.shape[1]
    assert k_cache.stride() == v_cache.stride(), "the key and value caches must share their layout"
    out = torch.empty_like(q)
    paged_attention_kernel[(B * H,)](q, k_cache, v_cache, block_tables, seq_lens, out, 1.0 / math.sqrt(D), H,
                                     *q.stride(), *k_cache.stride(), block_tables.stride(0), *out.stride(),
                                     PAGE=PAGE, D=D, STAGES=stages)
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
    for dtype, stages in ((torch.float16, 1), (torch.bfloat16, 3)):  # (3: two pages ahead, on a GPU)
        q = torch.randn(B, H, D, device=device, dtype=dtype)
        k_cache, v_cache = (torch.randn(pages, PAGE, H, D, device=device, dtype=dtype) for _ in range(2))
        got = paged_attention(q, k_cache, v_cache, block_tables, seq_lens, stages)
        torch.testing.assert_close(got, reference(q, k_cache, v_cache, block_tables, seq_lens), rtol=2e-2, atol=2e-2)
    print(f"paged_attention: {B} sequences of {seq_lens.tolist()} tokens in {PAGE}-token pages, f16, and bf16 "
          f"with the page loop in 3 stages, on {device} match torch")


if __name__ == "__main__":
    main()
