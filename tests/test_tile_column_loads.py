"""`tile-column-loads` (passes/tile_column_loads.py): tiles contiguous down dim 0, loaded or
stored through plain pointers (`x + rows[:, None] + cols[None, :] * ld`) or block pointers of
order (0, 1), go 16 bytes at a time for sm_90a and sm_80 where they went one element per
access. On the CPU the pass runs where the GPU pipeline has it (before `tile-fuse`, through a
`tile.Pipeline` edit), and the results match torch at odd sizes, on strided views."""

import re

import pytest
import torch

import tile

COLUMN_LOADS = tile.Pipeline().insert_before("tile-fuse", "tile-column-loads")


def on_cpu(kernel):
    """The kernel compiled with `tile-column-loads` where the GPU pipeline runs it."""
    return tile.kernel(pipeline=COLUMN_LOADS)(kernel.fn)


@tile.jit
def _transpose_scale(x, y, M, N, ld_x, ld_y, BM: tile.constexpr, BN: tile.constexpr):
    """y = 2 * x^T: x (N, M) read as its transpose's [BM, BN] blocks, M contiguous down dim 0."""
    rm = tile.program_id(0) * BM + tile.arange(0, BM)
    rn = tile.program_id(1) * BN + tile.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    t = tile.load(x + rm[:, None] + rn[None, :] * ld_x, mask=mask, other=0.0)
    tile.store(y + rm[:, None] * ld_y + rn[None, :], t * 2, mask=mask)


@tile.jit
def _column_store(x, y, M, N, ld_x, ld_y, BM: tile.constexpr, BN: tile.constexpr):
    """y^T = x + 1, row sums beside: x (M, N) read by rows, y (N, M) written down its columns."""
    rm = tile.program_id(0) * BM + tile.arange(0, BM)
    rn = tile.program_id(1) * BN + tile.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    t = tile.load(x + rm[:, None] * ld_x + rn[None, :], mask=mask, other=0.0)
    tile.store(y + rm[:, None] + rn[None, :] * ld_y, t + 1, mask=mask)


@tile.jit
def _block_ptr_columns(x, y, s, M, N, ld_x, ld_y, BM: tile.constexpr, BN: tile.constexpr):
    """x^T's block through a block pointer of order (0, 1), read twice (its max per row, and
    scaled): y = x^T * 3, s = rowmax(x^T)."""
    pm, pn = tile.program_id(0), tile.program_id(1)
    p = tile.make_block_ptr(base=x, shape=(M, N), strides=(1, ld_x), offsets=(pm * BM, pn * BN),
                            block_shape=(BM, BN), order=(0, 1))
    t = tile.load(p, boundary_check=(0, 1), padding_option="zero")
    rm = pm * BM + tile.arange(0, BM)
    rn = pn * BN + tile.arange(0, BN)
    tile.store(y + rm[:, None] * ld_y + rn[None, :], t * 3, mask=(rm[:, None] < M) & (rn[None, :] < N))
    tile.store(s + pn * M + rm, tile.max(t.to(tile.float32), axis=1), mask=rm < M)


def _strided(rows, cols, dtype):
    """A (rows, cols) view of a wider tensor: its row stride past its width."""
    return torch.randn(rows, cols + 7, dtype=torch.float32).to(dtype)[:, :cols]


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("M, N", [(64, 32), (77, 45)])
def test_transposed_loads_and_stores_match_torch(dtype, M, N):
    BM, BN = 32, 16
    grid = (tile.cdiv(M, BM), tile.cdiv(N, BN))
    x = torch.randn(N, M + 3, dtype=dtype)[:, :M]  # (rows past M: the row stride is not M)
    y = torch.empty(M, N, dtype=dtype)
    on_cpu(_transpose_scale)[grid](x, y, M, N, x.stride(0), y.stride(0), BM=BM, BN=BN)
    torch.testing.assert_close(y, (x.T.float() * 2).to(dtype))

    x = torch.randn(M, N, dtype=dtype)
    y = torch.zeros(N, M + 5, dtype=dtype)
    on_cpu(_column_store)[grid](x, y, M, N, x.stride(0), y.stride(0), BM=BM, BN=BN)
    torch.testing.assert_close(y[:, :M], (x.float() + 1).to(dtype).T)
    assert not y[:, M:].any()  # (nothing written past the mask)


@pytest.mark.parametrize("M, N", [(64, 48), (50, 37)])
def test_block_pointer_of_column_order(M, N):
    BM, BN = 32, 16
    grid = (tile.cdiv(M, BM), tile.cdiv(N, BN))
    xt = _strided(N, M, torch.bfloat16)  # x^T's storage, rows strided: x = xt.T, M contiguous
    y = torch.empty(M, N, dtype=torch.bfloat16)
    s = torch.empty(grid[1], M, dtype=torch.float32)
    on_cpu(_block_ptr_columns)[grid](xt, y, s, M, N, xt.stride(0), y.stride(0), BM=BM, BN=BN)
    x = xt.T.float()
    torch.testing.assert_close(y.float(), (x * 3).bfloat16().float())
    pad = torch.nn.functional.pad(x, (0, grid[1] * BN - N), value=0.0)  # (padding_option="zero")
    torch.testing.assert_close(s, pad.reshape(M, grid[1], BN).amax(2).T.contiguous())


def memory_forms(ptx):
    return set(re.findall(r"\b(?:ld|st)\.global[\w.:]*", ptx))


def _meta(*shape, dtype=torch.bfloat16):
    return torch.empty(*shape, dtype=dtype, device="meta")


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_sixteen_bytes_a_thread_on_the_gpu(target, gpu_target):
    """At a model's sizes: every global access of the three kernels moves 16 bytes (bf16: 8
    elements), where the column-major ones moved 2; nothing spills."""
    gpu_target(target)
    M, N, BM, BN = 4096, 1024, 64, 64
    x, y = _meta(N, M), _meta(M, N)
    launches = [
        (_transpose_scale, (x, y, M, N, M, N)),
        (_column_store, (y, x, M, N, N, M)),
        (_block_ptr_columns, (x, y, _meta(N // BN, M, dtype=torch.float32), M, N, M, N)),
    ]
    for kernel, args in launches:
        launcher = kernel.compile(*args, BM=BM, BN=BN, num_warps=4)
        forms = memory_forms(launcher.asm["ptx"])
        wide = {f for f in forms if f.endswith(".v4.b32")}
        assert wide and not any(re.search(r"\.b16$", f) for f in forms), (kernel.name, forms)
        info = launcher.metadata["ptxas"]
        assert info["spill_stores"] == info["spill_loads"] == 0, (kernel.name, info)
