"""Fused cross-entropy, written as Liger's fused kernel is: one program a row of logits, an
online max and sum of exponentials over the vocabulary in blocks (so a 32000-wide row never
sits in one tile), the row's loss with label smoothing and `ignore_index`, and, in a second
pass over the row, the gradient of the mean loss with respect to the logits: written over the
logits in place (`grad=None`, Liger's way of saving a B*T x V buffer) or into a grad buffer.

The mean is over the rows whose label is not `ignore_index`, as torch's `reduction="mean"`.
"""

import torch

import tile

MAX_FUSED_SIZE = tile.constexpr(4096)


@tile.kernel
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
    BLOCK_SIZE: tile.constexpr,
):
    program_id = tile.program_id(0).to(tile.int64)  # (row * stride passes 2**31 at 16k rows of a 128k vocab)
    X_ptr += program_id * X_stride
    dX_ptr += program_id * dX_stride
    y = tile.load(Y_ptr + program_id)

    if y == ignore_index:
        for i in range(0, n_cols, BLOCK_SIZE):
            X_offsets = i + tile.arange(0, BLOCK_SIZE)
            tile.store(dX_ptr + X_offsets, 0.0, mask=X_offsets < n_cols)
        tile.store(loss_ptr + program_id, 0.0)
        return

    # Pass 1: the running max m and sum d of exp(x - m), and -eps * sum(x) for the smoothing.
    m = float("-inf")
    d = 0.0
    ori_X_y = tile.load(X_ptr + y).cast(tile.float32)
    scaled_x_sum = 0.0
    eps = label_smoothing / n_cols
    for i in range(0, n_cols, BLOCK_SIZE):
        X_offsets = i + tile.arange(0, BLOCK_SIZE)
        X_block = tile.load(
            X_ptr + X_offsets,
            mask=X_offsets < n_cols,
            other=float("-inf"),
        ).cast(tile.float32)
        block_max = tile.max(X_block)
        if label_smoothing > 0:
            scaled_x_sum += tile.sum(tile.where(X_offsets < n_cols, -eps * X_block, 0.0))
        m_new = tile.maximum(m, block_max)
        d = d * tile.exp(m - m_new) + tile.sum(tile.exp(X_block - m_new))
        m = m_new
    lse = m + tile.log(d)

    # Pass 2: d loss / d x = (softmax(x) - eps - (1 - label_smoothing) * onehot(y)) / n_non_ignore.
    for i in range(0, n_cols, BLOCK_SIZE):
        X_offsets = i + tile.arange(0, BLOCK_SIZE)
        X_block = tile.load(
            X_ptr + X_offsets,
            mask=X_offsets < n_cols,
            other=float("-inf"),
        ).cast(tile.float32)
        grad = tile.exp(X_block - m) / d - eps
        grad = tile.where(X_offsets == y, grad - (1 - label_smoothing), grad)
        tile.store(
            dX_ptr + X_offsets,
            (grad / n_non_ignore).cast(dX_ptr.dtype.element_ty),
            mask=X_offsets < n_cols,
        )

    loss = lse - ori_X_y
    if label_smoothing > 0:
        smooth_loss = scaled_x_sum + label_smoothing * lse
        loss = loss * (1 - label_smoothing) + smooth_loss
    tile.store(loss_ptr + program_id, loss / n_non_ignore)


def cross_entropy_forward_backward(
    logits: torch.Tensor,
    target: torch.Tensor,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    grad: torch.Tensor | None = None,
    in_place: bool = False,
    n_non_ignore: int | None = None,
):
    """(mean loss, d loss / d logits) of cross-entropy over rows of `logits` (BT x V).

    The gradient goes into `grad` when given, over `logits` when `in_place`, else into a new tensor;
    `n_non_ignore` (the rows whose label is not `ignore_index`) saves counting them on the host."""
    assert logits.dim() == 2 and logits.stride(1) == 1
    n_rows, n_cols = logits.shape
    target = target.contiguous()
    BLOCK_SIZE = min(MAX_FUSED_SIZE, 1 << (n_cols - 1).bit_length())
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
        BLOCK_SIZE=BLOCK_SIZE,
        num_warps=16 if BLOCK_SIZE >= 4096 else 4,  # 8 elements, 16 bytes of bf16, a thread
    )
    return loss_1d.sum(), grad


def _check(n_rows: int, n_cols: int, dtype: torch.dtype, label_smoothing: float, in_place: bool, device: str):
    logits = torch.randn(n_rows, n_cols, device=device).mul(3).to(dtype)
    target = torch.randint(0, n_cols, (n_rows,), device=device)
    target[::3] = -100
    ref_x = logits.float().requires_grad_()
    want = torch.nn.functional.cross_entropy(ref_x, target, ignore_index=-100, label_smoothing=label_smoothing)
    want.backward()
    x = logits.clone()
    loss, grad = cross_entropy_forward_backward(x, target, label_smoothing=label_smoothing, in_place=in_place)
    if in_place:
        assert grad.data_ptr() == x.data_ptr()
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    torch.testing.assert_close(loss, want, rtol=tol, atol=tol)
    torch.testing.assert_close(grad.float(), ref_x.grad, rtol=tol, atol=tol / n_rows)


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    _check(9, 1000, torch.float32, 0.0, False, device)
    _check(9, 1000, torch.float32, 0.1, True, device)
    _check(5, 1000, torch.bfloat16, 0.1, False, device)
    _check(4, 32000, torch.bfloat16, 0.0, True, device)
    _check(3, 32000, torch.float32, 0.05, False, device)
    print(f"cross_entropy: loss and logits' gradient (label smoothing, ignore_index, in place and not) "
          f"at V=1000 and 32000, f32 and bf16, on {device} match torch")


if __name__ == "__main__":
    main()
