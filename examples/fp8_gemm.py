"""FP8 GEMM: out = (a @ b.T) scaled, e4m3 x e4m3 -> bf16 on the tensor cores, three scalings.

a (M x K) and b (N x K, the weights, K-major as `torch._scaled_mm` takes its second operand
transposed) are float8 e4m3; the dot is a float8 `tile.dot` (on sm_90a `wgmma.m64nNk32.f32.e4m3.e4m3`,
both operands copied K-major by TMA into shared rings; elsewhere widened to f16 exactly)
accumulated in f32, scaled, and stored as bf16:

- "tensor": one f32 scale for a and one for b, applied in the epilogue (`torch._scaled_mm`'s
  per-tensor scaling).
- "row": a scale per row of a (M x 1) and per row of b, that is per column of the output
  (1 x N), applied in the epilogue (`_scaled_mm`'s row-wise scaling).
- "block": DeepGEMM's fine-grained scaling: a scale per 1 x 128 block of a (M x K/128) and per
  128 x 128 block of b (N/128 x K/128); the K loop goes 128 at a time, each block's dot starts
  from zero and is promoted into the f32 accumulator with its two scales (the tensor cores'
  float8 accumulation keeps fewer bits than f32 over a long K; promotion every 128 bounds it).

Any M, N, K (tails masked; block scaling wants K whole blocks of 128 only for its scales'
shape, tails are masked too). A persistent grid (`programs=`, e.g. the SM count) loops over
the output tiles in grouped order; on sm_90a the next tile's first copies start before this
tile's epilogue (passes/next_tile_copies.py). One program per tile without it.
"""

import torch

import tile

BLOCK = 128  # the block scales' K block (and N block of b's)


@tile.func
def tile_coords(t, M, N, BM, BN, GROUP):
    """Output tile t's (row, column) in grouped order: GROUP rows of tiles swept column by column."""
    n_m = tile.cdiv(M, BM)
    n_n = tile.cdiv(N, BN)
    group = t // (GROUP * n_n)
    first_m = group * GROUP
    rows_in_group = tile.minimum(n_m - first_m, GROUP)
    return first_m + (t % (GROUP * n_n)) % rows_in_group, (t % (GROUP * n_n)) // rows_in_group


@tile.func
def output_tile(a, b, out, a_scale, b_scale, t, M, N, K, s_am, s_ak, s_bn, s_bk, s_om, s_on, s_as, s_bs,
                BM, BN, BK, GROUP, SCALING):
    pm, pn = tile_coords(t, M, N, BM, BN, GROUP)
    rm = pm * BM + tile.arange(0, BM)
    rn = pn * BN + tile.arange(0, BN)
    rk = tile.arange(0, BK)
    acc = tile.zeros((BM, BN), tile.float32)
    for k0 in range(0, K, BK):
        ka = k0 + rk
        x = tile.load(a + rm[:, None] * s_am + ka[None, :] * s_ak, mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        # b's block as K x N: a column-major block of b.T (K contiguous), copied K-major
        w = tile.load(b + ka[:, None] * s_bk + rn[None, :] * s_bn, mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        if SCALING == "block":  # BK == BLOCK: this step's dot, promoted with its blocks' scales
            sa = tile.load(a_scale + rm * s_as + k0 // BLOCK, mask=rm < M, other=0.0)
            sb = tile.load(b_scale + (rn // BLOCK) * s_bs + k0 // BLOCK, mask=rn < N, other=0.0)
            acc += tile.dot(x, w) * (sa[:, None] * sb[None, :])
        else:
            acc = tile.dot(x, w, acc)
    if SCALING == "tensor":
        acc = acc * (tile.load(a_scale) * tile.load(b_scale))
    if SCALING == "row":
        sa = tile.load(a_scale + rm, mask=rm < M, other=0.0)
        sb = tile.load(b_scale + rn, mask=rn < N, other=0.0)
        acc = acc * sa[:, None] * sb[None, :]
    tile.store(out + rm[:, None] * s_om + rn[None, :] * s_on, acc.to(tile.bfloat16),
               mask=(rm[:, None] < M) & (rn[None, :] < N))


@tile.kernel
def fp8_gemm_kernel(a, b, out, a_scale, b_scale, M, N, K, s_am, s_ak, s_bn, s_bk, s_om, s_on, s_as, s_bs,
                    BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr, GROUP: tile.constexpr,
                    SCALING: tile.constexpr):
    """One program per output tile."""
    output_tile(a, b, out, a_scale, b_scale, tile.program_id(0), M, N, K, s_am, s_ak, s_bn, s_bk, s_om, s_on, s_as,
                s_bs, BM, BN, BK, GROUP, SCALING)


@tile.kernel
def persistent_fp8_gemm_kernel(a, b, out, a_scale, b_scale, M, N, K, s_am, s_ak, s_bn, s_bk, s_om, s_on, s_as, s_bs,
                               BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr, GROUP: tile.constexpr,
                               SCALING: tile.constexpr):
    """A persistent grid: each program loops over output tiles (TMA rings live across them on sm_90a)."""
    for t in range(tile.program_id(0), tile.cdiv(M, BM) * tile.cdiv(N, BN), tile.num_programs(0)):
        output_tile(a, b, out, a_scale, b_scale, t, M, N, K, s_am, s_ak, s_bn, s_bk, s_om, s_on, s_as, s_bs,
                    BM, BN, BK, GROUP, SCALING)


# Tiles by scaling: 128 x 128 x 128 (K steps of 128 bytes: the 128-byte swizzle), 8 warps (two
# warpgroups of 64 x 128 wgmmas), 4 stages (three 32 KB steps in flight).
DEFAULTS = dict(BM=128, BN=128, BK=128, GROUP=8, num_warps=8, num_stages=4)


def fp8_gemm(a: torch.Tensor, b: torch.Tensor, a_scale: torch.Tensor, b_scale: torch.Tensor, scaling: str = "row",
             programs: int | None = None, out: torch.Tensor | None = None, **tiles) -> torch.Tensor:
    """(a @ b.T) scaled, as bf16. a: M x K e4m3, b: N x K e4m3. Scales (f32): "tensor" one element
    each; "row" a_scale M (or M x 1), b_scale N (or 1 x N); "block" a_scale M x ceil(K/128),
    b_scale ceil(N/128) x ceil(K/128). programs: a persistent grid of that many programs."""
    if scaling not in ("tensor", "row", "block"):
        raise ValueError(f"scaling is 'tensor', 'row' or 'block', got {scaling!r}")
    M, K = a.shape
    N, K2 = b.shape
    assert K == K2, f"inner dimensions differ: {K} and {K2}"
    opts = dict(DEFAULTS, **tiles)
    if scaling == "block":
        assert opts["BK"] == BLOCK, f"block scaling goes {BLOCK} along K a step, not BK={opts['BK']}"
        assert a_scale.shape == (M, tile.cdiv(K, BLOCK)) and b_scale.shape == (tile.cdiv(N, BLOCK), tile.cdiv(K, BLOCK))
        s_as, s_bs = a_scale.stride(0), b_scale.stride(0)
    else:
        a_scale, b_scale = a_scale.reshape(-1), b_scale.reshape(-1)
        s_as = s_bs = 0
    out = torch.empty((M, N), dtype=torch.bfloat16, device=a.device) if out is None else out
    tiles_total = tile.cdiv(M, opts["BM"]) * tile.cdiv(N, opts["BN"])
    kernel = fp8_gemm_kernel if programs is None else persistent_fp8_gemm_kernel
    kernel[(tiles_total if programs is None else min(programs, tiles_total), )](
        a, b, out, a_scale, b_scale, M, N, K, *a.stride(), *b.stride(), *out.stride(), s_as, s_bs,
        SCALING=scaling, **opts)
    return out


def quantize(x: torch.Tensor, scaling: str):
    """x (f32) as e4m3 and its f32 scales (x ~ q * scale), per tensor, per row, or per 1 x 128 block
    (weights: quantize_weight)."""
    top = 448.0  # e4m3's largest
    if scaling == "tensor":
        s = x.abs().amax().clamp(min=1e-12) / top
        return (x / s).to(torch.float8_e4m3fn), s.reshape(())
    if scaling == "row":
        s = x.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / top
        return (x / s).to(torch.float8_e4m3fn), s
    M, K = x.shape
    kb = tile.cdiv(K, BLOCK)
    padded = torch.nn.functional.pad(x, (0, kb * BLOCK - K)).reshape(M, kb, BLOCK)
    s = padded.abs().amax(dim=2).clamp(min=1e-12) / top
    q = (padded / s[:, :, None]).reshape(M, kb * BLOCK)[:, :K]
    return q.to(torch.float8_e4m3fn), s


def quantize_weight(w: torch.Tensor):
    """w (N x K, f32) as e4m3 with a scale per 128 x 128 block (DeepGEMM's weights)."""
    N, K = w.shape
    nb, kb = tile.cdiv(N, BLOCK), tile.cdiv(K, BLOCK)
    padded = torch.nn.functional.pad(w, (0, kb * BLOCK - K, 0, nb * BLOCK - N)).reshape(nb, BLOCK, kb, BLOCK)
    s = padded.abs().amax(dim=(1, 3)).clamp(min=1e-12) / 448.0
    q = (padded / s[:, None, :, None]).reshape(nb * BLOCK, kb * BLOCK)[:N, :K]
    return q.to(torch.float8_e4m3fn), s


def reference(a, b, a_scale, b_scale, scaling: str) -> torch.Tensor:
    """float64 of the dequantized operands' product (the block scales applied per element)."""
    a64, b64 = a.double(), b.double()
    if scaling == "block":
        M, K = a.shape
        N = b.shape[0]
        a64 = a64 * a_scale.double().repeat_interleave(BLOCK, dim=1)[:, :K]
        b64 = b64 * b_scale.double().repeat_interleave(BLOCK, dim=0).repeat_interleave(BLOCK, dim=1)[:N, :K]
        return a64 @ b64.T
    return (a64 @ b64.T) * a_scale.double().reshape(-1, 1) * b_scale.double().reshape(1, -1)


def scaled_mm(a, b, a_scale, b_scale, scaling: str):
    """torch._scaled_mm's per-tensor or row-wise product (b.T column-major, as it requires), or
    None where this torch or device has none for these operands."""
    if not hasattr(torch, "_scaled_mm") or scaling == "block":
        return None
    sa, sb = (a_scale.reshape(()), b_scale.reshape(())) if scaling == "tensor" else (
        a_scale.reshape(-1, 1), b_scale.reshape(1, -1))
    try:
        return torch._scaled_mm(a, b.T, scale_a=sa.float(), scale_b=sb.float(), out_dtype=torch.bfloat16)
    except (RuntimeError, NotImplementedError):
        return None


def check(M, N, K, scaling, device="cpu", **kwargs):
    """Random operands quantized as `scaling` wants, the kernel's output checked against float64
    (to bf16's rounding) and, where it runs, torch._scaled_mm. Returns whether _scaled_mm checked it."""
    x = torch.randn(M, K, device=device)
    w = torch.randn(N, K, device=device) / K ** 0.5
    a, sa = quantize(x, scaling)
    if scaling == "block":
        b, sb = quantize_weight(w)
    else:
        b, sb = quantize(w, scaling)
        sb = sb.reshape(-1)
    got = fp8_gemm(a, b, sa, sb, scaling, **kwargs)
    want = reference(a, b, sa, sb, scaling)
    torch.testing.assert_close(got.double(), want, rtol=2 ** -7, atol=1e-3 * want.abs().max().item())
    theirs = scaled_mm(a, b, sa, sb, scaling)
    if theirs is not None:
        torch.testing.assert_close(got, theirs, rtol=2 ** -7, atol=1e-3 * want.abs().max().item())
    return theirs is not None


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    small = dict(BM=64, BN=64, BK=128, num_warps=4, num_stages=2)
    cases = [((96, 80, 256), "tensor", small), ((70, 45, 200), "row", small), ((64, 128, 256), "row", small),
             ((100, 130, 300), "block", small), ((128, 256, 384), "block", dict(small, programs=3)),
             ((70, 90, 160), "tensor", dict(small, programs=2))]
    against = []
    for (M, N, K), scaling, kwargs in cases:
        if check(M, N, K, scaling, device, **kwargs):
            against.append(f"{scaling} {M}x{N}x{K}")
    print(f"fp8_gemm: per-tensor, row-wise and block scales on {device} match float64"
          f"{'; torch._scaled_mm too (' + ', '.join(against) + ')' if against else ''}")


if __name__ == "__main__":
    main()
