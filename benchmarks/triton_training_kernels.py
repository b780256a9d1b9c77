"""Triton twins of examples/cross_entropy.py and examples/rms_norm_backward.py: the same
algorithms, block sizes and warp counts, written with `triton.language`, so that
training_kernels_on_device.py can time tile next to the Triton a training library ships.

This module imports triton at the top: the on-device script imports it only on a GPU."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def cross_entropy_kernel(
    X_ptr,
    X_stride,
    dX_ptr,
    dX_stride,
    Y_ptr,
    loss_ptr,
    n_cols,
    n_non_ignore,
    ignore_index,
    label_smoothing,
    BLOCK_SIZE: tl.constexpr,
):
    program_id = tl.program_id(0).to(tl.int64)
    X_ptr += program_id * X_stride
    dX_ptr += program_id * dX_stride
    y = tl.load(Y_ptr + program_id)

    if y == ignore_index:
        for i in range(0, n_cols, BLOCK_SIZE):
            X_offsets = i + tl.arange(0, BLOCK_SIZE)
            tl.store(dX_ptr + X_offsets, 0.0, mask=X_offsets < n_cols)
        tl.store(loss_ptr + program_id, 0.0)
        return

    m = float("-inf")
    d = 0.0
    ori_X_y = tl.load(X_ptr + y).cast(tl.float32)
    scaled_x_sum = 0.0
    eps = label_smoothing / n_cols
    for i in range(0, n_cols, BLOCK_SIZE):
        X_offsets = i + tl.arange(0, BLOCK_SIZE)
        X_block = tl.load(
            X_ptr + X_offsets,
            mask=X_offsets < n_cols,
            other=float("-inf"),
        ).cast(tl.float32)
        block_max = tl.max(X_block)
        if label_smoothing > 0:
            scaled_x_sum += tl.sum(tl.where(X_offsets < n_cols, -eps * X_block, 0.0))
        m_new = tl.maximum(m, block_max)
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(X_block - m_new))
        m = m_new
    lse = m + tl.log(d)

    for i in range(0, n_cols, BLOCK_SIZE):
        X_offsets = i + tl.arange(0, BLOCK_SIZE)
        X_block = tl.load(
            X_ptr + X_offsets,
            mask=X_offsets < n_cols,
            other=float("-inf"),
        ).cast(tl.float32)
        grad = tl.exp(X_block - m) / d - eps
        grad = tl.where(X_offsets == y, grad - (1 - label_smoothing), grad)
        tl.store(
            dX_ptr + X_offsets,
            (grad / n_non_ignore).cast(dX_ptr.dtype.element_ty),
            mask=X_offsets < n_cols,
        )

    loss = lse - ori_X_y
    if label_smoothing > 0:
        smooth_loss = scaled_x_sum + label_smoothing * lse
        loss = loss * (1 - label_smoothing) + smooth_loss
    tl.store(loss_ptr + program_id, loss / n_non_ignore)


def cross_entropy_forward_backward(logits, target, ignore_index=-100, label_smoothing=0.0, grad=None, in_place=False,
                                   n_non_ignore=None):
    """As examples/cross_entropy.py's, launching the Triton kernel."""
    n_rows, n_cols = logits.shape
    block = min(4096, triton.next_power_of_2(n_cols))
    if n_non_ignore is None:
        n_non_ignore = int((target != ignore_index).sum().item())
    if grad is None:
        grad = logits if in_place else torch.empty_like(logits)
    loss_1d = torch.empty(n_rows, dtype=torch.float32, device=logits.device)
    cross_entropy_kernel[(n_rows,)](
        logits,
        logits.stride(0),
        grad,
        grad.stride(0),
        target,
        loss_1d,
        n_cols,
        max(n_non_ignore, 1),
        ignore_index,
        label_smoothing,
        BLOCK_SIZE=block,
        num_warps=16 if block >= 4096 else 4,
    )
    return loss_1d.sum(), grad


@triton.jit
def rms_norm_forward_kernel(
    Y_ptr,
    Y_row_stride,
    X_ptr,
    X_row_stride,
    W_ptr,
    RSTD_ptr,
    n_cols,
    eps,
    HAS_WEIGHT: tl.constexpr,
    casting_mode: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    Y_ptr += row_idx * Y_row_stride
    X_ptr += row_idx * X_row_stride
    X_row = tl.load(X_ptr + col_offsets, mask=mask, other=0).cast(tl.float32)
    mean_square = tl.sum(X_row * X_row, axis=0) / n_cols
    rstd = tl.rsqrt(mean_square + eps)
    tl.store(RSTD_ptr + row_idx, rstd)
    Y_row = X_row * rstd
    if casting_mode == 0:  # Llama's
        Y_row = Y_row.cast(X_ptr.dtype.element_ty).cast(tl.float32)
    if HAS_WEIGHT:
        Y_row = Y_row * tl.load(W_ptr + col_offsets, mask=mask, other=0).cast(tl.float32)
    tl.store(Y_ptr + col_offsets, Y_row.cast(Y_ptr.dtype.element_ty), mask=mask)


@triton.jit
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
    HAS_WEIGHT: tl.constexpr,
    ATOMIC_DW: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    row_block_id = tl.program_id(0)
    row_start = row_block_id * rows_per_program
    row_end = tl.minimum((row_block_id + 1) * rows_per_program, n_rows)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols

    dW_row = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    dY_ptr += row_start * dY_row_stride
    dX_ptr += row_start * dX_row_stride
    X_ptr += row_start * X_row_stride
    RSTD_ptr += row_start
    if HAS_WEIGHT:
        W_row = tl.load(W_ptr + col_offsets, mask=mask, other=0.0).cast(tl.float32)

    for _ in range(row_start, row_end):
        dY_row = tl.load(dY_ptr + col_offsets, mask=mask, other=0.0).cast(tl.float32)
        X_row = tl.load(X_ptr + col_offsets, mask=mask, other=0.0).cast(tl.float32)
        rstd_row = tl.load(RSTD_ptr)
        if HAS_WEIGHT:
            m = dY_row * W_row
        else:
            m = dY_row
        dX_row = rstd_row * m
        dX_row += rstd_row * (-(1 / n_cols) * rstd_row * rstd_row * tl.sum(m * X_row, axis=0) * X_row)
        if HAS_WEIGHT:
            dW_row += dY_row * (X_row * rstd_row)
        tl.store(dX_ptr + col_offsets, dX_row.cast(dX_ptr.dtype.element_ty), mask=mask)
        dY_ptr += dY_row_stride
        dX_ptr += dX_row_stride
        X_ptr += X_row_stride
        RSTD_ptr += 1

    if HAS_WEIGHT:
        if ATOMIC_DW:
            tl.atomic_add(dW_ptr + col_offsets, dW_row, mask=mask)
        else:
            tl.store(dW_ptr + row_block_id * dW_row_stride + col_offsets, dW_row, mask=mask)


def _rms_block(n_cols: int) -> tuple[int, int]:
    block = triton.next_power_of_2(n_cols)
    return block, min(max(block // 256, 1), 16)


def rms_norm_forward(X, W, eps=1e-6, casting_mode="gemma"):
    """As examples/rms_norm_backward.py's, launching the Triton kernel."""
    n_rows, n_cols = X.shape
    block, warps = _rms_block(n_cols)
    Y = torch.empty_like(X)
    RSTD = torch.empty(n_rows, dtype=torch.float32, device=X.device)
    rms_norm_forward_kernel[(n_rows,)](
        Y, Y.stride(0), X, X.stride(0), W, RSTD, n_cols, eps,
        HAS_WEIGHT=W is not None, casting_mode=0 if casting_mode == "llama" else 1, BLOCK_SIZE=block, num_warps=warps,
    )
    return Y, RSTD


def rms_norm_backward(dY, X, W, RSTD, n_programs, atomic_dw=False):
    """As examples/rms_norm_backward.py's (at the atomic variant, tile's autotuner picks the
    warps; here the partial-row kernel's), launching the Triton kernel."""
    n_rows, n_cols = X.shape
    block, warps = _rms_block(n_cols)
    n_programs = min(n_programs, n_rows)
    dX = torch.empty_like(X)
    shape = (n_cols,) if atomic_dw else (n_programs, n_cols)
    dW = torch.zeros(shape, dtype=torch.float32, device=X.device) if W is not None else None
    rms_norm_backward_kernel[(n_programs,)](
        dY, dY.stride(0), dX, dX.stride(0), X, X.stride(0), W, RSTD, dW,
        0 if atomic_dw or W is None else dW.stride(0), n_rows, n_cols, -(-n_rows // n_programs),
        HAS_WEIGHT=W is not None, ATOMIC_DW=atomic_dw, BLOCK_SIZE=block, num_warps=warps,
    )
    if dW is not None and not atomic_dw:
        dW = dW.sum(0)
    return dX, None if dW is None else dW.to(W.dtype)
