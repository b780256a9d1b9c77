"""Split-K matmul: out += a[:, ks] @ b[ks, :] for each of SPLITS slices ks of K, the slices'
partial products added into an f32 `out` with `tile.atomic_add`.

For a short, wide-K problem (M x N too small to fill the GPU with output tiles, K large),
a grid of (tiles, SPLITS) programs keeps every SM busy; each program reduces its own slice
of K and adds its f32 tile into the output, element by element, atomically (PTX
`atom.global.add.f32`). The order of the additions varies from run to run, so the result
does too, in its last bits, as with Triton's split-K kernels.
"""

import torch

import tile


@tile.kernel
def split_k_matmul_kernel(a, b, out, M, N, K, s_am, s_ak, s_bk, s_bn, s_om, s_on,
                          BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr, SPLITS: tile.constexpr):
    pm, pn, ps = tile.program_id(0), tile.program_id(1), tile.program_id(2)
    rm = pm * BM + tile.arange(0, BM)
    rn = pn * BN + tile.arange(0, BN)
    rk = tile.arange(0, BK)
    acc = tile.zeros((BM, BN), tile.float32)
    # slice ps: the K steps ps, ps + SPLITS, ... (every slice the same share of a ragged K)
    for k0 in range(ps * BK, K, SPLITS * BK):
        kk = k0 + rk
        x = tile.load(a + rm[:, None] * s_am + kk[None, :] * s_ak, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        y = tile.load(b + kk[:, None] * s_bk + rn[None, :] * s_bn, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tile.dot(x, y, acc)
    tile.atomic_add(out + rm[:, None] * s_om + rn[None, :] * s_on, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def split_k_matmul(a: torch.Tensor, b: torch.Tensor, splits: int = 4, BM: int = 64, BN: int = 64, BK: int = 64,
                   **options) -> torch.Tensor:
    """a (M, K) @ b (K, N), f16/bf16, as an f32 (M, N) tensor summed over `splits` slices of K."""
    M, K = a.shape
    N = b.shape[1]
    out = torch.zeros((M, N), dtype=torch.float32, device=a.device)
    grid = (tile.cdiv(M, BM), tile.cdiv(N, BN), splits)
    split_k_matmul_kernel[grid](a, b, out, M, N, K, *a.stride(), *b.stride(), *out.stride(),
                                BM=BM, BN=BN, BK=BK, SPLITS=splits, **options)
    return out


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    cases = [(torch.bfloat16, (64, 128, 4096), 8), (torch.float16, (50, 70, 1000), 3)]
    for dtype, (M, N, K), splits in cases:
        a = torch.randn(M, K, device=device, dtype=dtype)
        b = torch.randn(K, N, device=device, dtype=dtype)
        want = a.float() @ b.float()
        torch.testing.assert_close(split_k_matmul(a, b, splits), want, rtol=1e-3, atol=1e-3 * K ** 0.5)
    # 128 x 128 tiles in 8 warps: on sm_90a a wgmma accumulator, added from a blocked copy of it
    a = torch.randn(256, 2048, device=device, dtype=torch.bfloat16)
    b = torch.randn(2048, 256, device=device, dtype=torch.bfloat16)
    torch.testing.assert_close(split_k_matmul(a, b, 4, BM=128, BN=128, num_warps=8), a.float() @ b.float(),
                               rtol=1e-3, atol=1e-3 * 2048 ** 0.5)
    print(f"split_k_matmul: bf16 64x128x4096 in 8 slices, f16 50x70x1000 in 3, bf16 256x256x2048 in 4 "
          f"(128x128 tiles) on {device} match torch")


if __name__ == "__main__":
    main()
