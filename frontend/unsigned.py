"""Which integer values are unsigned (Triton's `tl.uint8` .. `tl.uint64`, torch.uint8 .. uint64:
the e8m0 scales of tutorial 10, the uint32 hashes of dropout seeds). MLIR's integers are
signless, so a tile's signedness is not in its type: a value is unsigned where the op that
made it is marked `tile.unsigned` (a load from a uint32 tensor, a cast or constant of
uint32) or, for ops that keep their operand's values (shape ops, `where`, the wrapping
arithmetic and bit ops, loop-carried values), where its operand is. The
frontend asks while it emits (`Tile.dtype`), and picks the unsigned ops from the answer:
`divui`, `remui`, `shrui`, `cmpi ult`, `extui`, `uitofp`, `fptoui`, `maxui`."""

from __future__ import annotations

from mlir import ir

MARK = "tile.unsigned"
SIGNED = "tile.signed"  # (an answer kept while the kernel is emitted: `forget`)

# op -> which operand's signedness its result keeps
_KEEPS = {
    "tile.reshape": 0, "tile.broadcast": 0, "tile.trans": 0, "tile.splat": 0, "tile.gather": 0,
    "tile.convert_layout": 0, "arith.select": 1, "arith.addi": 0, "arith.subi": 0, "arith.muli": 0,
    "arith.andi": 0, "arith.ori": 0, "arith.xori": 0, "arith.shli": 0, "arith.shrui": 0, "arith.divui": 0,
    "arith.remui": 0, "arith.maxui": 0, "arith.minui": 0,
}


def mark(value: ir.Value) -> ir.Value:
    """value, its op marked as making an unsigned integer."""
    value.owner.attributes[MARK] = ir.UnitAttr.get()
    return value


def is_unsigned(value: ir.Value) -> bool:
    """Whether value is unsigned: the answer of the first marked op (or op known signed) up the
    chain of ops that keep their operand's signedness. The answer is kept on every op of that
    kind passed on the way (MARK, or SIGNED until `forget`), so that a static_range's chain of
    adds, asked at every add, is walked once, not once an add."""
    passed, answer = [], False
    for _ in range(100000):  # (a long chain of adds: a static_range's)
        owner = value.owner
        if isinstance(owner, ir.Block):
            parent = owner.owner
            if parent is None:
                break
            op = parent.operation
            n = value.arg_number
            if op.name == "scf.for" and n > 0:  # an iter_arg: its init's
                value = op.operands[2 + n]
            elif op.name == "scf.while":
                value = op.operands[n]
            else:
                break
            continue
        op = owner.operation if hasattr(owner, "operation") else owner
        if MARK in op.attributes or SIGNED in op.attributes:
            answer = MARK in op.attributes
            break
        if op.name in ("scf.for", "scf.while"):
            value = op.operands[(3 if op.name == "scf.for" else 0) + ir.OpResult(value).result_number]
        elif op.name in ("scf.if", "scf.execute_region"):
            value = op.regions[0].blocks[0].operations[-1].operands[ir.OpResult(value).result_number]
        elif op.name in _KEEPS:
            passed.append(op)
            value = op.operands[_KEEPS[op.name]]
        else:
            break
    for op in passed:
        op.attributes[MARK if answer else SIGNED] = ir.UnitAttr.get()
    return answer


def forget(module: ir.Module) -> None:
    """Drop the SIGNED answers `is_unsigned` kept (the IR that passes see has none)."""
    def visit(op):
        if SIGNED in op.attributes:
            del op.attributes[SIGNED]
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
