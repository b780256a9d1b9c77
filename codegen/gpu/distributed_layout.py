"""Where each element of a tile lives: the arithmetic of a `#tile.blocked` layout.

For a tile of shape S in layout (size_per_thread, threads_per_warp,
warps_per_cta, order), along dim d one "CTA tile" covers
spt[d] * tpw[d] * wpc[d] elements; a thread holds n[d] = spt[d] * reps[d]
elements of dim d, where reps[d] repeats the CTA tile to cover S[d] (a CTA
tile larger than S[d] wraps around: threads hold copies).

A thread's register j[d] along dim d holds coordinate

    (j[d] // spt[d]) * cta[d] + warp[d] * spt[d] * tpw[d] + lane[d] * spt[d] + j[d] % spt[d]   (mod S[d])

= a per-thread base plus a per-register constant. Registers are numbered with
order[0] (the fastest dim) varying fastest, so each run of spt[order[0]]
registers holds consecutive elements: one vector memory access.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from functools import cached_property

from ...dialects.layout import Blocked, Wgmma


def row_major_strides(shape) -> list[int]:
    """Strides of a tile's elements in row-major order, for linear element numbers."""
    strides, s = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d], s = s, s * shape[d]
    return strides


@dataclass(frozen=True)
class Distribution:
    layout: Blocked
    shape: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    def cta(self, d: int) -> int:
        L = self.layout
        return L.size_per_thread[d] * L.threads_per_warp[d] * L.warps_per_cta[d]

    def per_thread(self, d: int) -> int:
        reps = max(1, -(-self.shape[d] // self.cta(d)))
        return min(self.layout.size_per_thread[d], self.shape[d]) * reps

    @cached_property
    def num_registers(self) -> int:
        return math.prod(self.per_thread(d) for d in range(self.rank))

    @cached_property
    def register_indices(self) -> list[tuple[int, ...]]:
        """j (one index per dim) for every register, in register order."""
        out = []
        for r in range(self.num_registers):
            j, rest = [0] * self.rank, r
            for d in self.layout.order:
                j[d], rest = rest % self.per_thread(d), rest // self.per_thread(d)
            out.append(tuple(j))
        return out

    def register_offset(self, d: int, j: int) -> int:
        spt = self.layout.size_per_thread[d]
        return (j // spt) * self.cta(d) + j % spt

    def _shift(self, d: int, counts) -> int:
        shift = 1
        for dd in self.layout.order:
            if dd == d:
                return shift
            shift *= counts[dd]
        raise ValueError(d)

    def lane_shift(self, d: int) -> int:
        """Place value of dim d's digit inside the lane id (dims in `order`, fastest first)."""
        return self._shift(d, self.layout.threads_per_warp)

    def warp_shift(self, d: int) -> int:
        """Place value of dim d's digit inside the warp id."""
        return self._shift(d, self.layout.warps_per_cta)

    @property
    def vector_width(self) -> int:
        """Consecutive elements per register run along the fastest dim."""
        f = self.layout.order[0]
        return min(self.layout.size_per_thread[f], self.shape[f])


@dataclass(frozen=True)
class MmaDistribution:
    """Where the elements of a tile in `#tile.mma` layout live (the m16n8 accumulator).

    Warp (wm, wn) owns rows [wm * BM/WM, ...) and columns [wn * BN/WN, ...) and
    repeats 16 x 8 fragments over them; in fragment (rm, rn) a thread with
    lane = 4 * group + t holds, in registers i = 0..3,
    row rm*16 + group + 8*(i // 2) and column rn*8 + 2*t + i % 2.
    Register number: ((rm * reps_n) + rn) * 4 + i.
    """

    layout: object  # dialects.layout.Mma
    shape: tuple[int, ...]

    rank = 2
    vector_width = 2

    @property
    def warp_tile(self) -> tuple[int, int]:
        return self.shape[0] // self.layout.warps[0], self.shape[1] // self.layout.warps[1]

    @property
    def reps(self) -> tuple[int, int]:
        m, n = self.warp_tile
        return m // 16, n // 8

    @property
    def num_registers(self) -> int:
        return self.reps[0] * self.reps[1] * 4

    def register(self, rm: int, rn: int, i: int) -> int:
        return (rm * self.reps[1] + rn) * 4 + i

    def register_offsets(self) -> tuple[list[int], list[int]]:
        """Per register, the row and column offsets from the thread's base position."""
        rows, cols = [], []
        for rm in range(self.reps[0]):
            for rn in range(self.reps[1]):
                for i in range(4):
                    rows.append(rm * 16 + 8 * (i // 2))
                    cols.append(rn * 8 + i % 2)
        return rows, cols


@dataclass(frozen=True)
class WgmmaDistribution(MmaDistribution):
    """Where the elements of a tile in `#tile.wgmma` layout live.

    Warpgroup (gm, gn) owns a `warp_tile` (its part of the tile) and issues one
    64-row wgmma per 64 rows of it; warp w % 4 of the group holds rows
    16 (w % 4) .. +15 of each, as m16n8 fragments along N. So fragment (rm, rn)
    of a thread with lane = 4 * group + t holds, in registers i = 0..3,
    row rm*64 + 16 (w % 4) + group + 8*(i // 2) and column rn*8 + 2*t + i % 2;
    the registers of one instruction (fixed rm) are its accumulator, in order.
    """

    @property
    def warp_tile(self) -> tuple[int, int]:
        """The part of one warpgroup."""
        gm, gn = self.layout.warpgroups
        return self.shape[0] // gm, self.shape[1] // gn

    @property
    def reps(self) -> tuple[int, int]:
        m, n = self.warp_tile
        return m // 64, n // 8

    def register_offsets(self) -> tuple[list[int], list[int]]:
        rows, cols = super().register_offsets()
        return [(r // 16) * 64 + r % 16 for r in rows], cols


@dataclass(frozen=True)
class RowsDistribution:
    """Where the elements of a 1-D tile in `#tile.rows<parent>` layout live: row r is held by
    the threads that hold row r of the parent tensor-core tile, in the registers of its first
    fragment column: per row instruction rm, register 2 rm + h holds what parent register
    (rm, 0, 2 h) holds, row rm * 16 (64 for wgmma) + group + 8 h of the thread's part.
    In `#tile.cols<parent>` (`axis` 1), column c by the threads that hold column c, in the
    registers of the first row instruction: per fragment column rn, register 2 rn + h holds
    what parent register (0, rn, h) holds, column rn * 8 + 2 t + h (lane = 4 group + t)."""

    layout: object  # dialects.layout.Rows
    shape: tuple[int, ...]

    rank = 1

    @property
    def vector_width(self) -> int:
        """Consecutive elements a thread holds in consecutive registers: a column pair."""
        return 2 if self.layout.axis else 1

    @cached_property
    def parent(self) -> MmaDistribution:
        """The parent's distribution over a tile of these rows and one fragment column a warp."""
        p = self.layout.parent
        if self.layout.axis:  # (one row instruction a warp, these columns)
            if isinstance(p, Wgmma):
                return WgmmaDistribution(p, (64 * p.warpgroups[0], self.shape[0]))
            return MmaDistribution(p, (16 * p.warps[0], self.shape[0]))
        if isinstance(p, Wgmma):
            return WgmmaDistribution(p, (self.shape[0], 8 * p.warpgroups[1]))
        return MmaDistribution(p, (self.shape[0], 8 * p.warps[1]))

    @cached_property
    def picks(self) -> list[int]:
        """Per register, the parent register that holds the same row (column)."""
        if self.layout.axis:
            return [self.parent.register(0, rn, h) for rn in range(self.parent.reps[1]) for h in range(2)]
        return [self.parent.register(rm, 0, 2 * h) for rm in range(self.parent.reps[0]) for h in range(2)]

    @property
    def num_registers(self) -> int:
        return len(self.picks)
