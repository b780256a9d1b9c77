"""The shared-memory swizzle the compiler reads by (`SharedTile.offset`, by row) agrees
with the one TMA and wgmma apply (by address) in every slot of a ring: checked on the
CPU by evaluating the offsets the codegen emits, against the hardware's swizzle as
CUTLASS writes it (`Swizzle<B, 4, 3>`: address bits [4, 4 + B) XOR bits [7, 7 + B), with
B = 1, 2, 3 for the 32-, 64- and 128-byte swizzles). A 1-row tile once failed this
(swizzled, its ring's second slot started 128 bytes in): the GPU read it permuted."""

import pytest
from mlir import ir
from mlir.dialects import arith

from tile.codegen.gpu.distributed_async_copy import Ring
from tile.dialects.layout import element_bits

_OPS = {"arith.addi": int.__add__, "arith.muli": int.__mul__, "arith.shrui": int.__rshift__,
        "arith.shli": int.__lshift__, "arith.andi": int.__and__, "arith.xori": int.__xor__,
        "arith.ori": int.__or__}


def _value(v) -> int:
    """The value of an i32 built from constants by the ops `SharedTile.offset` emits."""
    op = v.owner
    if op.name == "arith.constant":
        return ir.IntegerAttr(op.attributes["value"]).value
    a, b = (_value(x) for x in op.operands)
    return _OPS[op.name](a, b)


def _hardware(addr: int, swizzle: int) -> int:
    bits = {0: 0, 32: 1, 64: 2, 128: 3}[swizzle]
    return addr ^ (((addr >> 7) & ((1 << bits) - 1)) << 4)


@pytest.mark.parametrize("rows, cols, elem, stages", [
    (1, 64, "bf16", 2),     # a row of scales (INT4), one 128-byte panel
    (1, 128, "bf16", 3),    # two panels of one row
    (2, 64, "bf16", 4),
    (3, 64, "bf16", 2),
    (8, 64, "bf16", 2),     # one swizzle period a panel
    (64, 64, "bf16", 2),
    (64, 128, "i8", 2),
    (16, 32, "bf16", 3),    # 64-byte lines
    (8, 16, "bf16", 2),     # 32-byte lines
    (32, 128, "bf16", 2),   # two 128-byte panels
])
def test_ring_slots_agree_with_the_hardware_swizzle(rows, cols, elem, stages):
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            i32 = ir.IntegerType.get_signless(32)

            def const(v):
                return arith.ConstantOp(i32, v).result

            t = ir.Type.parse(elem)
            eb = element_bits(t) // 8
            ring = Ring(None, stages, rows, cols, t, 0)  # (a ring's buffer starts on 1024 bytes)
            for s in range(stages):
                tile = ring.slot(const(s))
                panel, swizzle = tile.panel, tile.swizzle_bytes
                for r in range(rows):
                    for c in range(0, cols, 16 // eb):  # each 16-byte unit
                        # where a TMA box (rows x panel, dense) puts (r, c), then the hardware swizzle
                        linear = s * ring.slot_bytes + ((c // panel) * rows + r) * panel * eb + c % panel * eb
                        got = _value(tile.offset(const(r), const(c))) * eb
                        assert got == _hardware(linear, swizzle), (s, r, c, swizzle)
