"""LayerNorm's backward kernel, and layer_norm.py's forward with a gradient two ways:
`layer_norm_op`, a custom op (`tile.torch.op`, torch.compile sees one opaque op, no
graph break) with its backward op registered as its autograd formula, and
`layer_norm_fn`, a `torch.autograd.Function` made by `tile.torch.autograd` (eager).

The backward recomputes a row's mean and rstd (one program a row, the row in one
tile), writes dx and per-row partials of dw and db that torch sums over the rows.
"""

import torch

import tile
from layer_norm import layer_norm


@tile.kernel
def layer_norm_backward_kernel(x, w, dy, dx, dw_part, db_part, n_cols, x_row_stride, dy_row_stride, dx_row_stride,
                               eps, BLOCK: tile.constexpr):
    row = tile.program_id(0)
    x += row * x_row_stride  # (pointer increments: each row's start)
    dy += row * dy_row_stride
    cols = tile.arange(0, BLOCK)
    mask = cols < n_cols
    v = tile.load(x + cols, mask=mask, other=0.0).to(tile.float32)
    g = tile.load(dy + cols, mask=mask, other=0.0).to(tile.float32)
    wv = tile.load(w + cols, mask=mask, other=0.0).to(tile.float32)
    mean = tile.sum(v, axis=0) / n_cols
    d = tile.where(mask, v - mean, 0.0)
    rstd = tile.rsqrt(tile.sum(d * d, axis=0) / n_cols + eps)
    xhat = d * rstd
    wdy = wv * g
    c1 = tile.sum(xhat * wdy, axis=0) / n_cols
    c2 = tile.sum(wdy, axis=0) / n_cols
    tile.store(dx + row * dx_row_stride + cols, (wdy - (xhat * c1 + c2)) * rstd, mask=mask)
    tile.store(dw_part + row * n_cols + cols, g * xhat, mask=mask)
    tile.store(db_part + row * n_cols + cols, g, mask=mask)


def _block(cols: int) -> int:
    """The tile of one row: its length, a power of two."""
    return max(16, 1 << (cols - 1).bit_length())


def layer_norm_backward(x: torch.Tensor, w: torch.Tensor, dy: torch.Tensor, eps: float = 1e-5):
    """(dx, dw, db) of layer_norm(x, w, b, eps) for the output's gradient dy; rows of at most 4096."""
    assert x.dim() == 2 and x.stride(1) == 1
    dy = dy.contiguous()  # (a broadcast gradient, say of .sum(), has stride 0)
    rows, cols = x.shape
    block = _block(cols)
    assert block <= 4096, "one row a tile"
    dx = torch.empty_like(x)
    dw_part = torch.empty((rows, cols), dtype=torch.float32, device=x.device)
    db_part = torch.empty((rows, cols), dtype=torch.float32, device=x.device)
    layer_norm_backward_kernel[(rows,)](x, w, dy, dx, dw_part, db_part, cols, x.stride(0), dy.stride(0), dx.stride(0),
                                        eps, BLOCK=block)
    return dx, dw_part.sum(0).to(w.dtype), db_part.sum(0).to(w.dtype)


@tile.torch.op("tile_examples::layer_norm_backward", mutates_args=())
def layer_norm_backward_op(x: torch.Tensor, w: torch.Tensor, dy: torch.Tensor,
                           eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return layer_norm_backward(x, w, dy, eps)


def _setup(ctx, inputs, output):
    x, w, _, eps = inputs
    ctx.save_for_backward(x, w)
    ctx.eps = eps


def _backward(ctx, dy):
    x, w = ctx.saved_tensors
    dx, dw, db = layer_norm_backward_op(x, w, dy, ctx.eps)
    return dx, dw, db, None


@tile.torch.op("tile_examples::layer_norm", mutates_args=(), backward=_backward, setup_context=_setup)
def layer_norm_op(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float) -> torch.Tensor:
    return layer_norm(x, w, b, eps, BLOCK=_block(x.shape[1]))


def _fn_forward(ctx, x, w, b, eps):
    ctx.save_for_backward(x, w)
    ctx.eps = eps
    return layer_norm(x, w, b, eps, BLOCK=_block(x.shape[1]))


def _fn_backward(ctx, dy):
    x, w = ctx.saved_tensors
    return (*layer_norm_backward(x, w, dy, ctx.eps), None)


layer_norm_fn = tile.torch.autograd(_fn_forward, _fn_backward, name="LayerNormFunction")


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    for f in (layer_norm_op, layer_norm_fn):
        x = torch.randn(37, 100, device=device, requires_grad=True)
        w = torch.randn(100, device=device, requires_grad=True)
        b = torch.randn(100, device=device, requires_grad=True)
        dy = torch.randn(37, 100, device=device)
        got = torch.autograd.grad((f(x, w, b, 1e-5) * dy).sum(), (x, w, b))
        want = torch.autograd.grad((torch.nn.functional.layer_norm(x, (100,), w, b, 1e-5) * dy).sum(), (x, w, b))
        for g, r in zip(got, want):
            torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-4)
    print(f"layer_norm_backward: dx, dw, db of a 37 x 100 layer norm (op and autograd.Function) on {device} match torch")


if __name__ == "__main__":
    main()
