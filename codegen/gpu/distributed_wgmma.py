"""`tile.dot` on sm_90a tensor cores with `wgmma.mma_async` (called by `op_tile_dot`).

The accumulator lives in the `#tile.wgmma` layout (`WgmmaDistribution`):
warpgroup (gm, gn) owns a part of M x N and issues one `m64nNk16` per 64 rows
of it and 16-wide step of K, N being its whole width. Both operands stay in
shared memory, read by the tensor cores through 64-bit matrix descriptors:

    bits  0-13  start address >> 4
    bits 16-29  leading-dimension byte offset >> 4
    bits 32-45  stride-dimension byte offset >> 4
    bits 62-63  swizzle: 1 = 128 bytes, 2 = 64, 3 = 32

A (M x K, K contiguous) is K-major: 8-row groups are 8 swizzle lines apart
(the stride offset); one K step starts 32 bytes further along the line, the
hardware applying the swizzle to the address (so tiles start on 1024 bytes).
B (K x N, N contiguous) is N-major (`layoutB = row`, the transposed B): its
8-row groups of K are the stride offset apart and its 128-byte panels of N the
leading offset apart (`SharedTile` stores panels one after the other). A B
that TMA copied from a column-major tensor sits in its slot as N x K, K
contiguous (`transposed`): K-major (`layoutB = col`), addressed as A is. A
column-major A sits as K x M, M contiguous: M-major (`layoutA = col`),
addressed as the row-major B is.

    wgmma.fence                      ; the accumulator registers are ready
    wgmma.mma_async (per K step, per 64 rows) ...
    wgmma.commit_group ; wgmma.wait_group 0   ; no wait if `in_flight`: a `tile.dot_wait` waits

Upstream's `nvgpu.warpgroup.mma` wants its operands as memrefs with TMA
descriptor types and its accumulator as one opaque value; here operands live in
rings placed by `tile-pipeline` and accumulators are per-thread registers, so
the `nvvm` ops are emitted directly.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm, memref, nvvm, vector

from ...dialects.layout import element_bits as bits
from ...frontend.errors import TileError
from ..common.lowerings import lowering
from .distributed_async_copy import SharedTile
from .distributed_layout import WgmmaDistribution
from .register_vectors import elements, from_elements, i32

_SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}


def _i64(v: int):
    """An i64 constant of the 64 bits of v (a swizzle mode of 2 or 3 sets the sign bit)."""
    return arith.ConstantOp(ir.IntegerType.get_signless(64), v - (1 << 64) if v >= 1 << 63 else v).result


def _descriptor(tile: SharedTile, lead: int, stride: int):
    """The descriptor of `tile`'s element 0 (i64); an element offset `e` is added as (e * bytes) >> 4."""
    i64 = ir.IntegerType.get_signless(64)
    addr = arith.index_cast(i64, memref.extract_aligned_pointer_as_index(tile.buf))
    addr = arith.addi(addr, arith.extui(i64, arith.muli(tile.base, i32(bits(tile.elem) // 8))))
    fields = ((lead >> 4) << 16) | ((stride >> 4) << 32) | (_SWIZZLE_MODE[tile.swizzle_bytes] << 62)
    return arith.ori(arith.andi(arith.shrui(addr, _i64(4)), _i64(0x3FFF)), _i64(fields))


def _at(desc, tile: SharedTile, row: int, col):
    """`desc` moved to (row, col) of `tile` (the unswizzled start, a constant plus an i32 `col` part)."""
    i64 = ir.IntegerType.get_signless(64)
    size = bits(tile.elem) // 8
    p, rest = divmod(col[1], tile.panel)  # col = (dynamic i32 or None, constant)
    offset = (p * tile.rows * tile.panel + row * tile.panel + rest) * size
    out = arith.addi(desc, _i64(offset >> 4))
    if col[0] is not None:  # a dynamic column start: whole panels
        panels = arith.muli(arith.divui(col[0], i32(tile.panel)), i32(tile.rows * tile.panel * size >> 4))
        out = arith.addi(out, arith.extui(i64, panels))
    return out


def _k_major(tile: SharedTile, part, rows: int):
    """The descriptor of a K-major operand (rows x K, K contiguous, one 128-byte panel at
    most per row), moved `part` * `rows` rows down (whole 64-row blocks)."""
    desc = _descriptor(tile, 16, 8 * tile.swizzle_bytes)
    row_bytes = tile.panel * bits(tile.elem) // 8
    return arith.addi(desc, arith.extui(ir.IntegerType.get_signless(64), arith.muli(part, i32(rows * row_bytes >> 4))))


def _mn_major(tile: SharedTile):
    """The descriptor of an M- or N-major operand (K x M or K x N, 128-byte panels of the
    contiguous dim one after the other, `lead` apart; 8-row groups of K the stride apart)."""
    return _descriptor(tile, tile.rows * tile.panel * bits(tile.elem) // 8, 8 * tile.swizzle_bytes)


def supported(ta: SharedTile | None, tb: SharedTile) -> str | None:
    """Why wgmma cannot read these tiles, or None (ta None: A in registers)."""
    for name, t in (("a", ta), ("b", tb)):
        if t is not None and t.swizzle_bytes not in _SWIZZLE_MODE:
            return f"operand {name} of {t.rows}x{t.cols} is not in 32-, 64- or 128-byte swizzled panels"
    return None


def registers_a(self, op) -> bool:
    """Whether the dot's A, in registers, can go to wgmma as they are: a 16-bit tile in the
    `#tile.wgmma` layout split over warpgroups along M as the accumulator is (attention's P,
    the scores' softmax cast to the dot's type). A thread's registers for 16 columns of a
    64-row block are then the A fragment of that K step (rows g, g + 8; columns 2t, 2t + 1,
    and 8 further on)."""
    a = op.operands[0]
    if isinstance(self.map.get(a), SharedTile) or "in_flight" in op.attributes:
        return False
    da, cd = self.dist(a), self.dist(op.results[0])
    return (isinstance(da, WgmmaDistribution) and bits(ir.RankedTensorType(a.type).element_type) == 16
            and cd.layout.warpgroups[1] == 1 and da.layout.warpgroups == cd.layout.warpgroups)


def _a_fragments(da, regs: list, elem, rm: int, ks: int) -> list:
    """A's registers (`regs`, in layout `da`) for K step ks of 64-row block rm, as the four
    b32 of a wgmma A fragment."""
    pair, i32t = ir.VectorType.get([2], elem), ir.IntegerType.get_signless(32)
    frags = []
    for rn in (2 * ks, 2 * ks + 1):
        for i in (0, 2):
            r = da.register(rm, rn, i)
            frags.append(llvm.bitcast(i32t, vector.FromElementsOp(pair, [regs[r], regs[r + 1]]).result))
    return frags


def _wgmma_registers_a(struct, acc, n: int, frags: list, desc_b, tn: int, elem, trans_b: int):
    """One `m64nNk16` wgmma with A in registers (inline PTX: NVVM's op takes A by descriptor only)."""
    f32 = ir.F32Type.get()
    accs = [llvm.ExtractValueOp(f32, acc, [j]).result for j in range(n)]
    d = ", ".join(f"${j}" for j in range(n))
    a = ", ".join(f"${2 * n + i}" for i in range(4))
    asm = ("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
           f"wgmma.mma_async.sync.aligned.m64n{tn}k16.f32.{elem}.{elem} {{{d}}}, {{{a}}}, ${2 * n + 4}, p, 1, 1, {trans_b};\n}}")
    constraints = ",".join(["=f"] * n + [str(j) for j in range(n)] + ["r"] * 4 + ["l"])
    return llvm.InlineAsmOp(struct, accs + frags + [desc_b], asm, constraints, has_side_effects=True).result


_WGMMA_TYPES = {"f16": "f16", "bf16": "bf16", "f8E4M3FN": "e4m3", "f8E5M2": "e5m2", "i8": "s8", "f32": "f32", "i32": "s32"}


def accumulator_struct(elem, n: int):
    """The LLVM struct of `n` accumulator registers of type `elem` (f32; i32 for int8 dots)."""
    return ir.Type.parse("!llvm.struct<(" + ", ".join([str(elem)] * n) + ")>")


def wgmma_dot(self, op, ta: SharedTile | None, tb: SharedTile, steps: range | None = None, groups: range | None = None,
              regs: list | None = None):
    """ta None: A from registers (`registers_a`). 8-bit operands (float8 e4m3, e5m2, one of
    each; int8, into an s32 accumulator) take `m64nNk32` steps, both K-major (A as loaded, B
    from a transposed tile). A chunk of
    B in `tb` (one warpgroup along N): `steps`, only those K steps (`tb` holding their rows
    of B), or `groups`, only those 8-column groups of N (`tb` holding their columns), onto
    the accumulator registers `regs` (default: all of them, onto the accumulator operand's).
    Returns the result's registers."""
    acc = op.operands[2]
    cd = self.dist(op.results[0])
    elem = tb.elem
    elem_a = ir.RankedTensorType(op.operands[0].type).element_type
    kstep = 256 // bits(elem)  # 32 bytes of K an instruction: k16 for 16-bit types, k32 for 8-bit ones
    if bits(elem) == 8 and (ta is None or ta.transposed or not tb.transposed):
        raise TileError("internal: an 8-bit wgmma operand is not K-major in shared memory")
    acc_elem = ir.RankedTensorType(acc.type).element_type  # (i32 for int8 operands)
    gn = cd.layout.warpgroups[1]
    (tm, tn), (reps_m, reps_n) = cd.warp_tile, cd.reps
    wg = arith.shrui(self.uniform_warp(), i32(2))  # (the warpgroup; uniform: see uniform_warp)
    part_m, part_n = arith.divui(wg, i32(gn)), arith.remui(wg, i32(gn))
    # A: K-major, leading offset unused (1), the warpgroup's part_m * tm rows down; B: N-major,
    # panels `lead` apart, the warpgroup's columns from part_n * tn. A transposed slot the other
    # way round: A M-major as B (its columns from part_m * tm), B K-major as A.
    if ta is None:
        desc_a = None
    elif ta.transposed:
        desc_a, col_a = _mn_major(ta), (arith.muli(part_m, i32(tm)) if cd.layout.warpgroups[0] > 1 else None)
    else:
        desc_a = _k_major(ta, part_m, tm)
    if tb.transposed:
        desc_b, col_b = _k_major(tb, part_n, tn), None
    else:
        desc_b = _mn_major(tb)
        col_b = (arith.muli(part_n, i32(tn)) if gn > 1 else None, 0)

    groups = range(reps_n) if groups is None else groups
    tn, width = len(groups) * 8, len(groups) * 4  # (the instruction's N and accumulator registers)
    struct = accumulator_struct(acc_elem, width)
    regs = elements(self.value(acc), cd.num_registers) if regs is None else regs
    accs = []
    for rm in range(reps_m):
        s = llvm.UndefOp(struct).result
        for j in range(width):
            s = llvm.InsertValueOp(s, regs[cd.register(rm, groups[0], 0) + j], [j]).result
        accs.append(s)
    # shape, A/B/D types, D/A/B scales, A layout (row: K-major), B layout (row: N-major); col for a transposed slot
    attrs = [ir.Attribute.parse(a) for a in (
        f"#nvvm.shape<m = 64, n = {tn}, k = {kstep}>", f"#nvvm.wgmma_type<{_WGMMA_TYPES[str(elem_a)]}>",
        f"#nvvm.wgmma_type<{_WGMMA_TYPES[str(elem)]}>",
        f"#nvvm.wgmma_type<{_WGMMA_TYPES[str(acc_elem)]}>", "#nvvm.wgmma_scale_out<one>", "#nvvm.wgmma_scale_in<one>",
        "#nvvm.wgmma_scale_in<one>", *(f"#nvvm.mma_layout<{'col' if t is not None and t.transposed else 'row'}>"
                                       for t in (ta, tb)))]
    if ta is None:
        da = self.dist(op.operands[0])
        a_regs = elements(self.value(op.operands[0]), da.num_registers)
    nvvm.WgmmaFenceAlignedOp()
    k = ir.RankedTensorType(op.operands[0].type).shape[1]
    steps = range(k // kstep) if steps is None else steps
    for ks in steps:  # K steps
        kb = (ks - steps[0]) * kstep  # (B's row in tb)
        b = _at(desc_b, tb, 0, (None, kb)) if tb.transposed else _at(desc_b, tb, kb, col_b)
        for rm in range(reps_m):
            if ta is None:
                accs[rm] = _wgmma_registers_a(struct, accs[rm], width, _a_fragments(da, a_regs, elem, rm, ks),
                                              b, tn, elem, 0 if tb.transposed else 1)
                continue
            a = _at(desc_a, ta, ks * 16, (col_a, rm * 64)) if ta.transposed else _at(desc_a, ta, rm * 64, (None, ks * kstep))
            accs[rm] = nvvm.WgmmaMmaAsyncOp(struct, accs[rm], a, b, *attrs).result
    nvvm.WgmmaGroupSyncAlignedOp()
    if "in_flight" not in op.attributes:  # else a later `tile.dot_wait` (see tile-pipeline)
        nvvm.WgmmaWaitGroupSyncOp(0)
    out = list(regs)
    for rm in range(reps_m):
        for j in range(width):
            out[cd.register(rm, groups[0], 0) + j] = llvm.ExtractValueOp(acc_elem, accs[rm], [j]).result
    self.map[op.results[0]] = from_elements(out, acc_elem)
    return out


@lowering("tile.dot_wait", target="gpu")
def op_tile_dot_wait(self, op):
    """`wgmma.wait_group N` as inline PTX that takes and gives back every accumulator
    register, so that no read of them can be scheduled before it (the intrinsic has no
    operands to order them by)."""
    regs = elements(self.value(op.operands[0]), self.dist(op.operands[0]).num_registers)
    n = len(regs)
    acc_elem = ir.RankedTensorType(op.operands[0].type).element_type  # (i32 for int8 dots)
    struct = accumulator_struct(acc_elem, n)
    pending = ir.IntegerAttr(op.attributes["pending"]).value
    constraints = ",".join(["=f" if isinstance(acc_elem, ir.F32Type) else "=r"] * n + [str(i) for i in range(n)])
    done = llvm.InlineAsmOp(struct, regs, f"wgmma.wait_group.sync.aligned {pending};", constraints, has_side_effects=True).result
    self.map[op.results[0]] = from_elements([llvm.ExtractValueOp(acc_elem, done, [i]).result for i in range(n)], acc_elem)
