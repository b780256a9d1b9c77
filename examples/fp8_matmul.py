"""Weight-only FP8 matmul: out = a @ (w * scale), with w in float8 e4m3 (torch.float8_e4m3fn)
and a bf16/f16 scale per output column.

The kernel loads the weights as `tile.float8e4m3` tiles, one byte an element, and converts
them to a's dtype with `.to()`: exactly (an e4m3 value has four significant bits), two at a
time on a GPU (`cvt.rn.f16x2.e4m3x2`), by integer decode on the CPU. The converted tile
feeds an ordinary 16-bit `dot` (mma.sync / wgmma), as the INT4 example does; the weights'
loads run ahead of the dots through the K loop's shared-memory rings. The scale, one per
column, multiplies the accumulator once, after the loop.
"""

import torch

import tile


@tile.kernel
def fp8_matmul_kernel(a, w, scales, out, M, N, K, s_am, s_ak, s_wk, s_wn, s_om, s_on,
                      BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr):
    pm, pn = tile.program_id(0), tile.program_id(1)
    rm = pm * BM + tile.arange(0, BM)
    rn = pn * BN + tile.arange(0, BN)
    rk = tile.arange(0, BK)
    scale = tile.load(scales + rn, mask=rn < N, other=0.0).to(tile.float32)
    acc = tile.zeros((BM, BN), tile.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        x = tile.load(a + rm[:, None] * s_am + kk[None, :] * s_ak, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        wt = tile.load(w + kk[:, None] * s_wk + rn[None, :] * s_wn, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tile.dot(x, wt.to(x.dtype), acc)
    tile.store(out + rm[:, None] * s_om + rn[None, :] * s_on, acc * scale[None, :],
               mask=(rm[:, None] < M) & (rn[None, :] < N))


# Tiles and launch options by the rows of activations, the fastest of `benchmarks/decode_probe.py`'s
# configs at N = K = 8192 (H100, 2026-12-05): thin tiles with deep rings for decoding (M <= 16: the
# weights' bytes dominate, and more programs read them at once), wgmma-sized ones for prefill.
DECODE_TILES = dict(BM=16, BN=32, BK=256, num_warps=4, num_stages=3)
# (prefill 256x128x64 in 4 stages since 2026-12-06: with the decoded weights in slots of their own the wgmma
# stays in flight, 549-588 TFLOP/s against 525-534 at 128x256x64/4 and 448-462 at 128x128x64/3, H100; 571-586
# since the third slot, 07:25)
PREFILL_TILES = dict(BM=256, BN=128, BK=64, num_warps=8, num_stages=4)


def fp8_matmul(a: torch.Tensor, w: torch.Tensor, scales: torch.Tensor, BM: int | None = None, BN: int = 64,
               BK: int = 64, **options) -> torch.Tensor:
    """a (M, K) bf16/f16 @ (w (K, N) float8_e4m3fn or float8_e5m2 * scales (N,)), in a's dtype;
    `options` (num_warps, num_stages) go to the launch. Without BM, DECODE_TILES or PREFILL_TILES."""
    if w.dtype not in (torch.float8_e4m3fn, torch.float8_e5m2):
        raise TypeError(f"fp8_matmul: w must be torch.float8_e4m3fn or float8_e5m2, got {w.dtype}")
    M, K = a.shape
    if BM is None:
        options = {**(DECODE_TILES if M <= 16 else PREFILL_TILES), **options}
        BM, BN, BK = (options.pop(k) for k in ("BM", "BN", "BK"))
    N = w.shape[1]
    out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (tile.cdiv(M, BM), tile.cdiv(N, BN))
    fp8_matmul_kernel[grid](a, w, scales, out, M, N, K, *a.stride(), *w.stride(), *out.stride(),
                            BM=BM, BN=BN, BK=BK, **options)
    return out


def reference(a, w, scales):
    return (a.float() @ (w.float() * scales.float())).to(a.dtype)


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    for dtype, (M, N, K) in [(torch.bfloat16, (70, 96, 128)), (torch.float16, (33, 50, 100)), (torch.bfloat16, (8, 96, 512))]:
        a = torch.randn(M, K, device=device, dtype=dtype)
        # Every e4m3 byte value but NaN appears among the weights: subnormals, zero, -0, +-448.
        codes = torch.arange(256, dtype=torch.int32)
        codes = codes[(codes & 0x7F) != 0x7F].to(torch.uint8)
        pick = torch.randint(0, codes.numel(), (K, N))
        w = codes[pick].view(torch.float8_e4m3fn).to(device)
        scales = (torch.rand(N, device=device) * 0.01 + 0.001).to(dtype)
        got = fp8_matmul(a, w, scales)
        want = reference(a, w, scales)
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2 * K ** 0.5)
    # The conversion itself, exactly: a = I and unit scales give back every code (subnormals included)
    # as bf16, for e4m3 and for e5m2 (all but its infinities and NaNs, exponent 31).
    eye = torch.eye(256, device=device, dtype=torch.bfloat16)
    ones = torch.ones(16, device=device, dtype=torch.bfloat16)
    every = torch.arange(256, dtype=torch.int32)
    for fmt, finite in ((torch.float8_e4m3fn, codes), (torch.float8_e5m2, every[(every & 0x7C) != 0x7C].to(torch.uint8))):
        w = finite[torch.arange(256 * 16) % finite.numel()].view(fmt).reshape(256, 16).to(device)
        torch.testing.assert_close(fp8_matmul(eye, w, ones), w.to(torch.bfloat16), rtol=0, atol=0)
    # Column-major weights (a transposed view), read through their strides.
    wt = codes[torch.randint(0, codes.numel(), (96, 128))].view(torch.float8_e4m3fn).to(device).t()
    a = torch.randn(40, 128, device=device, dtype=torch.bfloat16)
    s = torch.full((96,), 0.005, device=device, dtype=torch.bfloat16)
    torch.testing.assert_close(fp8_matmul(a, wt, s), reference(a, wt, s), rtol=2e-2, atol=2e-2 * 128 ** 0.5)
    print(f"fp8_matmul: bf16 (70x96x128), f16 (33x50x100), bf16 decode-shaped (8x96x512), every e4m3 and finite e5m2 code converted exactly, and column-major "
          f"weights (40x96x128) on {device} match torch")


if __name__ == "__main__":
    main()
