"""Matmul with a fused epilogue: out = gelu(a @ b + bias), in one kernel.

Any M, N, K (tails are masked), inputs in any layout given by their strides
(row- or column-major), f32 accumulation of f16/bf16/f32 inputs, grouped
program order so that neighbouring programs share tiles of `a` in L2.
"""

import math

import torch

import tile


@tile.func
def gelu(x):
    # tanh approximation, as torch.nn.functional.gelu(approximate="tanh")
    return 0.5 * x * (1.0 + tile.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


@tile.kernel
def matmul_kernel(a, b, bias, out, M, N, K, s_am, s_ak, s_bk, s_bn, s_om, s_on,
                  BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr, GROUP: tile.constexpr,
                  ACTIVATION: tile.constexpr):
    pid = tile.program_id(0)
    n_m = tile.cdiv(M, BM)
    n_n = tile.cdiv(N, BN)
    # Grouped order: GROUP rows of tiles are swept column by column.
    group = pid // (GROUP * n_n)
    first_m = group * GROUP
    rows_in_group = tile.minimum(n_m - first_m, GROUP)
    pm = first_m + (pid % (GROUP * n_n)) % rows_in_group
    pn = (pid % (GROUP * n_n)) // rows_in_group
    rm = pm * BM + tile.arange(0, BM)
    rn = pn * BN + tile.arange(0, BN)
    rk = tile.arange(0, BK)
    acc = tile.zeros((BM, BN), tile.float32)
    for k0 in range(0, K, BK):
        ka = k0 + rk
        a_tile = tile.load(a + rm[:, None] * s_am + ka[None, :] * s_ak, mask=(rm[:, None] < M) & (ka[None, :] < K))
        b_tile = tile.load(b + ka[:, None] * s_bk + rn[None, :] * s_bn, mask=(ka[:, None] < K) & (rn[None, :] < N))
        acc = tile.dot(a_tile, b_tile, acc)
    acc = acc + tile.load(bias + rn, mask=rn < N).to(tile.float32)[None, :]
    if ACTIVATION == "gelu":
        acc = gelu(acc)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile.store(out + rm[:, None] * s_om + rn[None, :] * s_on, acc, mask=mask)


def matmul(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor, activation: str = "gelu",
           BM: int = 32, BN: int = 32, BK: int = 16, GROUP: int = 4) -> torch.Tensor:
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, f"inner dimensions differ: {K} and {K2}"
    out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (tile.cdiv(M, BM) * tile.cdiv(N, BN),)
    matmul_kernel[grid](a, b, bias, out, M, N, K, *a.stride(), *b.stride(), *out.stride(),
                        BM=BM, BN=BN, BK=BK, GROUP=GROUP, ACTIVATION=activation)
    return out


def reference(a, b, bias, activation="gelu"):
    y = a.float() @ b.float() + bias.float()
    return (torch.nn.functional.gelu(y, approximate="tanh") if activation == "gelu" else y).to(a.dtype)


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    big = dict(BM=128, BN=128, BK=32, GROUP=8)  # whole 64-row warpgroups: wgmma on a Hopper GPU
    cases = [(torch.float32, (70, 45, 37), {}), (torch.bfloat16, (64, 96, 80), {}), (torch.float16, (100, 72, 48), {}),
             (torch.bfloat16, (300, 200, 100), big), (torch.float16, (260, 130, 72), big)]  # tails in M, N and K
    for dtype, (M, N, K), tiles in cases:
        a = torch.randn(M, K, device=device, dtype=dtype)
        b = torch.randn(N, K, device=device, dtype=dtype).t()  # column-major, through its strides
        bias = torch.randn(N, device=device, dtype=dtype)
        got = matmul(a, b, bias, **tiles)
        want = reference(a, b, bias)
        tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2 * math.sqrt(K))
        torch.testing.assert_close(got, want, **tol)
    shapes = ", ".join(f"{str(d).split('.')[-1]} {s}" for d, s, _ in cases)
    print(f"matmul: {shapes} (column-major b) + bias + gelu on {device} match torch")


if __name__ == "__main__":
    main()
