"""RMSNorm, y = x * rsqrt(mean(x^2) + eps) * w, forward and backward, written as Liger's
kernels are: the forward keeps each row's rstd (f32) for the backward; the backward's
programs each take a run of rows, write dX row by row and add the rows' dW terms in an
f32 register row, then either store it as that program's partial dW row (a torch sum
over the programs finishes dW: a two-stage reduction without atomics) or add it into an
f32 dW with `tile.atomic_add` (an autotuned kernel whose `reset_to_zero` clears dW
before each timed config). The weight is optional: `W=None` gives `HAS_WEIGHT=False`.
"""

import os

import torch

import tile

MAX_ROW_BLOCK = tile.constexpr(16384)
# Liger's casting modes: Llama rounds x * rstd to x's dtype before the weight; Gemma keeps f32.
_CASTING_MODE_LLAMA = tile.constexpr(0)
_CASTING_MODE_GEMMA = tile.constexpr(1)
_str_to_casting_mode = {"llama": _CASTING_MODE_LLAMA.value, "gemma": _CASTING_MODE_GEMMA.value}


@tile.kernel
def rms_norm_forward_kernel(
    Y_ptr,
    Y_row_stride,
    X_ptr,
    X_row_stride,
    W_ptr,
    RSTD_ptr,
    n_cols,
    eps,
    HAS_WEIGHT: tile.constexpr,
    casting_mode: tile.constexpr,
    BLOCK_SIZE: tile.constexpr,
):
    row_idx = tile.program_id(0)
    col_offsets = tile.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    Y_ptr += row_idx * Y_row_stride
    X_ptr += row_idx * X_row_stride
    X_row = tile.load(X_ptr + col_offsets, mask=mask, other=0).cast(tile.float32)
    mean_square = tile.sum(X_row * X_row, axis=0) / n_cols
    rstd = tile.rsqrt(mean_square + eps)
    tile.store(RSTD_ptr + row_idx, rstd)
    Y_row = X_row * rstd
    if casting_mode == _CASTING_MODE_LLAMA:
        Y_row = Y_row.cast(X_ptr.dtype.element_ty).cast(tile.float32)
    if HAS_WEIGHT:
        Y_row = Y_row * tile.load(W_ptr + col_offsets, mask=mask, other=0).cast(tile.float32)
    tile.store(Y_ptr + col_offsets, Y_row.cast(Y_ptr.dtype.element_ty), mask=mask)


@tile.kernel
def rms_norm_backward_kernel(
    dY_ptr,
    dY_row_stride,
    dX_ptr,
    dX_row_stride,
    X_ptr,
    X_row_stride,
    W_ptr,
    RSTD_ptr,
    dW_ptr,
    dW_row_stride,
    n_rows,
    n_cols,
    rows_per_program,
    HAS_WEIGHT: tile.constexpr,
    ATOMIC_DW: tile.constexpr,
    BLOCK_SIZE: tile.constexpr,
):
    row_block_id = tile.program_id(0)
    row_start = row_block_id * rows_per_program
    row_end = tile.minimum((row_block_id + 1) * rows_per_program, n_rows)
    col_offsets = tile.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols

    dW_row = tile.zeros((BLOCK_SIZE,), dtype=tile.float32)
    dY_ptr += row_start * dY_row_stride
    dX_ptr += row_start * dX_row_stride
    X_ptr += row_start * X_row_stride
    RSTD_ptr += row_start
    if HAS_WEIGHT:
        W_row = tile.load(W_ptr + col_offsets, mask=mask, other=0.0).cast(tile.float32)

    for _ in range(row_start, row_end):
        dY_row = tile.load(dY_ptr + col_offsets, mask=mask, other=0.0).cast(tile.float32)
        X_row = tile.load(X_ptr + col_offsets, mask=mask, other=0.0).cast(tile.float32)
        rstd_row = tile.load(RSTD_ptr)
        if HAS_WEIGHT:
            m = dY_row * W_row
        else:
            m = dY_row
        dX_row = rstd_row * m
        dX_row += rstd_row * (-(1 / n_cols) * rstd_row * rstd_row * tile.sum(m * X_row, axis=0) * X_row)
        if HAS_WEIGHT:
            dW_row += dY_row * (X_row * rstd_row)
        tile.store(dX_ptr + col_offsets, dX_row.cast(dX_ptr.dtype.element_ty), mask=mask)
        dY_ptr += dY_row_stride
        dX_ptr += dX_row_stride
        X_ptr += X_row_stride
        RSTD_ptr += 1

    if HAS_WEIGHT:
        if ATOMIC_DW:
            tile.atomic_add(dW_ptr + col_offsets, dW_row, mask=mask)
        else:
            tile.store(dW_ptr + row_block_id * dW_row_stride + col_offsets, dW_row, mask=mask)


rms_norm_backward_atomic_kernel = tile.autotune(
    configs=[tile.Config({}, num_warps=w) for w in (4, 8, 16)],  # (16: a 4096-wide row's 8 bf16 a thread)
    key=["n_cols"],
    reset_to_zero=["dW_ptr"],
)(rms_norm_backward_kernel)


def _block(n_cols: int) -> tuple[int, int]:
    """The row's tile (a power of two) and its warps: 8 bf16 elements, 16 bytes, a thread."""
    block = 1 << (n_cols - 1).bit_length()
    assert block <= MAX_ROW_BLOCK, "one row a tile"
    return block, min(max(block // 256, 1), 16)


def rms_norm_forward(X: torch.Tensor, W: torch.Tensor | None, eps: float = 1e-6, casting_mode: str = "gemma"):
    """(Y, rstd) of RMSNorm over X's last dim (X 2-D, rows contiguous); `casting_mode` as Liger's."""
    assert X.dim() == 2 and X.stride(1) == 1
    n_rows, n_cols = X.shape
    BLOCK_SIZE, num_warps = _block(n_cols)
    Y = torch.empty_like(X)
    RSTD = torch.empty(n_rows, dtype=torch.float32, device=X.device)
    rms_norm_forward_kernel[(n_rows,)](
        Y,
        Y.stride(0),
        X,
        X.stride(0),
        W,
        RSTD,
        n_cols,
        eps,
        HAS_WEIGHT=W is not None,
        casting_mode=_str_to_casting_mode[casting_mode],
        BLOCK_SIZE=BLOCK_SIZE,
        num_warps=num_warps,
    )
    return Y, RSTD


def _programs(X: torch.Tensor) -> int:
    """The backward's programs: one per SM on a GPU (each adds many rows into its dW row), a few elsewhere."""
    if X.device.type == "cuda":
        return torch.cuda.get_device_properties(X.device).multi_processor_count
    if os.environ.get("TILE_COMPILE_ONLY") and os.environ.get("TILE_TARGET", "").startswith("sm_90"):
        return 132  # (built ahead for an H100/H200's launches: their SM count, so the same specializations)
    return 8


def rms_norm_backward(
    dY: torch.Tensor,
    X: torch.Tensor,
    W: torch.Tensor | None,
    RSTD: torch.Tensor,
    atomic_dw: bool = False,
    n_programs: int | None = None,
):
    """(dX, dW) of RMSNorm for the output's gradient dY; dW is None without a weight.

    dW in two stages: per-program f32 partial rows summed by torch, or (`atomic_dw`) added
    into one f32 row by the autotuned atomic kernel; `n_programs` defaults to one per SM."""
    assert X.dim() == 2 and X.stride(1) == 1
    dY = dY.contiguous()  # (a broadcast gradient, say of .sum(), has stride 0)
    n_rows, n_cols = X.shape
    BLOCK_SIZE, num_warps = _block(n_cols)
    n_programs = min(n_programs or _programs(X), n_rows)
    rows_per_program = -(-n_rows // n_programs)
    dX = torch.empty_like(X)
    shape = (n_cols,) if atomic_dw else (n_programs, n_cols)
    dW = torch.zeros(shape, dtype=torch.float32, device=X.device) if W is not None else None
    args = (
        dY,
        dY.stride(0),
        dX,
        dX.stride(0),
        X,
        X.stride(0),
        W,
        RSTD,
        dW,
        0 if atomic_dw or W is None else dW.stride(0),
        n_rows,
        n_cols,
        rows_per_program,
    )
    if atomic_dw:
        rms_norm_backward_atomic_kernel[(n_programs,)](
            *args,
            HAS_WEIGHT=W is not None,
            ATOMIC_DW=True,
            BLOCK_SIZE=BLOCK_SIZE,
        )
    else:
        rms_norm_backward_kernel[(n_programs,)](
            *args,
            HAS_WEIGHT=W is not None,
            ATOMIC_DW=False,
            BLOCK_SIZE=BLOCK_SIZE,
            num_warps=num_warps,
        )
        if dW is not None:
            dW = dW.sum(0)
    return dX, None if dW is None else dW.to(W.dtype)


def reference(X: torch.Tensor, W: torch.Tensor | None, eps: float = 1e-6, casting_mode: str = "gemma"):
    """RMSNorm in f32 by torch (Llama's: x * rstd rounded to x's dtype first)."""
    Y = X.float() * torch.rsqrt(X.float().pow(2).mean(-1, keepdim=True) + eps)
    if casting_mode == "llama":
        Y = Y.to(X.dtype).float()
    return Y if W is None else Y * W.float()


def _check(n_rows, n_cols, dtype, has_weight, atomic_dw, device):
    X = torch.randn(n_rows, n_cols, device=device).to(dtype)
    W = (1 + 0.1 * torch.randn(n_cols, device=device)).to(dtype) if has_weight else None
    dY = torch.randn(n_rows, n_cols, device=device).to(dtype)
    Xr = X.float().requires_grad_()
    Wr = W.float().requires_grad_() if has_weight else None
    want = reference(Xr, Wr)
    want.backward(dY.float())
    Y, RSTD = rms_norm_forward(X, W)
    dX, dW = rms_norm_backward(dY, X, W, RSTD, atomic_dw=atomic_dw)
    tol = 1e-4 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(Y.float(), want.detach(), rtol=tol, atol=tol)
    torch.testing.assert_close(dX.float(), Xr.grad, rtol=tol, atol=tol)
    if has_weight:
        torch.testing.assert_close(dW.float(), Wr.grad, rtol=tol, atol=tol * n_rows ** 0.5)
    else:
        assert dW is None


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    _check(37, 100, torch.float32, True, False, device)
    _check(37, 100, torch.float32, True, True, device)
    _check(37, 100, torch.float32, False, False, device)
    _check(20, 1000, torch.bfloat16, True, False, device)
    _check(20, 1000, torch.bfloat16, False, True, device)
    X = torch.randn(9, 300, device=device).to(torch.bfloat16)
    W = torch.randn(300, device=device).to(torch.bfloat16)
    Ys = {}
    for mode in ("llama", "gemma"):
        Ys[mode], _ = rms_norm_forward(X, W, casting_mode=mode)
        torch.testing.assert_close(Ys[mode].float(), reference(X, W, casting_mode=mode), rtol=1e-2, atol=1e-2)
    assert not torch.equal(Ys["llama"], Ys["gemma"]), "the casting mode changed nothing"
    print(f"rms_norm_backward: Y (Llama's and Gemma's casting), dX and dW (partial rows + torch sum, and "
          f"autotuned atomic_add) of RMSNorm with and without a weight, f32 and bf16, on {device} match torch autograd")


if __name__ == "__main__":
    main()
