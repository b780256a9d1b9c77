"""Weight-only INT4 matmul: out = a @ dequant(w), with w's 4-bit values packed two to a
byte and a bf16/f16 scale per group of G rows of K and column, dequantized in the kernel.

Packing (`pack_int4`): byte (r, n) of the (K/2, N) int8 matrix holds w[r, n] in its low
nibble and w[K/2 + r, n] in its high one, each as an unsigned value with 8 added (so
-8..7 is stored as 0..15; the kernel masks the nibbles out of the sign-extended byte).
The kernel splits the sum over k into its two halves: a[:, :K/2] against the low
nibbles, a[:, K/2:] against the high ones, two dots into one f32 accumulator. Each
K step reads two runs of a's columns, contiguous (16-byte copies), where splitting
into even and odd k read them through a doubled stride, one element at a time.

A K step lies within one group of each half (BK divides G, and G divides K/2), so
its scales are two rows of BN, (1, BN) tiles that broadcast over the step's rows:
one scale read per column and group, not per weight.
"""

import torch

import tile


@tile.kernel
def int4_matmul_kernel(a, w, scales, out, M, N, K, KH, NG, s_am, s_ak, s_wk, s_wn, s_sg, s_sn, s_om, s_on,
                       BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr, G: tile.constexpr):
    # KH = K / 2 (w's rows), NG = K / G (scales' rows): each load below is a block of its
    # tensor masked at that tensor's bounds, so that on sm_90a all of them go by TMA.
    pm, pn = tile.program_id(0), tile.program_id(1)
    rm = pm * BM + tile.arange(0, BM)
    rn = pn * BN + tile.arange(0, BN)
    rk = tile.arange(0, BK)  # packed rows of one K step: k = k0 + rk and KH + k0 + rk
    r1 = tile.arange(0, 1)
    acc = tile.zeros((BM, BN), tile.float32)
    for k0 in range(0, KH, BK):
        kr = k0 + rk
        packed = tile.load(w + kr[:, None] * s_wk + rn[None, :] * s_wn, mask=(kr[:, None] < KH) & (rn[None, :] < N),
                           other=0).to(tile.int32)
        # the group of rows k0.. and of rows KH + k0.., one row of scales each
        g_lo = k0 // G + r1
        g_hi = (k0 // G + NG // 2) + r1  # (KH + k0) / G: G divides KH
        s_lo = tile.load(scales + g_lo[:, None] * s_sg + rn[None, :] * s_sn,
                         mask=(g_lo[:, None] < NG) & (rn[None, :] < N), other=0.0)
        s_hi = tile.load(scales + g_hi[:, None] * s_sg + rn[None, :] * s_sn,
                         mask=(g_hi[:, None] < NG) & (rn[None, :] < N), other=0.0)
        kh = (KH + k0) + rk
        a_lo = tile.load(a + rm[:, None] * s_am + kr[None, :] * s_ak, mask=(rm[:, None] < M) & (kr[None, :] < KH),
                         other=0.0)
        a_hi = tile.load(a + rm[:, None] * s_am + kh[None, :] * s_ak, mask=(rm[:, None] < M) & (kh[None, :] < K),
                         other=0.0)
        # -8..7 and the scale are exact in a_lo's dtype, so one multiply there rounds once,
        # as a product in f32 would: two lanes a bf16x2/f16x2 instruction, half the work
        lo = ((packed & 15) - 8).to(a_lo.dtype) * s_lo
        hi = (((packed >> 4) & 15) - 8).to(a_lo.dtype) * s_hi
        acc = tile.dot(a_hi, hi, tile.dot(a_lo, lo, acc))
    tile.store(out + rm[:, None] * s_om + rn[None, :] * s_on, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def pack_int4(q: torch.Tensor) -> torch.Tensor:
    """(K, N) integers in -8..7, K even -> (K/2, N) int8 bytes, rows r / K/2 + r in the low / high nibble."""
    u = (q.to(torch.int16) + 8).to(torch.uint8)
    half = q.shape[0] // 2
    return (u[:half] | (u[half:] << 4)).view(torch.int8)


# Tiles and launch options by the rows of activations, the fastest of `benchmarks/decode_probe.py`'s
# configs at N = K = 8192 (H100, 2026-12-05): thin tiles with deep rings for decoding (M <= 16: the
# weights' bytes dominate, and more programs read them at once), wgmma-sized ones for prefill.
DECODE_TILES = dict(BM=16, BN=64, BK=128, num_warps=4, num_stages=4)  # 1.29-1.30x torch, 2026-12-06 03:20, H100
# (prefill: 256x128x32 at 4 stages 481-485 TFLOP/s, 0.64x torch: each decoded weight tile serves 256 rows of
# activations, every load goes by TMA, and at 4 stages the two dots stay in flight; 256x128x64 at 2 stages
# 441-445, 128x128x64 at 4 stages 375-377; 2026-12-06 05:29, H100)
PREFILL_TILES = dict(BM=256, BN=128, BK=32, num_warps=8, num_stages=4)


def int4_matmul(a: torch.Tensor, w_packed: torch.Tensor, scales: torch.Tensor, group: int,
                BM: int | None = None, BN: int = 64, BK: int = 64, **options) -> torch.Tensor:
    """a (M, K) bf16/f16 @ dequant(w_packed (K/2, N), scales (K/group, N)); `options`
    (num_warps, num_stages) go to the launch. Without BM, DECODE_TILES or PREFILL_TILES."""
    M, K = a.shape
    if BM is None:
        options = {**(DECODE_TILES if M <= 16 else PREFILL_TILES), **options}
        BM, BN, BK = (options.pop(k) for k in ("BM", "BN", "BK"))
    BK = min(BK, group)  # a K step within one group
    N = w_packed.shape[1]
    if w_packed.shape[0] * 2 != K or (K // 2) % group or group % BK:
        raise ValueError(f"int4_matmul: K = {K} needs w_packed of K/2 rows (got {w_packed.shape[0]}), K/2 a multiple "
                         f"of the group ({group}), and the group a multiple of BK ({BK})")
    out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (tile.cdiv(M, BM), tile.cdiv(N, BN))
    int4_matmul_kernel[grid](a, w_packed, scales, out, M, N, K, K // 2, K // group, *a.stride(), *w_packed.stride(),
                             *scales.stride(), *out.stride(), BM=BM, BN=BN, BK=BK, G=group, **options)
    return out


def reference(a, q, scales, group):
    w = q.float() * scales.float().repeat_interleave(group, dim=0)
    return (a.float() @ w).to(a.dtype)


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    for dtype, (M, N, K), group in [(torch.bfloat16, (70, 96, 128), 32), (torch.float16, (33, 50, 96), 16),
                                    (torch.bfloat16, (8, 96, 512), 128)]:
        a = torch.randn(M, K, device=device, dtype=dtype)
        q = torch.randint(-8, 8, (K, N), device=device, dtype=torch.int8)
        scales = (torch.rand(K // group, N, device=device) * 0.1 + 0.01).to(dtype)
        got = int4_matmul(a, pack_int4(q), scales, group)
        want = reference(a, q, scales, group)
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2 * K ** 0.5)
    print(f"int4_matmul: bf16 (70x96x128, groups of 32), f16 (33x50x96, groups of 16) and bf16 decode-shaped "
          f"(8x96x512, groups of 128) on {device} match torch")


if __name__ == "__main__":
    main()
