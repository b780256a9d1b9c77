"""Weight-only INT4 matmul: out = a @ dequant(w), with w's 4-bit values packed two to a
byte and a bf16/f16 scale per group of G rows of K and column, dequantized in the kernel.

Packing (`pack_int4`): byte (r, n) of the (K/2, N) int8 matrix holds w[2r, n] in its low
nibble and w[2r + 1, n] in its high one, each as an unsigned value with 8 added (so
-8..7 is stored as 0..15; the kernel masks the nibbles out of the sign-extended byte). The kernel splits the sum over k into its even and odd
terms: a[:, 0::2] (columns read through a doubled stride) against the low nibbles,
a[:, 1::2] against the high ones, two dots into one f32 accumulator, with no
interleaving of rows inside a tile.
"""

import torch

import tile


@tile.kernel
def int4_matmul_kernel(a, w, scales, out, M, N, K, s_am, s_ak, s_wk, s_wn, s_sg, s_sn, s_om, s_on,
                       BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr, G: tile.constexpr):
    pm, pn = tile.program_id(0), tile.program_id(1)
    rm = pm * BM + tile.arange(0, BM)
    rn = pn * BN + tile.arange(0, BN)
    rk = tile.arange(0, BK // 2)  # packed rows of one K step: k = k0 + 2 * rk (+ 1)
    acc = tile.zeros((BM, BN), tile.float32)
    for k0 in range(0, K, BK):
        kr = k0 // 2 + rk
        packed = tile.load(w + kr[:, None] * s_wk + rn[None, :] * s_wn, mask=(kr[:, None] < K // 2) & (rn[None, :] < N),
                           other=0).to(tile.int32)
        # the group of rows 2 * kr and 2 * kr + 1 (G even: both in one group)
        scale = tile.load(scales + (2 * kr[:, None] // G) * s_sg + rn[None, :] * s_sn,
                          mask=(kr[:, None] < K // 2) & (rn[None, :] < N), other=0.0).to(tile.float32)
        a_mask = (rm[:, None] < M) & (2 * kr[None, :] < K)
        a_even = tile.load(a + rm[:, None] * s_am + (2 * kr[None, :]) * s_ak, mask=a_mask, other=0.0)
        a_odd = tile.load(a + rm[:, None] * s_am + (2 * kr[None, :] + 1) * s_ak, mask=a_mask, other=0.0)
        lo = (((packed & 15) - 8).to(tile.float32) * scale).to(a_even.dtype)
        hi = ((((packed >> 4) & 15) - 8).to(tile.float32) * scale).to(a_even.dtype)
        acc = tile.dot(a_odd, hi, tile.dot(a_even, lo, acc))
    tile.store(out + rm[:, None] * s_om + rn[None, :] * s_on, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def pack_int4(q: torch.Tensor) -> torch.Tensor:
    """(K, N) integers in -8..7, K even -> (K/2, N) int8 bytes, rows 2r / 2r+1 in the low / high nibble."""
    u = (q.to(torch.int16) + 8).to(torch.uint8)
    return (u[0::2] | (u[1::2] << 4)).view(torch.int8)


def int4_matmul(a: torch.Tensor, w_packed: torch.Tensor, scales: torch.Tensor, group: int,
                BM: int = 64, BN: int = 64, BK: int = 64) -> torch.Tensor:
    M, K = a.shape
    N = w_packed.shape[1]
    assert w_packed.shape[0] * 2 == K and K % group == 0 and group % 2 == 0 and BK % 2 == 0
    out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (tile.cdiv(M, BM), tile.cdiv(N, BN))
    int4_matmul_kernel[grid](a, w_packed, scales, out, M, N, K, *a.stride(), *w_packed.stride(), *scales.stride(),
                             *out.stride(), BM=BM, BN=BN, BK=BK, G=group)
    return out


def reference(a, q, scales, group):
    w = q.float() * scales.float().repeat_interleave(group, dim=0)
    return (a.float() @ w).to(a.dtype)


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    for dtype, (M, N, K), group in [(torch.bfloat16, (70, 96, 128), 32), (torch.float16, (33, 50, 96), 16)]:
        a = torch.randn(M, K, device=device, dtype=dtype)
        q = torch.randint(-8, 8, (K, N), device=device, dtype=torch.int8)
        scales = (torch.rand(K // group, N, device=device) * 0.1 + 0.01).to(dtype)
        got = int4_matmul(a, pack_int4(q), scales, group)
        want = reference(a, q, scales, group)
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2 * K ** 0.5)
    print(f"int4_matmul: bf16 (70x96x128, groups of 32) and f16 (33x50x96, groups of 16) on {device} match torch")


if __name__ == "__main__":
    main()
