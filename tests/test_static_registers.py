"""The compile-time model of i32 tile arithmetic (codegen/gpu/static_registers.py) against
torch's int32 ops: a wrong model would make tile.gather read the wrong elements."""

import numpy as np
import pytest
import torch

from tile.codegen.gpu.static_registers import _BINARY, constant_offset_groups, repeats, vector_reads

A = np.array([-(2 ** 31), -70000, -7, -1, 0, 1, 6, 7, 9, 65537, 2 ** 31 - 1], dtype=np.int64)
B = np.array([3, -3, 7, 1024, -1, 5, 2, 3, -8, 2 ** 16, 2 ** 31 - 1], dtype=np.int64)

TORCH = {
    "arith.addi": torch.add,
    "arith.subi": torch.sub,
    "arith.muli": torch.mul,
    "arith.divsi": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "arith.remsi": torch.fmod,
    "arith.andi": torch.bitwise_and,
    "arith.ori": torch.bitwise_or,
    "arith.xori": torch.bitwise_xor,
    "arith.maxsi": torch.maximum,
    "arith.minsi": torch.minimum,
}


@pytest.mark.parametrize("name", sorted(TORCH))
def test_signed_ops_match_torch_int32(name):
    a, b = A.copy(), B.copy()
    if name == "arith.divsi":  # INT_MIN / -1 overflows in C; torch raises nothing but differs: leave it out
        keep = ~((a == -(2 ** 31)) & (b == -1))
        a, b = a[keep], b[keep]
    want = TORCH[name](torch.tensor(a, dtype=torch.int32), torch.tensor(b, dtype=torch.int32)).numpy()
    np.testing.assert_array_equal(_BINARY[name](a, b), want.astype(np.int64))


def test_shifts_match_torch_int32():
    a = torch.tensor(A, dtype=torch.int32)
    for k in (0, 1, 5, 31):
        b = np.full_like(A, k)
        np.testing.assert_array_equal(_BINARY["arith.shli"](A, b), torch.bitwise_left_shift(a, k).numpy())
        np.testing.assert_array_equal(_BINARY["arith.shrsi"](A, b), torch.bitwise_right_shift(a, k).numpy())
        want = (a.to(torch.int64) & 0xFFFFFFFF) >> k
        np.testing.assert_array_equal(_BINARY["arith.shrui"](A, b), want.to(torch.int32).numpy())


def test_unsigned_ops_wrap_like_u32():
    a, b = np.array([-1, -8, 9]), np.array([16, 3, 4])
    np.testing.assert_array_equal(_BINARY["arith.remui"](a, b), [(2 ** 32 - 1) % 16, (2 ** 32 - 8) % 3, 1])
    np.testing.assert_array_equal(_BINARY["arith.divui"](a, b), [(2 ** 32 - 1) // 16, (2 ** 32 - 8) // 3, 2])


def test_constant_offset_groups():
    # Registers 0 and 2 differ by 5 in every thread; register 1 by a thread-dependent amount.
    values = np.array([[0, 7, 5], [10, 11, 15], [20, 40, 25]])
    assert constant_offset_groups(values) == [(0, 0), (1, 0), (0, 5)]


@pytest.mark.parametrize("layout, shape, warps", [
    ("wgmma", (128, 256), 8), ("wgmma", (64, 128), 4), ("wgmma", (128, 128), 8), ("mma", (64, 64), 4), ("mma", (128, 64), 8)])
def test_tensor_core_coordinates_cover_the_tile_once(layout, shape, warps):
    """thread_coords of an mma or wgmma accumulator (the model the epilogue's row chunks are
    chosen by) puts every element of the tile in exactly one register of one thread."""
    from tile.codegen.gpu.distributed_layout import MmaDistribution, WgmmaDistribution
    from tile.codegen.gpu.static_registers import thread_coords
    from tile.dialects.layout import Mma, Wgmma

    kind, dist = (Wgmma, WgmmaDistribution) if layout == "wgmma" else (Mma, MmaDistribution)
    d = dist(kind.for_shape(list(shape), warps), shape)
    rows, cols = thread_coords(d, warps * 32)
    seen = np.zeros(shape, dtype=int)
    np.add.at(seen, (rows.ravel(), cols.ravel()), 1)
    assert (seen == 1).all()


@pytest.mark.parametrize("layout, shape, warps", [
    ("wgmma", (128, 32), 4), ("wgmma", (128, 64), 8), ("wgmma", (64, 128), 4), ("mma", (64, 32), 4), ("mma", (128, 32), 8)])
@pytest.mark.parametrize("axis", [0, 1])
def test_rows_and_cols_are_where_the_accumulator_holds_them(layout, shape, warps, axis):
    """`#tile.rows` (`#tile.cols`) of an accumulator: each thread holds, in its registers, the
    rows (columns) it holds of the accumulator, all of them, every row (column) of the tile
    held somewhere; so a broadcast of it over the accumulator is the thread's own registers."""
    from tile.codegen.gpu.distributed_layout import MmaDistribution, RowsDistribution, WgmmaDistribution
    from tile.codegen.gpu.static_registers import thread_coords
    from tile.dialects.layout import Mma, Rows, Wgmma

    kind, dist = (Wgmma, WgmmaDistribution) if layout == "wgmma" else (Mma, MmaDistribution)
    parent = kind.for_shape(list(shape), warps)
    held = thread_coords(dist(parent, shape), warps * 32)[axis]
    (mine,) = thread_coords(RowsDistribution(Rows.of(parent, axis), (shape[axis],)), warps * 32)
    for t in range(warps * 32):
        assert set(mine[t]) == set(held[t])
    assert set(mine.ravel()) == set(range(shape[axis]))


def test_epilogue_row_chunks_split_both_layouts():
    """A 128x256 wgmma accumulator (two warpgroups along M) going to 16-byte rows: with
    room for 64 rows, the two chunks are row bit 3, which both layouts fix per register (a
    warp holds rows 16w + lane/4 + 8h in wgmma, rows w + 8j in the blocked layout); with
    room for 32 rows no pair of bits does (bit 4 is the wgmma warp's)."""
    from types import SimpleNamespace

    from tile.codegen.gpu.distributed_convert import chunks_of
    from tile.codegen.gpu.distributed_layout import Distribution, WgmmaDistribution
    from tile.dialects.layout import Blocked, Wgmma

    shape = (128, 256)
    src = WgmmaDistribution(Wgmma.for_shape(list(shape), 8), shape)
    dst = Distribution(Blocked((1, 8), (1, 32), (8, 1), (1, 0)), shape)
    translator = SimpleNamespace(threads=256)
    chunks = chunks_of(translator, (src, dst), 128, 64)
    assert (chunks.count, chunks.bit) == (2, 3)
    assert chunks_of(translator, (src, dst), 128, 128).count == 1
    assert chunks_of(translator, (src, dst), 128, 32) is None
    # A TMA store's chunks are whole boxes, consecutive: not the top row bit, which tells the
    # two warpgroups apart (a register's chunk would differ by thread), but the top column bit.
    assert chunks_of(translator, (src,), 128, 64, contiguous=True) is None
    top = chunks_of(translator, (src,), 256, 128, axis=1, contiguous=True)
    assert (top.count, top.bit, top.axis) == (2, 7, 1)


def test_vector_reads_share_repeats_and_widen_aligned_runs():
    """Two threads; registers 0-3 read a run of four from a 4-aligned start, 4-5 repeat 0-1,
    6-7 a run of two from an odd start in thread 1 (so one element at a time, the second
    addressed from the first), 8-9 a pair
    at a constant distance from register 0's."""
    pos = np.array([[8, 9, 10, 11, 8, 9, 20, 21, 16, 17],
                    [4, 5, 6, 7, 4, 5, 3, 4, 12, 13]])
    assert repeats(pos) == {4: 0, 5: 1}
    plan = vector_reads(pos, elem_bytes=4)
    assert plan == [(0, 4, 0, 0), (6, 1, 6, 0), (7, 1, 6, 1), (8, 2, 0, 8)]
    covered = sorted(r + k for r, w, _, _ in plan for k in range(w))
    assert covered == [0, 1, 2, 3, 6, 7, 8, 9]
    for r, w, base, offset in plan:  # each load reads what its registers want, in every thread
        for k in range(w):
            np.testing.assert_array_equal(pos[:, base] + offset + k, pos[:, r + k])
    assert max(w for _, w, _, _ in vector_reads(pos, elem_bytes=8)) == 2  # at most 16 bytes a load
