"""`tile.atomic_rmw` / `tile.atomic_cas` in the distributed GPU codegen: every element
combined once, by a predicated `atom` with the op's memory order and scope.

A layout may give one element to several threads (a tile smaller than its layout's CTA
tile wraps around; a slice layout's lanes, or a row layout's quad, hold copies): a store
may write the element from each copy, an atomic must not. Each register's update runs in
the thread that holds the element's first copy, where its mask holds:

    # before
    %old = "tile.atomic_rmw"(%y, %offs, %v, %mask) {kind = "add", scope = "gpu", sem = "acq_rel"} : (...) -> tensor<256xf32, ...>
    # after, per register r: inline PTX, as Triton emits it
    mov.b32 %old_r, 0;  @%p_r atom.acq_rel.gpu.global.add.f32 %old_r, [%addr_r], %v_r;    (p_r: mask_r & first_copy_r)

Inline PTX because LLVM's NVPTX backend drops an `atomicrmw`'s order and scope (it emits
a relaxed `atom.add`). A float max (min) is Triton's pair of integer atomics: a signed max
(min) of the bits where the value is >= 0, else an unsigned min (max). Where the old values
are used, the copies read them back from shared memory, where the first copies wrote them;
a scalar atomic runs in thread 0, and every thread reads its old value back.

On sm_90 a float add whose old values go unused takes a thread's run of consecutive,
aligned elements under one mask (axis info, as a vector load) in one vector `atom`, as
Triton's does: a quarter of the instructions for f32 (an RMSNorm's dW rows, atomically
summed over 132 programs).

    # after, per run of 4 registers from r
    @%p_r atom.acq_rel.gpu.global.add.v4.f32 {%t0, ..., %t3}, [%addr_r], {%v_r, ..., %v_r+3};
"""

from __future__ import annotations

import functools
import math

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref

from ...dialects.layout import element_bits
from ...frontend.errors import TileError
from ..common.ir_builders import const_index, flat_view, if_else, to_index
from .distributed_layout import Distribution, RowsDistribution, row_major_strides
from ..common.predicated_access import ByteAddress
from ..common.lowerings import lowering
from .distributed_memory import _base_aligned, run_width
from .register_vectors import elements, from_elements, i32, linear_index


def first_copies(self, dist) -> list | None:
    """Per register, an i1: whether this thread holds the first copy of its element (None:
    every element has one copy, as in the tensor-core layouts)."""
    if isinstance(dist, RowsDistribution) and dist.layout.axis:  # a column: lane t of each group, in every warp
        first = arith.andi(arith.cmpi(arith.CmpIPredicate.ult, self.lane, i32(4)),
                           arith.cmpi(arith.CmpIPredicate.eq, self.warp, i32(0)))
        return [first] * dist.num_registers
    if isinstance(dist, RowsDistribution):  # the four threads of a quad hold a row
        first = arith.cmpi(arith.CmpIPredicate.eq, arith.andi(self.lane, i32(3)), i32(0))
        return [first] * dist.num_registers
    if not isinstance(dist, Distribution):
        return None
    L, n = dist.layout, dist.num_registers
    conds = [[] for _ in range(n)]
    unwrapped = self.unwrapped_coords(dist)
    # ids past those a layout uses repeat the ones below
    for ids, used, have in ((self.lane, math.prod(L.threads_per_warp), 32),
                            (self.warp, math.prod(L.warps_per_cta), self.num_warps)):
        if used < have:
            below = arith.cmpi(arith.CmpIPredicate.ult, ids, i32(used))
            for c in conds:
                c.append(below)
    for d in range(dist.rank):
        if dist.shape[d] % dist.cta(d) == 0:
            continue
        # a coordinate that reaches past the tile, before it wraps, is a copy
        for r, at in enumerate(elements(unwrapped[d], n)):
            conds[r].append(arith.cmpi(arith.CmpIPredicate.ult, at, i32(dist.shape[d])))
    if not conds[0]:
        return None
    return [functools.reduce(arith.andi, c) for c in conds]


_CONSTRAINT = {16: "h", 32: "r", 64: "l"}


def _instruction(kind: str, elem) -> str:
    """The operation and type of `atom` (`add.f32`, `cas.b64`) for a kind on an element type."""
    bits = element_bits(elem)
    if kind == "add":
        if isinstance(elem, ir.IntegerType):
            return f"add.u{bits}"
        return f"add.noftz.{elem}" if bits == 16 else f"add.{elem}"
    if kind in ("max", "min", "umax", "umin"):
        return f"{kind[1:]}.u{bits}" if kind[0] == "u" else f"{kind}.s{bits}"
    return f"{'exch' if kind == 'xchg' else kind}.b{bits}"


def _atom(kind: str, elem, sem: str, scope: str, address, pred, value, cmp=None):
    """`@pred atom.<sem>.<scope>.global.<kind>` of one element: the old value, 0 where pred is false."""
    bits = element_bits(elem)
    word = ir.IntegerType.get_signless(bits)
    as_word = (lambda v: v) if isinstance(elem, ir.IntegerType) else (lambda v: arith.bitcast(word, v))
    operands = [pred, address] + ([as_word(cmp)] if cmp is not None else []) + [as_word(value)]  # (cas: compare, then swap)
    if kind in ("load", "store"):  # (atomic_load, atomic_store: ld.acquire, st.release; the store's old value 0)
        access = f"ld.{sem}.{scope}.global.b{bits} $0, [$2];" if kind == "load" else \
            f"st.{sem}.{scope}.global.b{bits} [$2], $3;"
        asm = f"mov.b{bits} $0, 0;\n\t@$1 {access}"
    else:
        asm = (f"mov.b{bits} $0, 0;\n\t@$1 atom.{sem}.{scope}.global.{_instruction(kind, elem)} $0, [$2], $3"
               + (", $4;" if cmp is not None else ";"))
    c = _CONSTRAINT[bits]
    constraints = ",".join([f"=&{c}", "b", "l"] + [c] * (len(operands) - 2))
    old = llvm.inline_asm(word, operands, asm, constraints, has_side_effects=True)
    return old if isinstance(elem, ir.IntegerType) else arith.bitcast(elem, old)


def _float_extremum(kind: str, elem, sem, scope, address, pred, value):
    """A float max (min) as Triton's two integer atomics on the bits; the old value."""
    word = ir.IntegerType.get_signless(element_bits(elem))
    zero = arith.ConstantOp(elem, 0.0).result
    positive = arith.cmpf(arith.CmpFPredicate.OGE, value, zero)
    true = arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result
    bits = arith.bitcast(word, value)
    signed = _atom(kind, word, sem, scope, address, arith.andi(pred, positive), bits)
    unsigned = _atom("umin" if kind == "max" else "umax", word, sem, scope, address,
                     arith.andi(pred, arith.xori(positive, true)), bits)
    return arith.bitcast(elem, arith.select(positive, signed, unsigned))


def _updater(self, op, base):
    """update(offset, value, mask, cmp=None) -> the element's old value, for op's kind, order and scope."""
    elem = ir.MemRefType(base.type).element_type
    is_cas = op.name == "tile.atomic_cas"
    kind = "cas" if is_cas else ir.StringAttr(op.attributes["kind"]).value
    sem, scope = (ir.StringAttr(op.attributes[a]).value for a in ("sem", "scope"))
    if kind == "add" and isinstance(elem, ir.BF16Type) and self.arch < 90:
        raise TileError("atomic_add on bfloat16 needs sm_90 (PTX atom.add.noftz.bf16); use a float32 tensor on sm_80")
    address = ByteAddress(flat_view(self.value(base)), elem)

    def update(off, v, m, cmp=None):
        if kind in ("max", "min") and isinstance(elem, ir.FloatType):
            return _float_extremum(kind, elem, sem, scope, address(off), m, v)
        return _atom(kind, elem, sem, scope, address(off), m, v, cmp)

    return update


@lowering("tile.atomic_rmw", "tile.atomic_cas", target="gpu")
def op_tile_atomic_rmw(self, op):
    base, offsets, *values, mask = op.operands  # values: (value,) or, for a compare-and-swap, (cmp, value)
    elem = ir.MemRefType(base.type).element_type
    update = _updater(self, op, base)
    if not isinstance(offsets.type, ir.RankedTensorType):
        first = arith.cmpi(arith.CmpIPredicate.eq, self.tid, i32(0))
        got = [self.value(v) for v in values]
        old = update(self.value(offsets), got[-1], arith.andi(self.value(mask), first), *got[:-1])
        if list(op.results[0].uses):  # thread 0's old value, to every thread
            buf = self.scratch(elem, 1, align=element_bits(elem) // 8)
            gpu.barrier()
            if_else(first, None, lambda: memref.StoreOp(old, buf, [const_index(0)]), None)
            gpu.barrier()
            old = memref.LoadOp(buf, [const_index(0)]).result
        self.map[op.results[0]] = old
        return
    dist = self.dist(values[-1])
    n = dist.num_registers
    offs, masks = elements(self.value(offsets), n), elements(self.value(mask), n)
    regs = [elements(self.value(v), n) for v in values]
    first = first_copies(self, dist)
    if first is None and _vector_add(self, op, base, offsets, mask, dist, offs, masks, regs[-1]):
        return
    if first is not None:
        masks = [arith.andi(m, f) for m, f in zip(masks, first)]
    olds = [update(offs[r], regs[-1][r], masks[r], *(v[r] for v in regs[:-1])) for r in range(n)]
    if first is not None and list(op.results[0].uses):
        olds = _to_copies(self, dist, olds, first, elem)
    self.map[op.results[0]] = from_elements(olds, elem)


def _vector_add(self, op, base, offsets, mask, dist, offs, masks, values) -> bool:
    """The add as vector `atom`s of runs of registers (sm_90, floats, old values unused);
    False where nothing wider than one element is proven."""
    elem = ir.MemRefType(base.type).element_type
    if (self.arch < 90 or ir.StringAttr(op.attributes["kind"]).value != "add" or list(op.results[0].uses)
            or not isinstance(elem, (ir.F32Type, ir.F16Type, ir.BF16Type))):
        return False
    w = run_width(self, dist, offsets, mask, elem, _base_aligned(self, base))
    if w < 2:
        return False
    bits = element_bits(elem)
    word = ir.IntegerType.get_signless(bits)
    sem, scope = (ir.StringAttr(op.attributes[a]).value for a in ("sem", "scope"))
    name, ty = _instruction("add", elem).rsplit(".", 1)  # (add.noftz.bf16 -> add.noftz.v8.bf16)
    kind = f"{name}.v{w}.{ty}"
    temps = ", ".join(f"t{i}" for i in range(w))
    inputs = ", ".join(f"${i + 2}" for i in range(w))
    asm = (f"{{ .reg .b{bits} {temps};\n\t@$0 atom.{sem}.{scope}.global.{kind} {{{temps}}}, [$1], {{{inputs}}}; }}")
    constraints = ",".join(["b", "l"] + [_CONSTRAINT[bits]] * w)
    address = ByteAddress(flat_view(self.value(base)), elem)
    for r in range(0, dist.num_registers, w):
        words = [arith.bitcast(word, v) for v in values[r:r + w]]
        llvm.inline_asm(None, [masks[r], address(offs[r])] + words, asm, constraints, has_side_effects=True)
    return True


def _to_copies(self, dist, olds: list, first: list, elem) -> list:
    """Each element's old value, from the thread that updated it to every thread holding a
    copy of it, through shared memory: a copy's own `else` value (0) would otherwise reach
    what reads the result (the histogram's ranks, stored from every copy: a race whose
    winner changed under compute-sanitizer)."""
    n = dist.num_registers
    buf = self.scratch(elem, math.prod(dist.shape), align=16)
    at = elements(linear_index(self.coords(dist), row_major_strides(dist.shape), n), n)
    gpu.barrier()
    for old, i, f in zip(olds, at, first):
        if_else(f, None, lambda old=old, i=i: memref.StoreOp(old, buf, [to_index(i)]), None)
    gpu.barrier()
    return [memref.LoadOp(buf, [to_index(i)]).result for i in at]


@lowering("tile.barrier", target="gpu")
def op_tile_barrier(self, op):
    gpu.barrier()
