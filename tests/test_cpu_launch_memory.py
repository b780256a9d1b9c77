"""The CPU launcher made a new ctypes struct class per tensor per launch, and ctypes keeps the
pointer type of every class it has seen: each launch kept about 40 KB, for ever."""

import ctypes
import gc
import tracemalloc

import torch

import tile


@tile.kernel
def add_rows_kernel(x, y, out, n, stride_y, BLOCK: tile.constexpr):
    o = tile.arange(0, BLOCK)
    row = tile.load(y + tile.program_id(0) * stride_y + o, mask=o < n)
    p = out + tile.program_id(0) * n
    tile.store(p + o, tile.load(x + o, mask=o < n) + row, mask=o < n)


def test_5000_launches_keep_no_memory():
    x = torch.randn(13)
    y = torch.randn(3, 20)[:, 2:15]  # a strided view
    out = torch.empty(3, 13)
    launch = add_rows_kernel[(3,)]
    for _ in range(5):
        launch(x, y, out, 13, y.stride(0), BLOCK=16)
    torch.testing.assert_close(out, x + y)
    gc.collect()
    types_before = len(ctypes._pointer_type_cache)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(5000):
            launch(x, y, out, 13, y.stride(0), BLOCK=16)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    torch.testing.assert_close(out, x + y)
    assert len(ctypes._pointer_type_cache) == types_before
    assert grown < 64 * 1024, f"5000 launches kept {grown} bytes"
