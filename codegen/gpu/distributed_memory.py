"""Global loads and stores of distributed tiles (methods of the GPU `Translator`).

Each thread accesses its own registers' elements. Along the fastest dim a
thread holds runs of consecutive elements; when axis info proves a run's
offsets consecutive and aligned and its mask uniform, the run is one
16-byte (or 8- or 4-byte) access predicated on the run's mask
(`predicated_access.py`); a shorter run is a `vector.load`/`vector.store`
guarded by a branch. Anything else is one guarded scalar access per register.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, memref, vector

from ...dialects.layout import element_bits as bits
from ...passes.tile_fuse import through_groups
from ..common import predicated_access
from ..common.ir_builders import const_index, flat_view, if_else, to_index
from ..common.lowerings import lowering
from .distributed_layout import Distribution
from .register_vectors import elements, from_elements, i32, splat
from .tail_masked_copies import tail_mask, tail_store


def run_width(self, dist, offsets, mask, elem, aligned_base: bool, limit: int | None = None) -> int:
    """Elements per vector access for this tile: a power of two, 1 if nothing is proven; at
    most `limit` (default: the run of elements a thread holds in the layout, `vector_width`)."""
    # (a tensor-core tile's rows, `#tile.rows`: a register each; its columns, `#tile.cols`: pairs)
    order = getattr(dist.layout, "order", None) or ((0,) if dist.vector_width > 1 else None)
    if order is None or order[0] != dist.rank - 1 or not aligned_base or (isinstance(elem, ir.IntegerType) and elem.width == 1):
        return 1  # (bools one at a time: `emulate-i1-memrefs` widens scalar accesses to bytes)
    off = self.axis(offsets)
    constancy = self.axis(mask).constancy if mask is not None else off.contiguity  # (None: the offsets' runs alone)
    width = min(dist.vector_width if limit is None else limit, off.contiguity, constancy, 128 // bits(elem))
    width = 1 << (max(width, 1).bit_length() - 1)
    while width > 1 and off.divisibility % width:
        width //= 2
    return width


def run_addresses(self, dist, offsets, offs: list, w: int, address) -> dict:
    """The address of each run (by its first register), given `address` of an element index.

    Where axis info proves the offsets consecutive along a whole row (the last dim), a run
    is addressed from the thread's first run in the same row plus a constant: the
    distance of their columns, known from the layout. All of a row's accesses then share
    one address register with immediate offsets (`[%rd1+4096]`), as Triton's do; computed
    from each index on its own (a sign extension, a 64-bit add chain per access), ptxas
    let a use of a layer norm's first load slip in before its last load was issued, a
    second trip to DRAM (8 warps: 143 against Triton's 128 us, ncu). Inside a loop it is
    the other way round: with one address ptxas issued a looped layer norm's two loads of
    a row one after the other (32 warps: 0.186 -> 0.219 ms, measured), so accesses nested
    in a loop (or any region) keep an address each."""
    n = dist.num_registers
    starts = range(0, n, w)
    nested = ir.InsertionPoint.current.block != self.entry.block
    if (nested or not isinstance(dist, Distribution) or any(dist.shape[d] % dist.cta(d) for d in range(dist.rank))
            or self.axis(offsets).contiguity < dist.shape[-1]):
        return {r: address(offs[r]) for r in starts}
    consts = [[dist.register_offset(d, j[d]) for d in range(dist.rank)] for j in dist.register_indices]
    out, first = {}, {}
    for r in starts:
        row = tuple(consts[r][:-1])
        if row not in first:
            first[row] = r
            out[r] = address(offs[r])
        else:
            r0 = first[row]
            out[r] = address.shifted(out[r0], consts[r][-1] - consts[r0][-1])
    return out


def same_in_every_program(value) -> bool:
    """Whether `value` reaches no `tile.program_id`: built from kernel arguments, constants,
    ranges and counters of loops over such bounds, it is the same in every program. A value
    carried around a loop or yielded by a region (other than a fusion group) is taken to differ."""
    seen, todo = set(), [value]
    while todo:
        v = through_groups(todo.pop())
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, ir.BlockArgument):
            parent = v.owner.owner.operation
            if parent.name == "func.func":
                continue
            if parent.name == "scf.for" and v.arg_number == 0:  # the counter: lower bound, upper bound, step
                todo.extend(list(parent.operands)[:3])
                continue
            return False
        op = v.owner.operation
        if op.name == "tile.program_id" or len(op.regions):
            return False
        todo.extend(op.operands)
    return True


def _base_aligned(self, base) -> bool:
    """16-byte aligned: a tensor argument by the specialization, a pointer cast from an int64 by
    a `multiple_of` hint (`frontend/pointer_arrays.py`)."""
    return self.axis(base).divisibility >= 16


def _hints(op, elem):
    """The op's cache hints (`predicated_access.Hints`) and L2 policy, or (None, None). Bools
    keep the plain path: `emulate-i1-memrefs` widens their accesses later."""
    hints = predicated_access.Hints.of(op) if bits(elem) >= 8 else None
    return hints, hints.policy() if hints is not None else None


def _bool_run(self, dist, offsets, mask, base) -> int:
    """Elements a run of a bool tile moves as one predicated access of whole words (4, 8 or 16
    bytes: torch's bools are bytes), or 0 where it takes the plain path, an element at a time
    (`run_width`). A dropout mask stored 32 a thread went as 32 `st.global.b8` where Triton's
    compile stores 2 `st.global.v4.b32` (flash-attn's layer norm). Not in a tensor-core
    kernel, whose accesses stay branches (`op_tile_store`)."""
    elem = ir.MemRefType(base.type).element_type
    if not (isinstance(elem, ir.IntegerType) and elem.width == 1) or self.has_dot:
        return 0
    w = run_width(self, dist, offsets, mask, _I8(), _base_aligned(self, base))
    return w if predicated_access.supported(w, _I8()) else 0


def _I8():
    return ir.IntegerType.get_signless(8)


def _bool_load(self, op, flat, dist, w: int):
    """A bool tile loaded in runs of w bytes, each byte then compared with 0 (`_bool_run`)."""
    base, offsets, mask, other = op.operands
    n = dist.num_registers
    hints, policy = _hints(op, _I8())
    offs, masks = (elements(self.value(v), n) for v in (offsets, mask))
    others = [arith.extui(_I8(), o) for o in elements(self.value(other), n)]
    address = predicated_access.ByteAddress(flat, _I8())
    addresses = run_addresses(self, dist, offsets, offs, w, address)
    zero = arith.ConstantOp(_I8(), 0).result
    out = []
    for r in range(0, n, w):
        got = predicated_access.load(addresses[r], masks[r], from_elements(others[r : r + w], _I8()), w, _I8(),
                                     False, hints, policy)
        out.extend(arith.cmpi(arith.CmpIPredicate.ne, b, zero) for b in elements(got, w))
    self.map[op.results[0]] = from_elements(out, ir.IntegerType.get_signless(1))


def _bool_store(self, op, flat, dist, w: int):
    """A bool tile stored as bytes in runs of w (`_bool_run`)."""
    base, offsets, value, mask = op.operands
    n = dist.num_registers
    hints, policy = _hints(op, _I8())
    offs, masks = (elements(self.value(v), n) for v in (offsets, mask))
    vals = [arith.extui(_I8(), v) for v in elements(self.value(value), n)]
    address = predicated_access.ByteAddress(flat, _I8())
    addresses = run_addresses(self, dist, offsets, offs, w, address)
    for r in range(0, n, w):
        predicated_access.store(addresses[r], masks[r], from_elements(vals[r : r + w], _I8()), w, _I8(), hints, policy)


@lowering("tile.load", target="gpu")
def op_tile_load(self, op):
    base, offsets, mask, other = op.operands
    elem = ir.MemRefType(base.type).element_type
    flat = flat_view(self.value(base))
    hints, policy = _hints(op, elem)
    if not isinstance(offsets.type, ir.RankedTensorType):
        off, m, oth = (self.value(v) for v in (offsets, mask, other))
        if hints is not None:
            address = predicated_access.ByteAddress(flat, elem)(off)
            self.map[op.results[0]] = predicated_access.load_one(address, m, oth, elem, hints, policy)
            return
        self.map[op.results[0]] = if_else(m, elem, lambda: memref.LoadOp(flat, [to_index(off)]).result, lambda: oth)
        return
    dist = self.dist(op.results[0])
    n = dist.num_registers
    if w := _bool_run(self, dist, offsets, mask, base):
        return _bool_load(self, op, flat, dist, w)
    w = run_width(self, dist, offsets, mask, elem, _base_aligned(self, base))
    whole_words = predicated_access.supported(w, elem)
    w = w if whole_words or hints is None else 1  # (hinted runs of less than a word: an element at a time)
    offs, masks, others = (elements(self.value(v), n) for v in (offsets, mask, other))
    out = []
    address = predicated_access.ByteAddress(flat, elem) if whole_words or hints is not None else None
    addresses = run_addresses(self, dist, offsets, offs, w, address) if address is not None else {}
    # Only data every program rereads (a layer norm's weight row): streamed data gains nothing there.
    read_only = base in self.read_only and same_in_every_program(offsets)
    for r in range(0, n, w):
        if address is not None and not whole_words:
            out.append(predicated_access.load_one(addresses[r], masks[r], others[r], elem, hints, policy))
            continue
        if address is not None:
            rest = from_elements(others[r : r + w], elem)
            out.extend(elements(predicated_access.load(addresses[r], masks[r], rest, w, elem, read_only, hints, policy), w))
            continue
        if w == 1:
            out.append(if_else(masks[r], elem, lambda r=r: memref.LoadOp(flat, [to_index(offs[r])]).result, lambda r=r: others[r]))
            continue
        vty = ir.VectorType.get([w], elem)
        nbytes = w * bits(elem) // 8
        got = if_else(masks[r], vty,
                       lambda r=r: vector.LoadOp(vty, flat, [to_index(offs[r])], alignment=nbytes).result,
                       lambda r=r: from_elements(others[r : r + w], elem))
        out.extend(elements(got, w))
    self.map[op.results[0]] = from_elements(out, elem)


@lowering("tile.store", target="gpu")
def op_tile_store(self, op):

    base, offsets, value, mask = op.operands
    elem = ir.MemRefType(base.type).element_type
    flat = flat_view(self.value(base))
    hints, policy = _hints(op, elem)
    if not isinstance(offsets.type, ir.RankedTensorType):
        off, v, m = (self.value(x) for x in (offsets, value, mask))
        if hints is not None:
            predicated_access.store_one(predicated_access.ByteAddress(flat, elem)(off), m, v, elem, hints, policy)
            return
        if_else(m, None, lambda: memref.StoreOp(v, flat, [to_index(off)]), None)
        return
    dist = self.dist(value)
    n = dist.num_registers
    if w := _bool_run(self, dist, offsets, mask, base):
        return _bool_store(self, op, flat, dist, w)
    w = run_width(self, dist, offsets, mask, elem, _base_aligned(self, base))
    # A tensor-core kernel's epilogue with a run-time bound (a grouped GEMM's N): vector stores, with
    # the elements of a cut run one by one; element by element everywhere, its addresses spilled.
    tail = tail_mask(self, run_width(self, dist, offsets, None, elem, _base_aligned(self, base)), mask) \
        if hints is None and self.has_dot else None
    if tail is not None and tail.width > w:  # runs cut by a bound (tail_masked_copies.py)
        return tail_store(self, flat, dist, offsets, elements(self.value(value), n), tail)
    whole_words = predicated_access.supported(w, elem)
    w = w if whole_words or hints is None else 1
    offs, vals, masks = (elements(self.value(x), n) for x in (offsets, value, mask))
    # A tensor-core kernel's stores stay branches: with a large accumulator live, predicated
    # stores (one block for ptxas) made its epilogue spill. (Hinted stores are inline PTX whatever.)
    predicate = (whole_words and not self.has_dot) or hints is not None
    address = predicated_access.ByteAddress(flat, elem) if predicate else None
    addresses = run_addresses(self, dist, offsets, offs, w, address) if address is not None else {}
    for r in range(0, n, w):
        if address is not None and not whole_words:
            predicated_access.store_one(addresses[r], masks[r], vals[r], elem, hints, policy)
            continue
        if address is not None:
            predicated_access.store(addresses[r], masks[r], from_elements(vals[r : r + w], elem), w, elem, hints, policy)
            continue
        if w == 1:
            if_else(masks[r], None, lambda r=r: memref.StoreOp(vals[r], flat, [to_index(offs[r])]), None)
            continue
        nbytes = w * bits(elem) // 8
        if_else(masks[r], None, lambda r=r: vector.StoreOp(from_elements(vals[r : r + w], elem), flat,
                                                           [to_index(offs[r])], alignment=nbytes), None)


def _tile_coords(self, base, indices, dist):
    """Global coordinates (index) of every register, and whether each is inside `base`."""
    coords = self.coords(dist)
    n = dist.num_registers
    per_dim = []
    for d, (ti, c) in enumerate(zip(indices, coords)):
        start = arith.muli(self.value(ti), i32(dist.shape[d]))
        g = arith.addi(splat(start, n), c)
        size = arith.index_cast(ir.IntegerType.get_signless(32), memref.DimOp(self.value(base), const_index(d)).result)
        per_dim.append((elements(g, n), elements(arith.cmpi(arith.CmpIPredicate.ult, g, splat(size, n)), n)))
    regs = []
    for r in range(n):
        inside = None
        for _, oks in per_dim:
            inside = oks[r] if inside is None else arith.andi(inside, oks[r])
        regs.append(([to_index(g[r]) for g, _ in per_dim], inside))
    return regs


@lowering("tile.load_tile", target="gpu")
def op_tile_load_tile(self, op):
    base, *indices = op.operands
    dist = self.dist(op.results[0])
    elem = ir.RankedTensorType(op.results[0].type).element_type
    pad = arith.ConstantOp(elem, op.attributes["padding"]).result
    mem = self.value(base)
    out = [if_else(inside, elem, lambda c=c: memref.LoadOp(mem, c).result, lambda: pad)
           for c, inside in _tile_coords(self, base, indices, dist)]
    self.map[op.results[0]] = from_elements(out, elem)


@lowering("tile.store_tile", target="gpu")
def op_tile_store_tile(self, op):
    base, value, *indices = op.operands
    dist = self.dist(value)
    mem = self.value(base)
    vals = elements(self.value(value), dist.num_registers)
    for (c, inside), v in zip(_tile_coords(self, base, indices, dist), vals):
        if_else(inside, None, lambda c=c, v=v: memref.StoreOp(v, mem, c), None)

