"""Triton tutorial 05, layer normalization (forward and backward), as tile code.

After python/tutorials/05-layer-norm.py of triton-lang/triton (MIT license, in LICENSE here; Copyright
2018-2020 Philippe Tillet, 2020-2022 OpenAI): a fused forward (a row a program, looping over
the row in blocks), a backward that writes dx and adds each row's dw/db into one of
GROUP_SIZE_M partial buffers under a spin lock (`atomic_cas` / `atomic_xchg`,
`debug_barrier`), and a kernel that sums the partial buffers. The kernels are Triton code
with `tl.` spelled `tile.` and `@triton.jit` spelled `@tile.jit`. Differs from the tutorial:
main() checks the forward and the three gradients against torch autograd at small sizes
(fp16 and fp32), the apex comparison, plots and triton.testing benchmarks are left out.
"""

import torch

import tile


@tile.jit
def _layer_norm_fwd_fused(
    X,
    Y,
    W,
    B,
    Mean,
    Rstd,
    stride,
    N,
    eps,
    BLOCK_SIZE: tile.constexpr,
):
    row = tile.program_id(0)
    Y += row * stride
    X += row * stride
    mean = 0
    _mean = tile.zeros([BLOCK_SIZE], dtype=tile.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tile.arange(0, BLOCK_SIZE)
        a = tile.load(X + cols, mask=cols < N, other=0.).to(tile.float32)
        _mean += a
    mean = tile.sum(_mean, axis=0) / N
    _var = tile.zeros([BLOCK_SIZE], dtype=tile.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tile.arange(0, BLOCK_SIZE)
        x = tile.load(X + cols, mask=cols < N, other=0.).to(tile.float32)
        x = tile.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tile.sum(_var, axis=0) / N
    rstd = 1 / tile.sqrt(var + eps)
    tile.store(Mean + row, mean)
    tile.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tile.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tile.load(W + cols, mask=mask)
        b = tile.load(B + cols, mask=mask)
        x = tile.load(X + cols, mask=mask, other=0.).to(tile.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tile.store(Y + cols, y, mask=mask)


@tile.jit
def _layer_norm_bwd_dx_fused(DX,
                             DY,
                             DW,
                             DB,
                             X,
                             W,
                             Mean,
                             Rstd,
                             Lock,
                             stride,
                             N,
                             GROUP_SIZE_M: tile.constexpr, BLOCK_SIZE_N: tile.constexpr):
    row = tile.program_id(0)
    cols = tile.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    # this row's partial dw/db buffer, and its lock and count
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    x = tile.load(X + cols, mask=mask, other=0).to(tile.float32)
    dy = tile.load(DY + cols, mask=mask, other=0).to(tile.float32)
    w = tile.load(W + cols, mask=mask).to(tile.float32)
    mean = tile.load(Mean + row)
    rstd = tile.load(Rstd + row)
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tile.where(mask, xhat, 0.)
    wdy = tile.where(mask, wdy, 0.)
    c1 = tile.sum(xhat * wdy, axis=0) / N
    c2 = tile.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tile.store(DX + cols, dx, mask=mask)
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = (dy).to(w.dtype)
    while tile.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tile.load(Count)
    if count == 0:
        tile.atomic_xchg(Count, 1)
    else:
        partial_dw += tile.load(DW, mask=mask)
        partial_db += tile.load(DB, mask=mask)
    tile.store(DW, partial_dw, mask=mask)
    tile.store(DB, partial_db, mask=mask)
    # every thread's stores before the lock's release
    tile.debug_barrier()
    tile.atomic_xchg(Lock, 0)


@tile.jit
def _layer_norm_bwd_dwdb(DW,
                         DB,
                         FINAL_DW,
                         FINAL_DB,
                         M,
                         N,
                         BLOCK_SIZE_M: tile.constexpr, BLOCK_SIZE_N: tile.constexpr):
    pid = tile.program_id(0)
    cols = pid * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N)
    dw = tile.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tile.float32)
    db = tile.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tile.float32)
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tile.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tile.load(DW + offs, mask=mask, other=0.)
        db += tile.load(DB + offs, mask=mask, other=0.)
    sum_dw = tile.sum(dw, axis=0)
    sum_db = tile.sum(db, axis=0)
    tile.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    tile.store(FINAL_DB + cols, sum_db, mask=cols < N)


def next_power_of_2(n):
    return 1 << (n - 1).bit_length()


def group_size_m(N):
    """The tutorial's number of partial dw/db buffers for N columns."""
    GROUP_SIZE_M = 64
    if N <= 8192: GROUP_SIZE_M = 96
    if N <= 4096: GROUP_SIZE_M = 128
    if N <= 1024: GROUP_SIZE_M = 256
    return GROUP_SIZE_M


class LayerNorm(torch.autograd.Function):

    @staticmethod
    def forward(ctx, x, normalized_shape, weight, bias, eps):
        y = torch.empty_like(x)
        x_arg = x.reshape(-1, x.shape[-1])
        M, N = x_arg.shape
        mean = torch.empty((M, ), dtype=torch.float32, device=x.device)
        rstd = torch.empty((M, ), dtype=torch.float32, device=x.device)
        MAX_FUSED_SIZE = 65536 // x.element_size()
        BLOCK_SIZE = min(MAX_FUSED_SIZE, next_power_of_2(N))
        if N > BLOCK_SIZE:
            raise RuntimeError("This layer norm doesn't support feature dim >= 64KB.")
        num_warps = min(max(BLOCK_SIZE // 256, 1), 8)
        _layer_norm_fwd_fused[(M, )](  #
            x_arg, y, weight, bias, mean, rstd,  #
            x_arg.stride(0), N, eps,  #
            BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps, num_ctas=1)
        ctx.save_for_backward(x, weight, bias, mean, rstd)
        ctx.BLOCK_SIZE = BLOCK_SIZE
        ctx.num_warps = num_warps
        ctx.eps = eps
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w, b, m, v = ctx.saved_tensors
        N = w.shape[0]
        GROUP_SIZE_M = group_size_m(N)
        locks = torch.zeros(2 * GROUP_SIZE_M, dtype=torch.int32, device=w.device)
        _dw = torch.zeros((GROUP_SIZE_M, N), dtype=x.dtype, device=w.device)
        _db = torch.zeros((GROUP_SIZE_M, N), dtype=x.dtype, device=w.device)
        dw = torch.empty((N, ), dtype=w.dtype, device=w.device)
        db = torch.empty((N, ), dtype=w.dtype, device=w.device)
        dx = torch.empty_like(dy)
        x_arg = x.reshape(-1, x.shape[-1])
        M, N = x_arg.shape
        _layer_norm_bwd_dx_fused[(M, )](  #
            dx, dy, _dw, _db, x, w, m, v, locks,  #
            x_arg.stride(0), N,  #
            BLOCK_SIZE_N=ctx.BLOCK_SIZE,  #
            GROUP_SIZE_M=GROUP_SIZE_M,  #
            num_warps=ctx.num_warps)
        grid = lambda meta: (tile.cdiv(N, meta['BLOCK_SIZE_N']), )
        _layer_norm_bwd_dwdb[grid](
            _dw, _db, dw, db, min(GROUP_SIZE_M, M), N,  #
            BLOCK_SIZE_M=32,  #
            BLOCK_SIZE_N=128, num_ctas=1)
        return dx, None, dw, db, None


layer_norm = LayerNorm.apply


def test_layer_norm(M, N, dtype, eps=1e-5, device="cpu"):
    weight = torch.rand((N, ), dtype=dtype, device=device, requires_grad=True)
    bias = torch.rand((N, ), dtype=dtype, device=device, requires_grad=True)
    x = -2.3 + 0.5 * torch.randn((M, N), dtype=dtype, device=device)
    dy = .1 * torch.randn_like(x)
    x.requires_grad_(True)
    y_tri = layer_norm(x, (N, ), weight, bias, eps)
    y_ref = torch.nn.functional.layer_norm(x.float(), (N, ), weight.float(), bias.float(), eps).to(dtype)
    y_tri.backward(dy, retain_graph=True)
    dx_tri, dw_tri, db_tri = [_.grad.clone() for _ in [x, weight, bias]]
    x.grad, weight.grad, bias.grad = None, None, None
    y_ref.backward(dy, retain_graph=True)
    dx_ref, dw_ref, db_ref = [_.grad.clone() for _ in [x, weight, bias]]
    torch.testing.assert_close(y_tri, y_ref, atol=1e-2, rtol=0)
    torch.testing.assert_close(dx_tri, dx_ref, atol=1e-2, rtol=0)
    torch.testing.assert_close(db_tri, db_ref, atol=1e-2, rtol=0)
    torch.testing.assert_close(dw_tri, dw_ref, atol=1e-2, rtol=0)


def benchmark_launches():
    """The backward benchmark's largest point (M=4096, N=512*31, fp16), its three kernels, as meta tensors."""
    M, N = 4096, 512 * 31
    BLOCK_SIZE = min(65536 // 2, next_power_of_2(N))
    num_warps = min(max(BLOCK_SIZE // 256, 1), 8)
    GROUP_SIZE_M = group_size_m(N)
    x, y, dy, dx = (torch.empty(M, N, dtype=torch.float16, device="meta") for _ in range(4))
    w, b, dw, db = (torch.empty(N, dtype=torch.float16, device="meta") for _ in range(4))
    mean, rstd = (torch.empty(M, device="meta") for _ in range(2))
    _dw, _db = (torch.empty(GROUP_SIZE_M, N, dtype=torch.float16, device="meta") for _ in range(2))
    locks = torch.empty(2 * GROUP_SIZE_M, dtype=torch.int32, device="meta")
    return [
        (_layer_norm_fwd_fused, (x, y, w, b, mean, rstd, N, N, 1e-5), dict(BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)),
        (_layer_norm_bwd_dx_fused, (dx, dy, _dw, _db, x, w, mean, rstd, locks, N, N),
         dict(BLOCK_SIZE_N=BLOCK_SIZE, GROUP_SIZE_M=GROUP_SIZE_M, num_warps=num_warps)),
        (_layer_norm_bwd_dwdb, (_dw, _db, dw, db, GROUP_SIZE_M, N), dict(BLOCK_SIZE_M=32, BLOCK_SIZE_N=128)),
    ]


def main():
    torch.manual_seed(0)
    test_layer_norm(151, 1000, torch.float16)
    test_layer_norm(300, 77, torch.float32)
    print("t05_layer_norm: matches torch autograd")


if __name__ == "__main__":
    main()
