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
    program_id = tl.program_id(0)
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


def cross_entropy_forward_backward(logits, target, ignore_index=-100, label_smoothing=0.0, grad=None, in_place=False):
    """As examples/cross_entropy.py's, launching the Triton kernel."""
    n_rows, n_cols = logits.shape
    block = min(4096, triton.next_power_of_2(n_cols))
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
