"""`tile-canonicalize`: erase, merge and fold tile ops, which `canonicalize` and `cse` cannot.

The tile dialect is declared in IRDL at run time, and IRDL (in this MLIR 22 wheel) gives
an op no traits, no side-effect interface and no folder: to MLIR every tile op may write
memory, so `canonicalize` keeps a dead `tile.splat` and `cse` never merges two identical
`tile.program_id`. This pass supplies what the traits would have, from the one table of
pure ops (`OpDef.pure`, declared with each op in `dialects/tile_ops.py`), as rewrite
patterns on MLIR's greedy driver.

The default tile-opt stage runs it with `merge=0` (`codegen/pipelines.py` says why).
A splat of a constant stays a `tile.splat`: as an `arith.constant dense<...>` tensor it
would reach `tile-assign-layouts`, which gives it an encoded type but cannot re-type its
value attribute (the op then fails to verify).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.rewrite import GreedyRewriteConfig, GreedySimplifyRegionLevel, RewritePatternSet, apply_patterns_and_fold_greedily

from ..dialects.op_definition import REGISTRY, create
from .column_halves import column_half
from .registry import register_pass

NO_MATCH = True  # what a pattern returns to leave the op alone (None: it matched)


def pure_ops() -> list[str]:
    """The full names of the tile ops declared pure."""
    return [d.full_name for d in REGISTRY.values() if d.pure]


def _owner(value) -> ir.OpView | None:
    op = value.owner
    return op if isinstance(op, ir.OpView) else None


def erase_dead(op, rewriter):
    # %t = "tile.splat"(%x) (no uses) -> (nothing)
    if all(not list(r.uses) for r in op.results):
        rewriter.erase_op(op.operation)
        return None
    return NO_MATCH


def _key(op) -> tuple:
    attrs = sorted((name, str(op.attributes[name])) for name in op.attributes)
    return (op.name, tuple(op.operands), tuple(attrs), tuple(str(r.type) for r in op.results))


def merge_identical(op, rewriter):
    # %a = "tile.arange"() {..}; %b = "tile.arange"() {..} (the same) -> %b replaced by %a
    key, earlier = _key(op), op.operation.block.operations
    for other in earlier:
        if other.operation == op.operation:
            return NO_MATCH
        if other.name == op.name and _key(other) == key:
            rewriter.replace_op(op, list(other.results))
            return None
    return NO_MATCH


def same_type_identity(op, rewriter):
    # %r = "tile.reshape"(%t) : (tensor<4x8xf32>) -> tensor<4x8xf32> -> %t
    # (also tile.broadcast and tile.convert_layout to the operand's own type)
    if op.operands[0].type == op.result.type:
        rewriter.replace_op(op, [op.operands[0]])
        return None
    return NO_MATCH


def identity_trans(op, rewriter):
    # %r = "tile.trans"(%t) {permutation = array<i32: 0, 1>} -> %t
    perm = list(ir.DenseI32ArrayAttr(op.attributes["permutation"]))
    if perm == list(range(len(perm))) and op.operands[0].type == op.result.type:
        rewriter.replace_op(op, [op.operands[0]])
        return None
    return NO_MATCH


def fold_into_producer(producer: str, new: str):
    """A pattern: the op applied to the result of a `producer` op becomes one `new` op of the
    producer's operand, with the op's own result type."""

    def rewrite(op, rewriter):
        src = _owner(op.operands[0])
        if src is None or src.name != producer:
            return NO_MATCH
        with rewriter.ip, op.location:
            folded = create(new, [op.result.type], [src.operands[0]])
        rewriter.replace_op(op, folded)
        return None

    return rewrite


def _zero_splat(value) -> bool:
    op = _owner(value)
    const = _owner(op.operands[0]) if op is not None and op.name == "tile.splat" else None
    if const is None or const.name != "arith.constant":
        return False
    attr = const.attributes["value"]
    if isinstance(attr, ir.IntegerAttr):
        return ir.IntegerAttr(attr).value == 0
    return isinstance(attr, ir.FloatAttr) and ir.FloatAttr(attr).value == 0.0


def add_into_dot(op, rewriter):
    # %d = "tile.dot"(%a, %b, %zeros) (its one use); %s = arith.addi %acc, %d -> %s = "tile.dot"(%a, %b, %acc)
    # (an int8 dot's `acc += dot(a, b)`: exact in either order, as Triton's CombineDotAddIPattern; else
    # the loop would carry a second accumulator, which spilled at 128 x 128 on 4 warps)
    # %d = "tile.dot"(%a, %b, %zeros); %s = arith.addf %acc, %d -> %s = "tile.dot"(%a, %b, %acc)
    # (a float one, vLLM's fused MoE `accumulator += tl.dot(a, b)`: Triton's CombineDotAddFPattern, the
    # sum's rounding order changed as Triton's is; the second accumulator and its 64 adds a K step
    # took the kernel to 255 registers and twice Triton's instructions)
    for d, acc in ((op.operands[1], op.operands[0]), (op.operands[0], op.operands[1])):
        dot = _owner(d)
        if dot is not None and dot.name == "tile.dot" and len(list(d.uses)) == 1 and _zero_splat(dot.operands[2]) \
                and dot.results[0].type == op.result.type:
            with rewriter.ip, op.location:
                folded = create("dot", [op.result.type], [dot.operands[0], dot.operands[1], acc],
                                {name: dot.attributes[name] for name in dot.attributes})  # (its input_precision)
            rewriter.replace_op(op, folded)
            return None
    return NO_MATCH


def patterns(merge: bool = True, fold: bool = True) -> RewritePatternSet:
    """The pass's patterns: dead-op erasure (and merging) for every pure op, then the folds."""
    out = RewritePatternSet()
    for name in pure_ops():
        out.add(name, erase_dead, benefit=3)
        if merge:
            out.add(name, merge_identical, benefit=2)
    if fold:
        for name in ("tile.reshape", "tile.broadcast", "tile.convert_layout"):
            out.add(name, same_type_identity)
        out.add("tile.trans", identity_trans)
        # %a = "tile.reshape"(%t); %b = "tile.reshape"(%a) -> %b = "tile.reshape"(%t)
        out.add("tile.reshape", fold_into_producer("tile.reshape", "reshape"))
        # %s = "tile.splat"(%x) : tensor<1x64xf32>; %b = "tile.broadcast"(%s) : tensor<32x64xf32>
        #   -> %b = "tile.splat"(%x) : tensor<32x64xf32>
        out.add("tile.broadcast", fold_into_producer("tile.splat", "splat"))
        # split(permute(reshape(acc, (M, 2, N / 2)), (0, 2, 1))) -> two column slices of acc
        out.add("tile.reshape", column_half)
        out.add("arith.addi", add_into_dot)
        out.add("arith.addf", add_into_dot)
    return out


def erase_dead_ops(op) -> None:
    """MLIR's dead-code elimination over the function holding `op`, for the passes that leave
    ops without users behind: the greedy driver erases every upstream op that MLIR finds
    trivially dead, and the `erase_dead` pattern every pure tile op nothing reads (and every
    load but a volatile one). Nothing is folded, merged or simplified: only what nothing uses
    goes."""
    root = op.operation
    while root.name not in ("func.func", "builtin.module") and root.parent is not None:
        root = root.parent  # (the driver works on an op isolated from above)
    config = GreedyRewriteConfig()
    config.enable_folding = False
    config.enable_constant_cse = False
    config.region_simplification_level = GreedySimplifyRegionLevel.DISABLED
    dead = patterns(merge=False, fold=False)
    dead.add("tile.load", erase_unread_load, benefit=3)
    dead.add("scf.execute_region", erase_unread_group, benefit=3)
    apply_patterns_and_fold_greedily(root, dead.freeze(), config)


_NO_EFFECTS = ("arith.", "math.")  # upstream dialects whose ops only compute


def _only_reads(op) -> bool:
    if op.name in ("scf.yield", "scf.execute_region") or op.name.startswith(_NO_EFFECTS) or op.name in pure_ops():
        return all(_only_reads(o) for r in op.regions for b in r.blocks for o in b.operations)
    return op.name == "tile.load" and "volatile" not in op.attributes


def erase_unread_group(op, rewriter):
    # %g:2 = scf.execute_region { ... tile.load ...; scf.yield ... } (no uses, reads only) -> (nothing)
    # (a fusion group of `tile-fuse`: MLIR cannot tell that its tile ops only read)
    if any(list(r.uses) for r in op.results) or not _only_reads(op.operation):
        return NO_MATCH
    rewriter.erase_op(op.operation)
    return None


def erase_unread_load(op, rewriter):
    # %v = "tile.load"(%p, %offs, %mask, %other) (no uses, not volatile) -> (nothing)
    # (a load only reads: MLIR's trivially-dead rule for an op whose effects are reads alone)
    if "volatile" in op.attributes:
        return NO_MATCH
    return erase_dead(op, rewriter)


@register_pass("tile-canonicalize")
@dataclass
class TileCanonicalize:
    merge: bool = True  # merge identical pure ops of a block
    fold: bool = True  # the folds of reshapes, broadcasts, transposes, layout conversions and int8 dots' adds

    def run(self, module):
        # No folding of the upstream ops: arith.xori(%x, %x) would become a dense tensor constant,
        # which tile-assign-layouts cannot re-type (canonicalize folds it where a stage allows).
        config = GreedyRewriteConfig()
        config.enable_folding = False
        config.enable_constant_cse = False
        apply_patterns_and_fold_greedily(module, patterns(self.merge, self.fold).freeze(), config)
