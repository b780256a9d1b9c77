"""`tile-fuse`: group elementwise ops and reductions into fusion groups.

Our own pass, at the tile level (upstream `linalg-fuse-elementwise-ops` works
later, on linalg, and fuses only single-use producers). A maximal run of
fusible ops in one block (arith/math on tiles or scalars, splat, broadcast,
reshape, reduce) becomes one group. A group lowers to one loop nest per
reduction level whose intermediates never reach memory: loads feed it, its
yielded values feed the stores.

A group is an `scf.execute_region no_inline {tile.fusion_group}`: upstream's
region op already carries results of mixed types (an IRDL variadic cannot),
and `no_inline` keeps canonicalization from dissolving it before
`convert-tile-to-linalg` lowers it.

    # before
    %s = arith.addf %x, %r : tensor<64xf32>
    %m = arith.maximumf %s, %zero : tensor<64xf32>
    %t = "tile.reduce"(%m) {axis = 0 : i32, kind = "sum"} : (tensor<64xf32>) -> f32
    # after
    %t = scf.execute_region -> f32 no_inline {
      %s = arith.addf %x, %r : tensor<64xf32>
      ...
      scf.yield %t : f32
    } {tile.fusion_group}
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from mlir.dialects import scf

from ..dialects.tile_ops import REGISTERS_A
from .registry import register_pass
from .walk import blocks_of

GROUP_ATTR = "tile.fusion_group"
FUSIBLE_TILE_OPS = {"tile.splat", "tile.broadcast", "tile.reshape", "tile.trans", "tile.reduce", "tile.convert_layout"}


K_MAJOR_B = "k_major_b"  # a 16-bit dot whose B is loaded transposed (`tile-k-major-loads`)
M_MAJOR_A = "m_major_a"  # a 16-bit dot whose A is loaded transposed, K x M (`tile-column-loads`)


def _read_as_b(value, marks) -> bool:
    users = [(u.owner, u.operand_number) for u in value.uses]
    return bool(users) and all(o.name == "tile.dot" and n == 1 and any(m in o.attributes for m in marks)
                               for o, n in users)


def read_in_place_b(value) -> bool:
    """Whether only dots that read a transposed ring slot in place read `value`, as their B:
    float8 dots (`passes/fp8_dots.py`) and 16-bit ones whose B was loaded as its N x K
    transpose (`passes/tile_k_major_loads.py`)."""
    return _read_as_b(value, ("fp8_b", K_MAJOR_B))


def read_in_place(value) -> bool:
    """`read_in_place_b`, or only 16-bit dots whose A is loaded as its K x M transpose
    (`passes/tile_column_loads.py`: A = X.T with M contiguous) read `value`, as their A, which
    they read from its ring slot in place, M-major (wgmma's descriptor, ldmatrix `.trans`)."""
    users = [(u.owner, u.operand_number) for u in value.uses]
    return read_in_place_b(value) or bool(users) and all(
        o.name == "tile.dot" and n == 0 and M_MAJOR_A in o.attributes for o, n in users)


def read_as_k_major_b(value) -> bool:
    """Whether only dots that read their B K-major read `value`, as their B: float8 dots
    and those that take A from registers (`tile.registers_a`: `dot_scaled`'s, whose B is the
    transpose of its scaled N x K tile, staged as it lies)."""
    return _read_as_b(value, ("fp8_b", REGISTERS_A))


def fusible(op) -> bool:
    name = op.operation.name
    if name == "tile.trans" and (read_as_k_major_b(op.results[0]) or read_in_place(op.results[0])):
        return False  # (left beside its dots, which read its operand in place: codegen/fp8_operands.py)
    return name in FUSIBLE_TILE_OPS or (name.split(".")[0] in ("arith", "math") and not op.regions)


def through_groups(v):
    """The value a fusion group yields for its result v (v itself otherwise): what later
    passes look through to see how a grouped value was made."""
    while not isinstance(v.owner, ir.Block) and v.owner.operation.name == "scf.execute_region":
        op = v.owner.operation
        v = op.regions[0].blocks[0].operations[-1].operands[ir.OpResult(v).result_number]
    return v


def _is_tile(v) -> bool:
    return isinstance(v.type, ir.RankedTensorType)


def groups_in(block) -> list[list]:
    runs, cur = [], []
    for op in block.operations:
        if fusible(op):
            cur.append(op)
            continue
        runs.append(cur)
        cur = []
    runs.append(cur)
    # A group is worth forming when it holds at least two ops and works on tiles.
    return [r for r in runs if len(r) >= 2 and any(_is_tile(v) for op in r for v in op.results)]


def fuse(group: list) -> None:
    members = {op.operation for op in group}
    escaping = []
    for op in group:
        for v in op.results:
            if any(use.owner not in members for use in v.uses):
                escaping.append(v)
    with ir.InsertionPoint(group[-1]), group[0].location:
        fused = scf.ExecuteRegionOp([v.type for v in escaping], no_inline=True)
    fused.attributes[GROUP_ATTR] = ir.UnitAttr.get()
    fused.move_after(group[-1])
    block = fused.regions[0].blocks.append()
    with ir.InsertionPoint(block), group[-1].location:
        term = scf.YieldOp(escaping)
    for op in group:
        op.move_before(term)
    for v, r in zip(escaping, fused.results):
        for use in list(v.uses):
            if use.owner != term and use.owner not in members:
                use.owner.operands[use.operand_number] = r


@register_pass("tile-fuse")
@dataclass
class TileFuse:
    def run(self, module_op):
        for block in blocks_of(module_op):
            for group in groups_in(block):
                fuse(group)
