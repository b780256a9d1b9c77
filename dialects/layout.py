"""The layout encodings carried by tile (tensor) types: `#tile.blocked`, `#tile.mma`, `#tile.wgmma`, `#tile.rows`, `#tile.cols`.

A blocked layout says how a tile is spread over one program's threads:

    #tile.blocked<[1, 4], [4, 8], [4, 1], [1, 0]>
                  |       |       |       order: dims from fastest to slowest
                  |       |       warps per program, per dim
                  |       threads per warp, per dim (product 32; less in a slice, whose lanes hold copies)
                  elements each thread holds contiguously, per dim

A `dot`'s accumulator takes a tensor-core layout instead: `#tile.mma<[2, 2]>`
(a grid of warps, each holding m16n8 fragments of `mma.sync`) or, on sm_90a,
`#tile.wgmma<[2, 1]>` (a grid of warpgroups, each issuing 64-row `wgmma`s).
A 1-D tile of one value per row of such a tile (attention's running row maximum
and sum) can take `#tile.rows<#tile.wgmma<[2, 1]>>`: each thread holds the rows
it holds of the parent, as Triton's slice of an mma layout; one value per column
(a vector broadcast over the columns), `#tile.cols<...>`, the columns it holds.

Layout assignment (`tile-assign-layouts`) sets it; lowerings read it and never guess.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

from mlir import ir

ATTRIBUTE_IRDL = """  irdl.attribute @blocked {
    %p0 = irdl.any
    %p1 = irdl.any
    %p2 = irdl.any
    %p3 = irdl.any
    irdl.parameters(size_per_thread: %p0, threads_per_warp: %p1, warps_per_cta: %p2, order: %p3)
  }
  irdl.attribute @mma {
    %w = irdl.any
    irdl.parameters(warps: %w)
  }
  irdl.attribute @wgmma {
    %g = irdl.any
    irdl.parameters(warpgroups: %g)
  }
  irdl.attribute @rows {
    %p = irdl.any
    irdl.parameters(parent: %p)
  }
  irdl.attribute @cols {
    %p = irdl.any
    irdl.parameters(parent: %p)
  }"""


def element_bits(elem: ir.Type) -> int:
    """Bits an element takes in memory (i1 is stored as a byte; index as 64 bits)."""
    if isinstance(elem, ir.IntegerType):
        return max(elem.width, 8)
    if isinstance(elem, ir.IndexType):
        return 64
    return ir.FloatType(elem).width


MAX_SHARED = 227 * 1024  # bytes of shared memory an H100/H200 block can have
BLOCK_SHARED = {"sm_80": 163 * 1024}  # targets whose blocks have less (an A100's opt-in limit)
SM_SHARED = 228 * 1024  # an SM's, shared by its resident blocks, 1 KB each reserved on top of theirs


def shared_panel(rows: int, cols: int, elem_bits: int) -> tuple[int, int]:
    """How a rows x cols tile is laid out in shared memory: (columns per panel, swizzle
    bytes). Rows wider than 128 bytes are cut into 128-byte panels stored one after the
    other; a panel row of 2, 4 or 8 16-byte units is XOR-swizzled (the hardware's 32-, 64-
    and 128-byte swizzles, which wgmma and TMA read and write); 0: not swizzled. Only
    tiles of a multiple of 8 rows are swizzled: the hardware swizzles by address bits, and
    only then does every panel (and every slot of a ring of such tiles) start on the
    swizzle's period of 8 lines, where its pattern and `SharedTile`'s, by row, agree."""
    unit = 128 // elem_bits  # elements per 16 bytes
    panel = 8 * unit if cols > 8 * unit and cols % (8 * unit) == 0 else cols
    units = panel // unit
    swizzled = rows % 8 == 0 and panel % unit == 0 and units >= 2 and units & (units - 1) == 0
    return panel, (panel * elem_bits // 8 if swizzled else 0)


@dataclass(frozen=True)
class Blocked:
    size_per_thread: tuple[int, ...]
    threads_per_warp: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    order: tuple[int, ...]

    def __str__(self) -> str:
        lists = (self.size_per_thread, self.threads_per_warp, self.warps_per_cta, self.order)
        return "#tile.blocked<" + ", ".join("[" + ", ".join(map(str, l)) + "]" for l in lists) + ">"

    def attr(self) -> ir.Attribute:
        return ir.Attribute.parse(str(self))

    def slice(self, keep: int) -> "Blocked | None":
        """The 1-D layout of dim `keep` of this 2-D layout: each thread holds the coordinates
        along `keep` it holds here (lanes and warps along the other dim hold copies). None
        where a 1-D layout cannot say it: `keep` has several lanes (or warps) but is not the
        fastest-varying dim of the lane (warp) id."""
        if len(self.order) != 2:
            return None
        first = self.order[0]
        if keep != first and (self.threads_per_warp[keep] > 1 and self.threads_per_warp[first] > 1
                              or self.warps_per_cta[keep] > 1 and self.warps_per_cta[first] > 1):
            return None
        return Blocked((self.size_per_thread[keep],), (self.threads_per_warp[keep],), (self.warps_per_cta[keep],), (0,))

    @staticmethod
    def parse(attr: ir.Attribute) -> "Blocked | None":
        text = str(attr)
        if not text.startswith("#tile.blocked<"):
            return None
        lists = [tuple(int(x) for x in re.findall(r"-?\d+", l)) for l in re.findall(r"\[([^\]]*)\]", text)]
        return Blocked(*lists)

    @staticmethod
    def default(shape: list[int], elem_bits: int, num_warps: int) -> "Blocked":
        """Triton-like default: up to 16 bytes per thread along the fastest dim,
        then lanes along that dim, then warps along the slowest dims."""
        rank = len(shape)
        order = tuple(range(rank - 1, -1, -1))
        spt, tpw, wpc = [1] * rank, [1] * rank, [1] * rank
        inner = rank - 1
        total = 1
        for d in shape:
            total *= d
        # Up to 16 bytes per thread, but not more than an even share: a tile
        # smaller than the block should not leave warps holding copies.
        share = max(1, total // (32 * num_warps))
        spt[inner] = max(1, min(shape[inner], 128 // elem_bits, share))
        if rank > 1 and 1 < shape[inner] == spt[inner] < 128 // elem_bits:
            # A short last dim (a join's pair) whole in a thread: rows next, so that a thread's
            # elements are still 16 consecutive bytes (and the 1-D tiles joined, its slice, several).
            spt[inner - 1] = max(1, min(shape[inner - 1], 128 // elem_bits // spt[inner], share // spt[inner]))
        lanes = 32
        for d in order:
            room = max(1, shape[d] // (spt[d] * tpw[d]))
            take = min(lanes, room)
            tpw[d] *= take
            lanes //= take
        tpw[order[-1]] *= lanes
        warps = num_warps
        for d in reversed(order):
            room = max(1, shape[d] // (spt[d] * tpw[d]))
            take = min(warps, room)
            wpc[d] *= take
            warps //= take
        wpc[order[0]] *= warps
        return Blocked(tuple(spt), tuple(tpw), tuple(wpc), order)


class _Grid:
    """A tensor-core accumulator layout named by one grid of two numbers, `#tile.<NAME><[a, b]>`."""

    NAME = ""
    order = (1, 0)  # a thread's two values in a fragment row are neighbours

    def __str__(self) -> str:
        a, b = dataclasses.astuple(self)[0]
        return f"#tile.{self.NAME}<[{a}, {b}]>"

    def attr(self) -> ir.Attribute:
        return ir.Attribute.parse(str(self))

    @classmethod
    def parse(cls, attr: ir.Attribute):
        text = str(attr)
        if not text.startswith(f"#tile.{cls.NAME}<"):
            return None
        return cls(tuple(int(x) for x in re.findall(r"\d+", text)))


@dataclass(frozen=True)
class Mma(_Grid):
    """The accumulator layout of `mma.sync.m16n8k16`: `#tile.mma<[2, 2]>` puts a
    2 x 2 grid of warps on the tile; each warp repeats 16 x 8 accumulator
    fragments over its part, each thread holding 4 values of each fragment.
    """

    warps: tuple[int, int]
    NAME = "mma"

    @staticmethod
    def for_shape(shape: list[int], num_warps: int) -> "Mma | None":
        """The warp grid whose warp tiles are the most square (fewest shared-memory fragment
        reads per mma: 1/tm + 1/tn smallest), more warps along M on a tie; None if the tile
        does not fit whole fragments."""
        if len(shape) != 2:
            return None
        best = None
        wm = num_warps
        while wm >= 1:
            wn = num_warps // wm
            if shape[0] % (16 * wm) == 0 and shape[1] % (8 * wn) == 0:
                cost = wm / shape[0] + wn / shape[1]
                if best is None or cost < best[0] - 1e-12:
                    best = (cost, (wm, wn))
            wm //= 2
        return Mma(best[1]) if best else None


@dataclass(frozen=True)
class Wgmma(_Grid):
    """The accumulator layout of `wgmma.mma_async.m64nNk16` (sm_90a):
    `#tile.wgmma<[2, 1]>` puts a 2 x 1 grid of warpgroups (4 warps each) on the
    tile; a warpgroup repeats 64 x N instructions down its part, warp w of the
    group holding rows 16 (w % 4) .. +15 of each, in the m16n8 fragment
    pattern of `#tile.mma` along N.
    """

    warpgroups: tuple[int, int]
    NAME = "wgmma"
    MAX_N = 256  # the widest wgmma

    @staticmethod
    def takes_k(k: int, elem_bits: int) -> bool:
        """Whether wgmma reads a K-wide operand of `elem_bits` elements from swizzled shared
        tiles: 16-bit (k16 steps) or 8-bit (k32), rows of 32 or 64 bytes or of whole 128-byte panels."""
        row = k * elem_bits // 8
        return elem_bits in (8, 16) and (row in (32, 64) or row % 128 == 0)

    @staticmethod
    def for_shape(shape: list[int], num_warps: int) -> "Wgmma | None":
        """Warpgroups along M first (each then issues the widest N), as long as each
        part is whole 64-row instructions and N at most 256, either whole 64-column
        panels of the swizzled operand or, with one group along N, 16 or 32
        columns; None if no grid fits."""
        if len(shape) != 2 or num_warps % 4:
            return None
        groups = num_warps // 4
        gm = groups
        while gm >= 1:
            gn = groups // gm
            n = shape[1] // gn
            whole_panels = n % 64 == 0 or (gn == 1 and n in (16, 32))
            if shape[0] % (64 * gm) == 0 and shape[1] % gn == 0 and n <= Wgmma.MAX_N and whole_panels:
                return Wgmma((gm, gn))
            gm //= 2
        return None


@dataclass(frozen=True)
class Rows:
    """A 1-D tile with one value per row of a tensor-core tile, where each thread holds the
    rows it holds of that tile (`#tile.rows<#tile.wgmma<[2, 1]>>`; Triton's slice of an mma
    layout along its columns): 2 rows a thread per 16-row (`#tile.mma`) or 64-row
    (`#tile.wgmma`) instruction, the rows `group` and `group + 8` of its m16n8 fragments. A
    row's maximum or sum, reduced in the parent's registers, is already where this layout
    wants it, and so is a broadcast of it back over the row: neither goes through shared
    memory. Only for parents whose warps hold whole rows (one warp, or warpgroup, along N)."""

    parent: "Mma | Wgmma"
    axis: int = 0  # 1: one value per column (`#tile.cols<parent>`), as the threads hold the parent's columns

    def __str__(self) -> str:
        return f"#tile.{('rows', 'cols')[self.axis]}<{self.parent}>"

    def attr(self) -> ir.Attribute:
        return ir.Attribute.parse(str(self))

    @staticmethod
    def parse(attr: ir.Attribute) -> "Rows | None":
        text = str(attr)
        for axis, tag in enumerate(("#tile.rows<", "#tile.cols<")):
            if text.startswith(tag):
                inner = text[len(tag):-1]
                parent = Mma.parse(inner) if inner.startswith("#tile.mma<") else Wgmma.parse(inner)
                return Rows(parent, axis) if parent else None
        return None

    @staticmethod
    def of(parent, axis: int = 0) -> "Rows | None":
        """The rows (axis 1: columns) layout of a tensor-core layout whose warps hold whole
        rows, every warp then all the columns; else None."""
        if isinstance(parent, Wgmma) and parent.warpgroups[1] == 1 or isinstance(parent, Mma) and parent.warps[1] == 1:
            return Rows(parent, axis)
        return None


def encoding_of(ty: ir.Type) -> "Blocked | Mma | Wgmma | Rows | None":
    if not isinstance(ty, ir.RankedTensorType):
        return None
    enc = ir.RankedTensorType(ty).encoding
    if enc is None:
        return None
    return Blocked.parse(enc) or Mma.parse(enc) or Wgmma.parse(enc) or Rows.parse(enc)


def with_encoding(ty: ir.Type, layout) -> ir.Type:
    t = ir.RankedTensorType(ty)
    return ir.RankedTensorType.get(list(t.shape), t.element_type, layout.attr() if layout else None)


def layout_error(layout, num_warps: int) -> str | None:
    """Why a tile's layout does not fit a block of num_warps warps of 32 lanes, or None (fewer
    lanes or warps hold copies). The distributed lowering trusts it: a tile-opt stage compiled
    at 8 warps and restarted at 4 built a kernel whose missing warps' elements were never
    computed."""
    if isinstance(layout, Rows):
        layout = layout.parent
    if layout is None:
        return None
    lanes = math.prod(layout.threads_per_warp) if isinstance(layout, Blocked) else 32
    if isinstance(layout, Blocked):
        warps = math.prod(layout.warps_per_cta)
    else:
        warps = math.prod(layout.warps) if isinstance(layout, Mma) else 4 * math.prod(layout.warpgroups)
    if 32 % lanes:
        return f"{layout} puts {lanes} lanes in a warp, which has 32"
    if num_warps % warps:
        return f"{layout} spreads a tile over {warps} warps, but the kernel has {num_warps}"
    return None
