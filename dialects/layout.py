"""The `#tile.blocked` layout encoding carried by tile (tensor) types.

A blocked layout says how a tile is spread over one program's threads:

    #tile.blocked<[1, 4], [4, 8], [4, 1], [1, 0]>
                  |       |       |       order: dims from fastest to slowest
                  |       |       warps per program, per dim
                  |       threads per warp, per dim (product 32)
                  elements each thread holds contiguously, per dim

Layout assignment (`tile-assign-layouts`) sets it; lowerings read it and never guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mlir import ir

ATTRIBUTE_IRDL = """  irdl.attribute @blocked {
    %p0 = irdl.any
    %p1 = irdl.any
    %p2 = irdl.any
    %p3 = irdl.any
    irdl.parameters(size_per_thread: %p0, threads_per_warp: %p1, warps_per_cta: %p2, order: %p3)
  }"""


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


def encoding_of(ty: ir.Type) -> Blocked | None:
    if not isinstance(ty, ir.RankedTensorType):
        return None
    enc = ir.RankedTensorType(ty).encoding
    return Blocked.parse(enc) if enc is not None else None


def with_encoding(ty: ir.Type, layout: Blocked | None) -> ir.Type:
    t = ir.RankedTensorType(ty)
    return ir.RankedTensorType.get(list(t.shape), t.element_type, layout.attr() if layout else None)
