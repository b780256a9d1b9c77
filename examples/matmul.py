"""Matmul with a fused epilogue: out = gelu(a @ b + bias), in one kernel.

Any M, N, K (tails are masked), inputs in any layout given by their strides
(row- or column-major), f32 accumulation of f16/bf16/f32 inputs (f32 exactly,
or on the tensor cores as tf32 with `input_precision="tf32"`), grouped program
order so that neighbouring programs share tiles of `a` in L2. One program per
output tile, or a persistent grid (`programs=`, e.g. the SM count) of programs
that loop over the tiles (on sm_90a the next tile's first operand copies then
start before this tile's epilogue, passes/next_tile_copies.py, and the output
tiles go by TMA stores that write while the next tile runs, passes/tile_tma_stores.py).
"""

import math

import torch

import tile


@tile.func
def gelu(x):
    # tanh approximation, as torch.nn.functional.gelu(approximate="tanh"): 0.5 x (1 + tanh(u)),
    # u = sqrt(2/pi) (x + 0.044715 x^3), written as h + h tanh(u), h = x / 2, and
    # u = x (sqrt(2/pi) + 0.044715 sqrt(2/pi) x^2): three multiplies and two fmas an element.
    h = 0.5 * x
    u = x * (0.7978845608028654 + 0.035677408136300125 * (x * x))
    return h + h * tile.tanh(u)


@tile.func
def output_tile(a, b, bias, out, t, M, N, K, s_am, s_ak, s_bk, s_bn, s_om, s_on, BM, BN, BK, GROUP, ACTIVATION,
                PRECISION, WARP_SPECIALIZE):
    """Output tile number t: act(a @ b + bias) over its BM x BN block of `out`."""
    n_m = tile.cdiv(M, BM)
    n_n = tile.cdiv(N, BN)
    # Grouped order: GROUP rows of tiles are swept column by column.
    group = t // (GROUP * n_n)
    first_m = group * GROUP
    rows_in_group = tile.minimum(n_m - first_m, GROUP)
    pm = first_m + (t % (GROUP * n_n)) % rows_in_group
    pn = (t % (GROUP * n_n)) // rows_in_group
    rm = pm * BM + tile.arange(0, BM)
    rn = pn * BN + tile.arange(0, BN)
    rk = tile.arange(0, BK)
    # The bias is loaded before the K loop, so that its latency hides behind the loop's.
    bias_row = tile.load(bias + rn, mask=rn < N).to(tile.float32)
    acc = tile.zeros((BM, BN), tile.float32)
    # warp_specialize (sm_90a, TMA rings): a producer warpgroup issues the copies, the kernel's warps compute
    for k0 in tile.range(0, K, BK, warp_specialize=WARP_SPECIALIZE):
        ka = k0 + rk
        a_tile = tile.load(a + rm[:, None] * s_am + ka[None, :] * s_ak, mask=(rm[:, None] < M) & (ka[None, :] < K))
        b_tile = tile.load(b + ka[:, None] * s_bk + rn[None, :] * s_bn, mask=(ka[:, None] < K) & (rn[None, :] < N))
        acc = tile.dot(a_tile, b_tile, acc, input_precision=PRECISION)
    acc = acc + bias_row[None, :]
    if ACTIVATION == "gelu":
        acc = gelu(acc)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile.store(out + rm[:, None] * s_om + rn[None, :] * s_on, acc, mask=mask)


@tile.kernel
def matmul_kernel(a, b, bias, out, M, N, K, s_am, s_ak, s_bk, s_bn, s_om, s_on,
                  BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr, GROUP: tile.constexpr,
                  ACTIVATION: tile.constexpr, PRECISION: tile.constexpr = "ieee", WARP_SPECIALIZE: tile.constexpr = False):
    """One program per output tile."""
    output_tile(a, b, bias, out, tile.program_id(0), M, N, K, s_am, s_ak, s_bk, s_bn, s_om, s_on, BM, BN, BK, GROUP,
                ACTIVATION, PRECISION, WARP_SPECIALIZE)


@tile.kernel
def persistent_matmul_kernel(a, b, bias, out, M, N, K, s_am, s_ak, s_bk, s_bn, s_om, s_on,
                             BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr, GROUP: tile.constexpr,
                             ACTIVATION: tile.constexpr, PRECISION: tile.constexpr = "ieee",
                             WARP_SPECIALIZE: tile.constexpr = False):
    """A persistent grid: a few programs (one per SM) each loop over output tiles, so a
    program's next tile starts without a new launch of its block (its K loop, nested in
    that one, is not warp-specialized: WARP_SPECIALIZE only warns)."""
    for t in range(tile.program_id(0), tile.cdiv(M, BM) * tile.cdiv(N, BN), tile.num_programs(0)):
        output_tile(a, b, bias, out, t, M, N, K, s_am, s_ak, s_bk, s_bn, s_om, s_on, BM, BN, BK, GROUP, ACTIVATION,
                    PRECISION, WARP_SPECIALIZE)


def matmul(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor, activation: str = "gelu",
           BM: int = 32, BN: int = 32, BK: int = 16, GROUP: int = 4, input_precision: str = "ieee",
           programs: int | None = None, warp_specialize: bool = False, **options) -> torch.Tensor:
    """act(a @ b + bias). programs: a persistent grid of that many programs (e.g. the GPU's
    SM count) instead of one program per output tile. warp_specialize: the K loop's copies
    issued by a producer warpgroup of their own (sm_90a with TMA; one program per tile).
    options: the launch's kernel options (num_warps, num_stages)."""
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, f"inner dimensions differ: {K} and {K2}"
    if programs is not None and programs < 1:
        raise ValueError(f"programs: a persistent grid needs at least one program, got {programs}")
    out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    tiles = tile.cdiv(M, BM) * tile.cdiv(N, BN)
    kernel = matmul_kernel if programs is None else persistent_matmul_kernel
    specialize = {"WARP_SPECIALIZE": True} if warp_specialize else {}
    kernel[(tiles if programs is None else min(programs, tiles),)](
        a, b, bias, out, M, N, K, *a.stride(), *b.stride(), *out.stride(),
        BM=BM, BN=BN, BK=BK, GROUP=GROUP, ACTIVATION=activation, PRECISION=input_precision, **specialize, **options)
    return out


def round_to_tf32(x: torch.Tensor) -> torch.Tensor:
    """f32 -> nearest tf32 (ties away from zero), as the kernel rounds its dot operands."""
    bits = x.contiguous().view(torch.int32)
    return torch.where(torch.isnan(x), x, ((bits + 0x1000) & -0x2000).view(torch.float32))


def reference(a, b, bias, activation="gelu", input_precision="ieee"):
    if input_precision == "tf32":
        a, b = round_to_tf32(a), round_to_tf32(b)
    y = (a.double() @ b.double()).float() + bias.float()
    return (torch.nn.functional.gelu(y, approximate="tanh") if activation == "gelu" else y).to(a.dtype)


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    big = dict(BM=128, BN=128, BK=32, GROUP=8)  # whole 64-row warpgroups: wgmma on a Hopper GPU
    tf32 = dict(input_precision="tf32")
    # (dtype, (M, N, K), tile options, the operands stored column-major); tails in M, N and K. A
    # column-major operand whose column stride is a multiple of 16 elements (K = 144, 208; M = 304)
    # goes to wgmma transposed (A M-major, B K-major), through TMA on sm_90a.
    cases = [(torch.float32, (70, 45, 37), {}, "b"), (torch.bfloat16, (64, 96, 80), {}, "b"),
             (torch.float16, (100, 72, 48), {}, "b"), (torch.bfloat16, (300, 200, 100), big, "b"),
             (torch.float16, (260, 130, 72), big, "b"), (torch.float32, (70, 45, 37), tf32, "b"),
             (torch.float32, (300, 200, 96), {**big, **tf32}, ""), (torch.bfloat16, (300, 260, 144), big, "b"),
             (torch.float16, (260, 300, 208), {**big, "BK": 64}, "b"), (torch.bfloat16, (304, 260, 144), big, "ab"),
             (torch.bfloat16, (300, 520, 144), {**big, "programs": 5}, ""),  # persistent: 3 x 5 tiles on 5 programs
             # N a multiple of 16 (an output row of whole 16-byte units): on sm_90a a persistent
             # kernel's output tiles are TMA stores, clipped at the bounds (tails in M and N).
             (torch.bfloat16, (300, 272, 144), big, ""),
             # persistent with 4 stages: the output tiles staged in the two ring slots the next tile's copies leave free
             (torch.float16, (300, 528, 144), {**big, "BK": 64, "programs": 5, "num_stages": 4}, "")]
    for dtype, (M, N, K), tiles, col_major in cases:
        a = torch.randn(K, M, device=device, dtype=dtype).t() if "a" in col_major else torch.randn(M, K, device=device, dtype=dtype)
        b = torch.randn(N, K, device=device, dtype=dtype).t() if "b" in col_major else torch.randn(K, N, device=device, dtype=dtype)
        bias = torch.randn(N, device=device, dtype=dtype)
        got = matmul(a, b, bias, **tiles)
        # tf32 is checked against the product of the rounded operands, which an exact f32 product misses by ~1e-2.
        want = reference(a, b, bias, input_precision=tiles.get("input_precision", "ieee"))
        tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2 * math.sqrt(K))
        torch.testing.assert_close(got, want, **tol)
    shapes = ", ".join(f"{str(d).split('.')[-1]}{' tf32' if t.get('input_precision') else ''} {s}"
                       f"{' persistent' if t.get('programs') else ''}" for d, s, t, _ in cases)
    print(f"matmul: {shapes} + bias + gelu on {device} match torch")

if __name__ == "__main__":
    main()
