"""The ops `tile-warp-specialize` makes (sm_90a only): which warps a thread belongs to,
the register budget each warpgroup asks for, and the consumers' release of a ring slot.
"""

from __future__ import annotations

from mlir import ir

from .op_definition import create, define
from .tile_ops import _i32, _int_attr


def _verify_warp_role(op):
    first, count, total, regs = (_int_attr(op, a) for a in ("first", "count", "total", "maxnreg"))
    if first < 0 or count < 1 or first + count > total or total * 32 > 1024:
        return f"warps {first} .. {first + count - 1} must lie in a block of {total} warps (at most 32)"
    if not 24 <= regs <= 255:
        return f"maxnreg must be 24 .. 255, got {regs}"


@define("warp_role", results=[("mine", "any")], attributes=["first", "count", "total", "maxnreg"],
        verify=_verify_warp_role, pure=True)
def warp_role(first: int, count: int, total: int, maxnreg: int, *, loc=None, ip=None) -> ir.Value:
    """True in the threads of warps `first` .. `first + count - 1` of a block of `total` warps,
    which starts with `maxnreg` registers a thread (the warpgroups trade them by
    `tile.set_max_registers`).

    %p = "tile.warp_role"() {count = 4 : i32, first = 4 : i32, maxnreg = 128 : i32, total = 8 : i32} : () -> i1
    """
    attrs = {"first": _i32(first), "count": _i32(count), "total": _i32(total), "maxnreg": _i32(maxnreg)}
    return create("warp_role", [ir.IntegerType.get_signless(1)], [], attrs, loc=loc, ip=ip).result


def _verify_set_max_registers(op):
    count = _int_attr(op, "count")
    if not 24 <= count <= 256 or count % 8:
        return f"count must be a multiple of 8 in 24 .. 256, got {count}"


@define("set_max_registers", attributes=["count", "increase"], verify=_verify_set_max_registers)
def set_max_registers(count: int, increase: bool, *, loc=None, ip=None) -> ir.Operation:
    """Every thread of the warpgroup now holds `count` registers (`setmaxnreg.inc` or `.dec`):
    a producer gives back what the consumers take.

    "tile.set_max_registers"() {count = 40 : i32, increase = 0 : i32} : () -> ()
    """
    return create("set_max_registers", [], [], {"count": _i32(count), "increase": _i32(int(increase))}, loc=loc, ip=ip)


@define("mbarrier_arrive", operands=[("barriers", "memref"), ("slot", "i32"), ("live", "any")])
def mbarrier_arrive(barriers, slot, live, *, loc=None, ip=None) -> ir.Operation:
    """If `live`, lane 0 of every warp arrives on mbarrier `slot` (a slot's `empty` barrier
    expects one arrival per consumer warp): this warp is done reading the slot.

    "tile.mbarrier_arrive"(%empty, %slot, %live) : (memref<3xi64, #gpu.address_space<workgroup>>, i32, i1) -> ()
    """
    return create("mbarrier_arrive", [], [barriers, slot, live], loc=loc, ip=ip)
