"""`tile.atomic_rmw` / `tile.atomic_cas` in the linalg lowering: one `memref.atomic_rmw`
(a compare-and-swap: an `llvm.cmpxchg`; a 16-bit float add: a loop of them) per element
under its mask.

    %old = "tile.atomic_cas"(%lock, %c0, %cmp, %v, %true) {scope = "gpu", sem = "acq_rel"} : (...) -> i32
    # after
    %old = scf.if %true -> (i32) {
      %p = llvm.inttoptr %address : i64 to !llvm.ptr
      %pair = llvm.cmpxchg %p, %cmp, %v acq_rel acquire : !llvm.ptr, i32
      %r = llvm.extractvalue %pair[0] : !llvm.struct<(i32, i1)>
      scf.yield %r : i32
    } else { scf.yield %c0_i32 : i32 }

`sem` and `scope` are for a GPU: the CPU runs a program in one thread and its programs
one after another, so the strongest order costs nothing there (and a spin lock taken by a
program is free again when the next one starts).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, bufferization, func, llvm, memref, scf, tensor

from ...passes.registry import register_pass
from ...passes.walk import collect

from ..common.ir_builders import flat_view, if_else, parallel_loop, to_index
from ..common.lowerings import lowering
from ..common.predicated_access import ByteAddress

# kind -> (integer, float) arith.atomicrmw kind
ATOMIC_RMW = {
    "add": (arith.AtomicRMWKind.addi, arith.AtomicRMWKind.addf),
    "max": (arith.AtomicRMWKind.maxs, arith.AtomicRMWKind.maximumf),
    "min": (arith.AtomicRMWKind.mins, arith.AtomicRMWKind.minimumf),
    "and": (arith.AtomicRMWKind.andi, None),
    "or": (arith.AtomicRMWKind.ori, None),
    "xor": (arith.AtomicRMWKind.xori, None),
    "xchg": (arith.AtomicRMWKind.assign, arith.AtomicRMWKind.assign),
}


def _bits(v):
    """An integer of v's bits (floats compare bit for bit in a compare-and-swap, as PTX's atom.cas)."""
    if isinstance(v.type, ir.IntegerType):
        return v
    return arith.bitcast(ir.IntegerType.get_signless(ir.FloatType(v.type).width), v)


_CAS = "__tile_cas_i"  # + bits: (i64 address, iN cmp, iN value) -> iN old, made inline by `tile-inline-cas`


def _compare_and_swap(address, cmp, v):
    """A call of `__tile_cas_iN` at an i64 address; the old value, of v's type. (memref has no
    compare-and-swap; `llvm.cmpxchg` and memref's generic_atomic_rmw are ops that buffer
    deallocation rejects, so the call stands for the cmpxchg until `tile-inline-cas`.)"""
    word = v.type if isinstance(v.type, ir.IntegerType) else ir.IntegerType.get_signless(ir.FloatType(v.type).width)
    name = f"{_CAS}{ir.IntegerType(word).width}"
    module = ir.InsertionPoint.current.block.owner.operation
    while module.name != "builtin.module":
        module = module.parent.operation
    module_block = module.regions[0].blocks[0]
    if not any(ir.StringAttr(o.attributes["sym_name"]).value == name for o in module_block.operations
               if o.operation.name == "func.func"):
        with ir.InsertionPoint.at_block_begin(module_block):
            func.FuncOp(name, ir.FunctionType.get([ir.IntegerType.get_signless(64), word, word], [word]),
                               visibility="private")
    old = func.CallOp([word], ir.FlatSymbolRefAttr.get(name), [address, _bits(cmp), _bits(v)]).result
    return old if old.type == v.type else arith.bitcast(v.type, old)


@register_pass("tile-inline-cas")
@dataclass
class InlineCompareAndSwap:
    """Each `__tile_cas_iN` call -> `llvm.cmpxchg` (acq_rel: the CPU runs a program's
    elements in one thread, so order costs nothing), after buffer deallocation."""

    def run(self, module_op):
        for call in collect(module_op, {"func.call"}):
            if not ir.FlatSymbolRefAttr(call.attributes["callee"]).value.startswith(_CAS):
                continue
            address, cmp, v = call.operands
            with ir.InsertionPoint(call), call.location:
                ptr = llvm.inttoptr(llvm.PointerType.get(), address)
                pair = llvm.AtomicCmpXchgOp(ptr, cmp, v, llvm.AtomicOrdering.acq_rel, llvm.AtomicOrdering.acquire).result
                call.results[0].replace_all_uses_with(llvm.extractvalue(v.type, pair, [0]))
            call.erase()
        for decl in collect(module_op, {"func.func"}):
            if ir.StringAttr(decl.attributes["sym_name"]).value.startswith(_CAS):
                decl.erase()


def _add_loop(flat, address, off, v):
    """A float add by compare-and-swap until no other update came between (16-bit floats: no
    host need have their atomicrmw); the old value."""
    loop = scf.WhileOp([v.type], [memref.LoadOp(flat, [to_index(off)]).result])
    before = loop.before.blocks.append(v.type)
    with ir.InsertionPoint(before):
        cur = before.arguments[0]
        got = _compare_and_swap(address, cur, arith.addf(cur, v))
        scf.ConditionOp(arith.cmpi(arith.CmpIPredicate.ne, _bits(got), _bits(cur)), [got])
    after = loop.after.blocks.append(v.type)
    with ir.InsertionPoint(after):
        scf.YieldOp([after.arguments[0]])
    return loop.results[0]


def atomic_update(op, flat):
    """update(offset, value, mask, cmp=None) for a `tile.atomic_rmw` / `tile.atomic_cas` on
    the flat view of its base: one element's atomic where mask holds, its old value (0 where not)."""
    elem = ir.MemRefType(flat.type).element_type
    is_float = isinstance(elem, ir.FloatType)
    zero = arith.ConstantOp(elem, 0.0 if is_float else 0).result
    address = ByteAddress(flat, elem)
    if op.operation.name == "tile.atomic_cas":
        def atomic(off, v, cmp):
            return _compare_and_swap(address(off), cmp, v)
    elif ir.StringAttr(op.attributes["kind"]).value in ("load", "store"):  # (atomic_load, atomic_store: one thread)
        store = ir.StringAttr(op.attributes["kind"]).value == "store"

        def atomic(off, v, _cmp):
            old = memref.LoadOp(flat, [to_index(off)]).result
            if store:
                memref.StoreOp(v, flat, [to_index(off)])
            return old
    elif is_float and ir.FloatType(elem).width == 16:
        def atomic(off, v, _cmp):
            return _add_loop(flat, address(off), off, v)
    else:
        rmw = ATOMIC_RMW[ir.StringAttr(op.attributes["kind"]).value][is_float]

        def atomic(off, v, _cmp):
            return memref.AtomicRMWOp(rmw, v, flat, [to_index(off)]).result

    def update(off, v, m, cmp=None):
        return if_else(m, elem, lambda: atomic(off, v, cmp), lambda: zero)

    return update


@lowering("tile.atomic_rmw", "tile.atomic_cas", target="cpu")
def lower_atomic(op):
    # In an scf.parallel like a store's (a linalg.generic whose result nothing reads may be
    # erased, its atomics with it); the old values, where read, through a buffer of their own.
    base, offsets, *values, mask = op.operands  # values: (value,) or, for a compare-and-swap, (cmp, value)
    elem = ir.MemRefType(base.type).element_type
    update = atomic_update(op, flat_view(base))

    def apply(pick):
        got = [pick(v) for v in values]
        return update(pick(offsets), got[-1], pick(mask), *got[:-1])

    if not isinstance(offsets.type, ir.RankedTensorType):
        return apply(lambda v: v)
    ty = ir.RankedTensorType(values[-1].type)
    used = bool(list(op.results[0].uses))
    old = memref.AllocOp(ir.MemRefType.get(list(ty.shape), elem), [], []).result if used else None
    i8 = ir.IntegerType.get_signless(8)
    mask8 = arith.extui(ir.RankedTensorType.get(list(ty.shape), i8), mask)  # (memref cannot hold i1)
    zero8 = arith.ConstantOp(i8, 0).result

    def body(ivs):
        def pick(v):
            got = tensor.ExtractOp(mask8 if v == mask else v, ivs).result
            return arith.cmpi(arith.CmpIPredicate.ne, got, zero8) if v == mask else got

        got = apply(pick)
        if used:
            memref.StoreOp(got, old, ivs)

    parallel_loop(list(ty.shape), body)
    return bufferization.ToTensorOp(ty, old, restrict=True).result if used else None


@lowering("tile.barrier", target="cpu")
def lower_barrier(op):
    """Nothing: the CPU runs each program in one thread."""
    return None
