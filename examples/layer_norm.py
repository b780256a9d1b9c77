"""LayerNorm forward over the last dim, one program per row (or ROWS short rows a
program, `layer_norm_rows_kernel`: a ROWS x BLOCK tile normalized along its rows).

Statistics are computed in f32 whatever the input dtype (f32, f16, bf16), as
torch does; the output has the input's dtype. A row that fits one tile
(ONE_BLOCK) is read once and stays in registers, its variance taken from
centred values; a longer row is streamed in chunks: one loop for the sums,
one to normalize and write, each with its loads STAGES - 1 chunks ahead
(`tile.range`, through shared-memory rings) when STAGES > 1.
"""

import torch

import tile


@tile.kernel
def layer_norm_kernel(x, w, b, out, n_cols, x_row_stride, out_row_stride, eps, BLOCK: tile.constexpr,
                      ONE_BLOCK: tile.constexpr, STAGES: tile.constexpr = 1):
    row = tile.program_id(0)
    x_row = x + row * x_row_stride
    out_row = out + row * out_row_stride
    cols = tile.arange(0, BLOCK)
    if ONE_BLOCK:
        mask = cols < n_cols
        v = tile.load(x_row + cols, mask=mask).to(tile.float32)
        mean = tile.sum(v, axis=0) / n_cols
        d = tile.where(mask, v - mean, 0.0)
        rstd = tile.rsqrt(tile.sum(d * d, axis=0) / n_cols + eps)
        wv = tile.load(w + cols, mask=mask).to(tile.float32)
        bv = tile.load(b + cols, mask=mask).to(tile.float32)
        tile.store(out_row + cols, d * rstd * wv + bv, mask=mask)
    else:
        acc = tile.zeros((BLOCK,), tile.float32)
        acc_sq = tile.zeros((BLOCK,), tile.float32)
        for start in tile.range(0, n_cols, BLOCK, num_stages=STAGES):
            v = tile.load(x_row + start + cols, mask=start + cols < n_cols).to(tile.float32)
            acc += v
            acc_sq += v * v
        mean = tile.sum(acc, axis=0) / n_cols
        var = tile.maximum(tile.sum(acc_sq, axis=0) / n_cols - mean * mean, 0.0)
        rstd = tile.rsqrt(var + eps)
        for start in tile.range(0, n_cols, BLOCK, num_stages=STAGES):
            mask = start + cols < n_cols
            v = tile.load(x_row + start + cols, mask=mask).to(tile.float32)
            wv = tile.load(w + start + cols, mask=mask).to(tile.float32)
            bv = tile.load(b + start + cols, mask=mask).to(tile.float32)
            tile.store(out_row + start + cols, (v - mean) * rstd * wv + bv, mask=mask)


@tile.kernel
def layer_norm_rows_kernel(x, w, b, out, n_rows, n_cols, x_row_stride, out_row_stride, eps, ROWS: tile.constexpr,
                           BLOCK: tile.constexpr):
    """ROWS short rows a program, each in one tile (as ONE_BLOCK), normalized along the rows
    of a ROWS x BLOCK tile: one short row a program would leave too little to move."""
    rows = tile.program_id(0) * ROWS + tile.arange(0, ROWS)
    cols = tile.arange(0, BLOCK)
    in_row = cols < n_cols
    mask = (rows[:, None] < n_rows) & in_row[None, :]
    v = tile.load(x + rows[:, None] * x_row_stride + cols[None, :], mask=mask).to(tile.float32)
    mean = tile.sum(v, axis=1) / n_cols
    d = tile.where(mask, v - mean[:, None], 0.0)
    rstd = tile.rsqrt(tile.sum(d * d, axis=1) / n_cols + eps)
    wv = tile.load(w + cols, mask=in_row).to(tile.float32)
    bv = tile.load(b + cols, mask=in_row).to(tile.float32)
    y = d * rstd[:, None] * wv[None, :] + bv[None, :]
    tile.store(out + rows[:, None] * out_row_stride + cols[None, :], y, mask=mask)


def layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float = 1e-5, BLOCK: int = 256,
               ROWS: int = 1, stages: int = 1) -> torch.Tensor:
    """LayerNorm of a 2-D tensor with unit column stride (any row stride). Rows that fit
    BLOCK go ROWS a program (layer_norm_rows_kernel) where ROWS > 1; longer rows stream
    their chunks with `stages` pipelining stages."""
    assert x.dim() == 2 and x.stride(1) == 1
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    if cols <= BLOCK and ROWS > 1:
        layer_norm_rows_kernel[(-(-rows // ROWS),)](x, w, b, out, rows, cols, x.stride(0), out.stride(0), eps, ROWS=ROWS,
                                                     BLOCK=BLOCK)
        return out
    layer_norm_kernel[(rows,)](x, w, b, out, cols, x.stride(0), out.stride(0), eps, BLOCK=BLOCK, ONE_BLOCK=cols <= BLOCK,
                               STAGES=stages)
    return out


TOLERANCES = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float16: dict(rtol=1e-2, atol=1e-2),
              torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    for rows, cols in ((29, 700), (13, 200)):  # streamed in chunks of 256, and one tile
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            x = (torch.randn(rows, cols, device=device) * 3 + 1).to(dt)
            w = torch.randn(cols, device=device).to(dt)
            b = torch.randn(cols, device=device).to(dt)
            want = torch.nn.functional.layer_norm(x.float(), (cols,), w.float(), b.float()).to(dt)
            torch.testing.assert_close(layer_norm(x, w, b), want, **TOLERANCES[dt])
            if cols <= 256:  # 4 rows a program, the last program's rows past the end masked off
                torch.testing.assert_close(layer_norm(x, w, b, ROWS=4), want, **TOLERANCES[dt])
            elif dt == torch.float16:  # the chunks' loads one ahead, through shared-memory rings (on a GPU)
                torch.testing.assert_close(layer_norm(x, w, b, stages=2), want, **TOLERANCES[dt])
    print(f"layer_norm: (29, 700) and (13, 200) (one row and 4 rows a program; f16's chunks also pipelined) in f32, "
          f"f16 and bf16 on {device} match torch")


if __name__ == "__main__":
    main()
