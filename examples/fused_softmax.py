"""Row-wise softmax in the Triton form (pointer + strides).

One program per row: a row that fits one tile is read once and reduced in
registers; a longer row is streamed in chunks of BLOCK columns with an online
softmax (running max and running sum, rescaled as the max grows), then read
again to write. Short rows go ROWS a program (`softmax_rows_kernel`): a
ROWS x BLOCK tile reduced along its rows, each row's max and sum read back
along it from the registers that reduced them.
"""

import torch

import tile


@tile.kernel
def softmax_kernel(x, out, n_cols, x_row_stride, out_row_stride, BLOCK: tile.constexpr, SINGLE_TILE: tile.constexpr):
    row = tile.program_id(0)
    x_row = x + row * x_row_stride
    out_row = out + row * out_row_stride
    cols = tile.arange(0, BLOCK)
    if SINGLE_TILE:
        mask = cols < n_cols
        v = tile.load(x_row + cols, mask=mask, other=-float("inf")).to(tile.float32)
        e = tile.exp(v - tile.max(v, axis=0))
        tile.store(out_row + cols, e / tile.sum(e, axis=0), mask=mask)
    else:
        m = tile.full((BLOCK,), -float("inf"), tile.float32)
        s = tile.zeros((BLOCK,), tile.float32)
        for start in range(0, n_cols, BLOCK):
            mask = start + cols < n_cols
            v = tile.load(x_row + start + cols, mask=mask, other=-float("inf")).to(tile.float32)
            m_new = tile.maximum(m, v)
            alpha = tile.where(m_new == -float("inf"), 0.0, tile.exp(m - m_new))
            s = s * alpha + tile.where(mask, tile.exp(v - m_new), 0.0)
            m = m_new
        row_max = tile.max(m, axis=0)
        row_sum = tile.sum(s * tile.exp(m - row_max), axis=0)
        for start in range(0, n_cols, BLOCK):
            mask = start + cols < n_cols
            v = tile.load(x_row + start + cols, mask=mask, other=0.0).to(tile.float32)
            tile.store(out_row + start + cols, tile.exp(v - row_max) / row_sum, mask=mask)


@tile.kernel
def softmax_rows_kernel(x, out, n_rows, n_cols, x_row_stride, out_row_stride, ROWS: tile.constexpr,
                        BLOCK: tile.constexpr):
    """ROWS short rows a program, as a ROWS x BLOCK tile reduced along its rows: one row a
    program would leave each program too little to move to keep the memory busy."""
    rows = tile.program_id(0) * ROWS + tile.arange(0, ROWS)
    cols = tile.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    v = tile.load(x + rows[:, None] * x_row_stride + cols[None, :], mask=mask, other=-float("inf")).to(tile.float32)
    e = tile.exp(v - tile.max(v, axis=1)[:, None])
    tile.store(out + rows[:, None] * out_row_stride + cols[None, :], e / tile.sum(e, axis=1)[:, None], mask=mask)


def softmax(x: torch.Tensor, BLOCK: int = 128, ROWS: int = 1) -> torch.Tensor:
    """Softmax over the last dim of a 2-D tensor; x may have any row stride (unit column stride).
    Rows that fit BLOCK go ROWS a program (softmax_rows_kernel) where ROWS > 1."""
    assert x.dim() == 2 and x.stride(1) == 1
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    single = cols <= BLOCK
    if single and ROWS > 1:
        softmax_rows_kernel[(-(-rows // ROWS),)](x, out, rows, cols, x.stride(0), out.stride(0), ROWS=ROWS, BLOCK=BLOCK)
        return out
    softmax_kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK=BLOCK, SINGLE_TILE=single)
    return out


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    short = torch.randn(37, 100, device=device)  # fits one tile
    wide = torch.randn(64, 1000, device=device)[::2, 100:877] * 5  # strided rows, 777 columns: the chunked path
    for x in (short, wide):
        torch.testing.assert_close(softmax(x), torch.softmax(x, dim=1))
    # 8 rows a program, the last program's rows past the end masked off.
    torch.testing.assert_close(softmax(short, ROWS=8), torch.softmax(short, dim=1))
    print(f"fused_softmax: shapes {tuple(short.shape)} (one row and 8 rows a program) and {tuple(wide.shape)} "
          f"(strided) on {device} match torch")


if __name__ == "__main__":
    main()
