"""`tile-assign-layouts`: give every tile value a `#tile.blocked` layout encoding.

Our own pass (upstream has no distributed-layout notion). First version: each
tile gets the default blocked layout for its shape, element width and
`num_warps` (16 bytes per thread along the fastest dim, lanes next, warps on
the slowest dims). Values of one shape therefore agree, so elementwise chains
need no conversion; where an op's operand still disagrees with the layout its
result wants, a `tile.convert_layout` is inserted.

    # before
    %s = arith.addf %x, %y : tensor<1024xf32>
    # after
    %s = arith.addf %x, %y : tensor<1024xf32, #tile.blocked<[4], [32], [4], [0]>>
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..dialects import tile_ops
from ..dialects.layout import Blocked, encoding_of, with_encoding
from .registry import register_pass

# Ops whose operands must share the result's layout (elementwise in effect).
_SAME_LAYOUT = ("arith.", "math.", "tile.load", "tile.store")


def layout_for(ty: ir.RankedTensorType, num_warps: int) -> Blocked:
    elem = ty.element_type
    bits = elem.width if isinstance(elem, ir.IntegerType) else ir.FloatType(elem).width
    return Blocked.default(list(ty.shape), max(bits, 8), num_warps)


@register_pass("tile-assign-layouts")
@dataclass
class TileAssignLayouts:
    num_warps: int = 4

    def run(self, module_op):
        ops = []

        def visit(op):
            ops.append(op)
            return ir.WalkResult.ADVANCE

        module_op.walk(visit, ir.WalkOrder.PRE_ORDER)
        for op in ops:
            values = list(op.results) + [a for r in op.regions for b in r.blocks for a in b.arguments]
            for v in values:
                if isinstance(v.type, ir.RankedTensorType) and encoding_of(v.type) is None:
                    v.set_type(with_encoding(v.type, layout_for(ir.RankedTensorType(v.type), self.num_warps)))
        for op in ops:
            if not op.name.startswith(_SAME_LAYOUT) or not op.results and op.name != "tile.store":
                continue
            want = next((encoding_of(r.type) for r in op.results if encoding_of(r.type)), None)
            for i, v in enumerate(op.operands):
                have = encoding_of(v.type)
                if want and have and have != want:
                    with ir.InsertionPoint(op), op.location:
                        op.operands[i] = tile_ops.convert_layout(v, with_encoding(v.type, want))
