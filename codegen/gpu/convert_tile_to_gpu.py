"""`convert-tile-to-gpu`: distribute a kernel's tiles over its threads by their
layouts, into a `gpu.func` of scalar and `vector` code held in registers.

Our own pass: upstream has no layout-driven distribution of whole-block
values (its vector distribution works per warp, on another model). Every
tile value of layout L becomes, in each thread, one `vector<E x T>` of the E
elements L gives that thread (`distributed_layout.py`):

- elementwise `arith`/`math` ops apply to those vectors as they are;
- `tile.load`/`tile.store` compute each register's address; runs of
  consecutive, aligned addresses (`passes/axis_info.py`) become one `vector.load` /
  `vector.store` of up to 16 bytes, predicated per run by the mask (with
  `noalias`, a tensor the kernel never writes is read with `ld.global.nc`
  where every program reads the same elements);
- `tile.reduce` reduces a thread's registers, then across lanes with
  `gpu.shuffle xor`, then across warps through shared memory;
- shape changes (`tile.broadcast`, `tile.reshape`, `tile.convert_layout`)
  recompute index-only values in the new layout, read what each thread
  already holds from its registers, and move anything else through shared
  memory (`register_values.py`, `held_registers.py`);
- `scf.for` / `scf.if` carry the vectors.

All shared memory is one dynamic scratch buffer reused by every exchange, each
fenced by barriers.

Each op's lowering is registered by its name (`@lowering("tile.load", target="gpu")`,
`common/lowerings.py`) in the module of its topic; the `Translator` holds the state they
share (each value's registers, coordinates, the scratch buffer) and lowers the rest.

    # before (tile-opt stage)
    %s = arith.addf %a, %b : tensor<1024xf32, #tile.blocked<[4], [32], [4], [0]>>
    # after (gpu stage, 4 warps: 8 registers per thread)
    %s = arith.addf %a, %b : vector<8xf32>
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf

from ...dialects.layout import Blocked, Mma, Rows, Wgmma, encoding_of, layout_error
from ...dialects.layout import element_bits as _bits
from ...frontend.errors import TileError
from ...passes.registry import register_pass
from ...passes.walk import all_ops
from ...passes.axis_info import AxisInfo, argument_divisibility
from ..common.ir_builders import const_index, kernel_functions, to_index
from ..common.lowerings import lowering, lowerings
from . import register_values
from .distributed_layout import Distribution, MmaDistribution, RowsDistribution, WgmmaDistribution, row_major_strides
from .fast_math import f32_form
from .first_copies import guarded, guards, linear
from .register_vectors import elements as _elements
from .register_vectors import from_elements as _from_elements
from .register_vectors import i32 as _i32
from .register_vectors import i32_vector as _ivec
from .register_vectors import linear_index, load_run
from .register_vectors import splat as _splat
from ...dialects.layout import BLOCK_SHARED, MAX_SHARED
from ...dialects.tile_ops import WRITES
from ..common.float8 import is_float8, narrow_float8, widen_float8
from ...passes.index_values import is_elementwise
from .held_registers import defer, only_read_through
from .static_registers import repeats, thread_coords, vector_reads
from .distributed_tma import bulk_reads_done

# 32-bit registers per thread for one tile value. Past 255 ptxas spills (the build warns, as
# Triton compiles such kernels too); past this the per-register translation would take
# longer to compile than such a kernel is worth.
MAX_REGISTERS = 1024
_DIMS = {0: gpu.Dimension.x, 1: gpu.Dimension.y, 2: gpu.Dimension.z}


class Translator:
    def __init__(self, fn, block, num_warps: int, divisibility: dict, noalias: bool = False, float8_cvt: bool = True,
                 arch: int = 90):
        self.map: dict = {}
        self.float8_cvt, self.arch = float8_cvt, arch
        self.read_only = read_only_arguments(fn) if noalias else set()
        self.num_warps, self.threads = num_warps, num_warps * 32
        self.axis = AxisInfo(divisibility)
        self.coords_memo: dict = {}
        self.scratch_bytes = 0
        self.scratch_peak_at = None  # the op whose scratch took scratch_bytes to its peak: a too-large error's line
        self.scratch_base = 0  # bytes below it hold long-lived buffers (distributed_async_copy.shared_buffer)
        self.live_buffers: dict[int, int] = {}  # those buffers: start -> end byte
        self.scratch_uses = 0  # scratch views handed out: lets back-to-back users skip a barrier
        self._last_scalar_reduce = None  # (block, scratch use, half) of the latest full reduction
        self._scratch = None
        self._uniform_warp = None
        self.partials: dict = {}  # reduce result -> (partial values, their coordinates per thread): held_registers.py
        self.deferred: dict = {}  # value -> (how to make it, the block it was deferred in): held_registers.defer
        self.async_tokens: list = []  # cp.async copies since the last commit (distributed_async_copy.py)
        self.tma_issuer = 0  # the warp whose lane 0 issues the next TMA copy (distributed_tma.py)
        self.lowerings = lowerings("gpu")  # op name -> lowering (common/lowerings.py)
        dots = [o for o in all_ops(fn) if o.name == "tile.dot"]
        self.has_dot = bool(dots)
        # wgmma reads shared memory through the async proxy: writes to its operands need a proxy fence.
        self.wgmma_dots = sum(isinstance(encoding_of(o.results[0].type), Wgmma) for o in dots)
        self.has_wgmma = self.wgmma_dots > 0
        self.has_tma_store = any(o.name == "tile.tma_store" for o in all_ops(fn))
        with ir.InsertionPoint(block):
            self.tid = tid = arith.index_cast(ir.IntegerType.get_signless(32), gpu.thread_id(gpu.Dimension.x))
            self.lane = arith.andi(tid, _i32(31))
            self.warp = arith.shrui(tid, _i32(5))
            # Values every later op may use (coordinates, the scratch buffer) go before this
            # anchor, so that they dominate the body, which is appended after it.
            anchor = arith.ConstantOp(ir.IntegerType.get_signless(32), 0)
        self.entry = ir.InsertionPoint(anchor.operation)

    # ---- layouts and coordinates -------------------------------------------------
    def dist(self, v) -> Distribution:
        t = ir.RankedTensorType(v.type)
        layout = encoding_of(t) or Blocked.default(list(t.shape), _bits(t.element_type), self.num_warps)
        kind = {Mma: MmaDistribution, Wgmma: WgmmaDistribution, Rows: RowsDistribution}.get(type(layout), Distribution)
        d = kind(layout, tuple(t.shape))
        if d.num_registers * max(_bits(t.element_type), 32) // 32 > MAX_REGISTERS:
            raise TileError(f"tile too large: a tile of shape {list(t.shape)} needs {d.num_registers} registers per thread with "
                            f"{self.num_warps} warps, more than {MAX_REGISTERS}: use a smaller block or more warps")
        return d

    def vtype(self, v) -> ir.VectorType:
        t = ir.RankedTensorType(v.type)
        return ir.VectorType.get([self.dist(v).num_registers], t.element_type)

    def coords(self, dist: Distribution) -> list:
        """Per dim, the i32 vector of the coordinates this thread's registers hold."""
        if dist in self.coords_memo:
            return self.coords_memo[dist]
        if isinstance(dist, MmaDistribution):
            self.coords_memo[dist] = self.mma_coords(dist)
            return self.coords_memo[dist]
        if isinstance(dist, RowsDistribution):
            parent_rows = self.coords(dist.parent)[dist.layout.axis]  # (of the columns, for `#tile.cols`)
            with self.entry:
                rows = _elements(parent_rows, dist.parent.num_registers)
                self.coords_memo[dist] = [_from_elements([rows[r] for r in dist.picks], ir.IntegerType.get_signless(32))]
            return self.coords_memo[dist]
        out = []
        with self.entry:
            for d, c in enumerate(self.unwrapped_coords(dist)):
                if dist.shape[d] % dist.cta(d):
                    c = arith.remui(c, _splat(_i32(dist.shape[d]), dist.num_registers))  # threads hold copies: wrap
                out.append(c)
        self.coords_memo[dist] = out
        return out

    def unwrapped_coords(self, dist: Distribution) -> list:
        """`coords` of a blocked layout before they wrap: past the tile's extent where the
        layout is wider than the tile (those threads hold copies)."""
        L, out = dist.layout, []
        with self.entry:
            for d in range(dist.rank):
                lane_d = arith.remui(arith.divui(self.lane, _i32(dist.lane_shift(d))), _i32(L.threads_per_warp[d]))
                warp_d = arith.remui(arith.divui(self.warp, _i32(dist.warp_shift(d))), _i32(L.warps_per_cta[d]))
                base = arith.addi(arith.muli(warp_d, _i32(L.size_per_thread[d] * L.threads_per_warp[d])),
                                  arith.muli(lane_d, _i32(L.size_per_thread[d])))
                consts = [dist.register_offset(d, j[d]) for j in dist.register_indices]
                out.append(arith.addi(_splat(base, dist.num_registers), _ivec(consts)))
        return out

    def mma_coords(self, dist: MmaDistribution) -> list:
        rows, cols = dist.register_offsets()
        n, (tm, tn) = dist.num_registers, dist.warp_tile
        with self.entry:
            group, t = arith.shrui(self.lane, _i32(2)), arith.andi(self.lane, _i32(3))
            if isinstance(dist, WgmmaDistribution):
                gn = dist.layout.warpgroups[1]
                wg = arith.shrui(self.warp, _i32(2))
                part_m, part_n = arith.divui(wg, _i32(gn)), arith.remui(wg, _i32(gn))
                group = arith.addi(group, arith.muli(arith.andi(self.warp, _i32(3)), _i32(16)))
            else:
                wn = dist.layout.warps[1]
                part_m, part_n = arith.divui(self.warp, _i32(wn)), arith.remui(self.warp, _i32(wn))
            row0 = arith.addi(arith.muli(part_m, _i32(tm)), group)
            col0 = arith.addi(arith.muli(part_n, _i32(tn)), arith.muli(t, _i32(2)))
            return [arith.addi(_splat(row0, n), _ivec(rows)), arith.addi(_splat(col0, n), _ivec(cols))]

    def uniform_warp(self):
        """The warp index broadcast from lane 0: ptxas keeps what it derives (wgmma descriptors) in
        uniform registers (from tid >> 5 directly it lost the high word of A's descriptor,
        measured). A shuffle in a loop is not hoisted (it is convergent): a SHFL and an R2UR an
        iteration. In a kernel of one dot it is made once, at the entry: ptxas keeps it in a
        uniform register through the loop (3-4 fewer SASS instructions an iteration in the GEMM
        loops of tutorials 03, 08 and 09). With several it is made at each (LLVM merges those of
        a block): held through the attention backward's loop of four dots, it took a regular
        register and an R2UR at each use, and the loop grew by 8."""
        if self._uniform_warp is not None:
            return self._uniform_warp
        with self.entry if self.wgmma_dots == 1 else ir.InsertionPoint.current:
            warp = gpu.ShuffleOp(self.warp, _i32(0), _i32(32), gpu.ShuffleMode.IDX).results[0]
        if self.wgmma_dots == 1:
            self._uniform_warp = warp
        return warp

    # ---- shared-memory scratch -----------------------------------------------------
    def scratch(self, elem, count: int, align: int = 1):
        if self.has_tma_store:  # nothing is written before earlier TMA stores have read it
            bulk_reads_done(self)
        base = -(-self.scratch_base // align) * align
        self.scratch_uses += 1
        nbytes = count * _bits(elem) // 8
        if base + nbytes > self.scratch_bytes:
            self.scratch_bytes = base + nbytes
            self.scratch_peak_at = ir.Location.current  # (the op being lowered: `_op` enters its location)
        if self._scratch is None:
            with self.entry:
                space = ir.Attribute.parse("#gpu.address_space<workgroup>")
                self._scratch = gpu.DynamicSharedMemoryOp(
                    ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], ir.IntegerType.get_signless(8), memory_space=space)).result
        space = ir.Attribute.parse("#gpu.address_space<workgroup>")
        ty = ir.MemRefType.get([count], elem, memory_space=space)
        return memref.ViewOp(ty, self._scratch, const_index(base), []).result

    def exchange(self, src_vec, src_dist: Distribution, src_coords, elem, targets, dst_n: int, static=None):
        """Write every register at its linear index in shared memory, then read `targets` (linear
        i32 vector). `static`: the same targets as numbers per thread ([threads, registers]) where
        known at compile time; the reads then follow `vector_reads` (one load per distinct
        element run a thread needs, as wide as the runs allow, addressed from a few registers)."""
        if isinstance(elem, ir.IntegerType) and elem.width == 1:
            # Memory holds bytes: the LLVM lowering of memref aborts on an i1 store.
            i8 = ir.IntegerType.get_signless(8)
            wide = arith.extui(ir.VectorType.get([src_dist.num_registers], i8), src_vec)
            got = self.exchange(wide, src_dist, src_coords, i8, targets, dst_n, static)
            return arith.cmpi(arith.CmpIPredicate.ne, got, _splat(arith.ConstantOp(i8, 0).result, dst_n))
        buf = self.scratch(elem, math.prod(src_dist.shape), align=16)
        lin = linear_index(src_coords, row_major_strides(src_dist.shape), src_dist.num_registers)
        first = guards(self, linear(thread_coords(src_dist, self.threads), src_dist.shape))  # one copy writes
        gpu.barrier()
        for v, i, f in zip(_elements(src_vec, src_dist.num_registers), _elements(lin, src_dist.num_registers), first):
            guarded(f, lambda v=v, i=i: memref.StoreOp(v, buf, [to_index(i)]))
        gpu.barrier()
        at = _elements(targets, dst_n)
        if static is None:
            return _from_elements([memref.LoadOp(buf, [to_index(i)]).result for i in at], elem)
        out = [None] * dst_n
        for r, w, base, offset in vector_reads(static, _bits(elem) // 8):
            out[r : r + w] = load_run(buf, w, to_index(arith.addi(at[base], _i32(offset)) if offset else at[base]), elem)
        for r, first in repeats(static).items():
            out[r] = out[first]
        return _from_elements(out, elem)

    # ---- translation ---------------------------------------------------------------
    def value(self, v):
        got = self.map[v]
        if got is None and v in self.deferred:  # held_registers.defer: made where first asked for
            make, block = self.deferred[v]
            got = make()
            if ir.InsertionPoint.current.block == block:  # (elsewhere it would not dominate later uses)
                self.map[v] = got
                del self.deferred[v]
        return got

    def block(self, old_block):
        for op in old_block.operations:
            self.op(op.operation)

    def op(self, op):
        try:
            self._op(op)
        except TileError as e:
            if getattr(e, "location", None) is None:
                e.location = op.location  # reported at the user's source line
            raise

    def _op(self, op):
        name = op.name
        handler = self.lowerings.get(name)
        with op.location:
            if handler is not None:
                return handler(self, op)
            tensors = any(isinstance(v.type, ir.RankedTensorType) for v in [*op.operands, *op.results])
            if is_elementwise(op) and tensors:
                if only_read_through(op.results[0]):  # (a row's mean, read back along the row)
                    return defer(self, op.results[0], lambda: self.elementwise(op))
                self.map[op.results[0]] = self.elementwise(op)
                return
            if tensors or op.regions:
                raise TileError(f"'{name}' is not supported by the GPU codegen yet")
            form = f32_form(op, op.results[0].type) if len(op.results) == 1 else None
            if form is not None:
                self.map[op.results[0]] = form(*(self.value(o) for o in op.operands))
                return
            if name == "arith.extf" and is_float8(op.operands[0].type):
                self.map[op.results[0]] = widen_float8([self.value(op.operands[0])], op.results[0].type, self.float8_cvt)[0]
                return
            if name == "arith.truncf" and is_float8(op.results[0].type):
                self.map[op.results[0]] = narrow_float8([self.value(op.operands[0])], op.results[0].type, self.float8_cvt)[0]
                return
            new = op.clone()
            for i, o in enumerate(op.operands):
                new.operands[i] = self.value(o)
            for a, b in zip(op.results, new.results):
                self.map[a] = b

    def _carried_type(self, v):
        return self.vtype(v) if isinstance(v.type, ir.RankedTensorType) else v.type

    # The value model (register_values.py) as methods: the lowerings reach it through the translator.
    clone_elementwise, elementwise, eval_at = (register_values.clone_elementwise, register_values.elementwise,
                                               register_values.eval_at)
    rematerializable, remat_own, uniform_run = (register_values.rematerializable, register_values.remat_own,
                                                register_values.uniform_run)


@lowering("arith.constant", target="gpu")
def op_arith_constant(self, op):
    t = op.results[0].type
    if isinstance(t, ir.RankedTensorType):
        self.map[op.results[0]] = self.eval_at(op.results[0], self.coords(self.dist(op.results[0])), self.dist(op.results[0]).num_registers)
    else:
        self.map[op.results[0]] = arith.ConstantOp(t, op.attributes["value"]).result


@lowering("tile.program_id", target="gpu")
def op_tile_program_id(self, op):
    dim = _DIMS[ir.IntegerAttr(op.attributes["axis"]).value]
    self.map[op.results[0]] = arith.index_cast(ir.IntegerType.get_signless(32), gpu.block_id(dim))


@lowering("tile.num_programs", target="gpu")
def op_tile_num_programs(self, op):
    dim = _DIMS[ir.IntegerAttr(op.attributes["axis"]).value]
    self.map[op.results[0]] = arith.index_cast(ir.IntegerType.get_signless(32), gpu.grid_dim(dim))


@lowering("func.return", target="gpu")
def op_func_return(self, op):
    if self.has_tma_store:  # the block's shared memory outlives the TMA stores' reads of it
        bulk_reads_done(self, barrier=False)
    gpu.ReturnOp([])


@lowering("scf.yield", target="gpu")
def op_scf_yield(self, op):
    scf.YieldOp([self.value(v) for v in op.operands])


@lowering("scf.for", target="gpu")
def op_scf_for(self, op):
    lb, ub, step, *inits = [self.value(v) for v in op.operands]
    new = scf.ForOp(lb, ub, step, inits)
    old_body = op.regions[0].blocks[0]
    for a, b in zip(old_body.arguments, [new.induction_variable, *new.inner_iter_args]):
        self.map[a] = b
    with ir.InsertionPoint(new.body):
        self.block(old_body)
    for a, b in zip(op.results, new.results):
        self.map[a] = b


@lowering("scf.while", target="gpu")
def op_scf_while(self, op):
    inits = [self.value(v) for v in op.operands]
    new = scf.WhileOp([self._carried_type(r) for r in op.results], inits)
    for old_region, new_region in zip(op.regions, (new.before, new.after)):
        old_block = old_region.blocks[0]
        block = new_region.blocks.append(*[self._carried_type(a) for a in old_block.arguments])
        for a, b in zip(old_block.arguments, block.arguments):
            self.map[a] = b
        with ir.InsertionPoint(block):
            self.block(old_block)
    for a, b in zip(op.results, new.results):
        self.map[a] = b


@lowering("scf.condition", target="gpu")
def op_scf_condition(self, op):
    scf.ConditionOp(self.value(op.operands[0]), [self.value(v) for v in list(op.operands)[1:]])


@lowering("scf.if", target="gpu")
def op_scf_if(self, op):
    new = scf.IfOp(self.value(op.operands[0]), [self._carried_type(r) for r in op.results], has_else=len(op.regions[1].blocks) > 0)
    with ir.InsertionPoint(new.then_block):
        self.block(op.regions[0].blocks[0])
    if len(op.regions[1].blocks):
        with ir.InsertionPoint(new.else_block):
            self.block(op.regions[1].blocks[0])
    for a, b in zip(op.results, new.results):
        self.map[a] = b


@lowering("scf.execute_region", target="gpu")
def op_scf_execute_region(self, op):  # a fusion group: its ops simply run in place
    body = op.regions[0].blocks[0]
    ops = list(body.operations)
    for inner in ops[:-1]:
        self.op(inner.operation)
    for r, v in zip(op.results, ops[-1].operands):
        self.map[r] = self.value(v)


def read_only_arguments(fn) -> set:
    """The tensor arguments no store or atomic of the kernel writes. With the
    arguments known not to overlap (`noalias`, checked at launch), nothing changes them
    while the kernel runs, and their loads may take the non-coherent path."""
    args = list(fn.regions[0].blocks[0].arguments)
    written = [o.operands[0] for o in all_ops(fn) if o.name in WRITES]
    if any(w not in args for w in written):  # a store through anything else: assume it may write any
        return set()
    return {a for a in args if isinstance(a.type, ir.MemRefType) and a not in written}


@register_pass("convert-tile-to-gpu")
@dataclass
class ConvertTileToGpu:
    num_warps: int = 4
    divisible_args: str = ""  # comma-separated indices of int arguments known to be multiples of 16
    noalias: bool = False  # no two tensor arguments overlap: ld.global.nc for those never written (program-invariant loads)
    float8_cvt: bool = True  # sm_89+: float8 converted by `cvt.rn.f16x2.e4m3x2` (else by integer decode, `float8.py`)
    arch: int = 90  # the target's compute capability (80 for sm_80): what PTX it may use

    def run(self, module_op):
        module_op.attributes["gpu.container_module"] = ir.UnitAttr.get()
        with ir.InsertionPoint(module_op.regions[0].blocks[0]), module_op.location:
            gmod = gpu.GPUModuleOp("tile_kernels")
            gmod.regions[0].blocks.append()
        for fn in kernel_functions(module_op):
            self.convert(fn, gmod)

    def convert(self, fn, gmod):
        name = ir.StringAttr(fn.attributes["sym_name"]).value
        for op in all_ops(fn):
            for why in filter(None, (layout_error(encoding_of(r.type), self.num_warps) for r in op.results)):
                raise TileError(f"kernel {name}: {op.name}'s {why}")
        ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        with ir.InsertionPoint(gmod.regions[0].blocks[0]), fn.location:
            gfn = gpu.GPUFuncOp(ir.TypeAttr.get(ftype), sym_name=name, kernel=True,
                                known_block_size=[self.num_warps * 32, 1, 1])
        block = gfn.regions[0].blocks.append(*ftype.inputs)
        t = Translator(fn, block, self.num_warps, argument_divisibility(fn, self.divisible_args), self.noalias, self.float8_cvt, self.arch)
        old = fn.regions[0].blocks[0]
        for a, b in zip(old.arguments, block.arguments):
            t.map[a] = b
        with ir.InsertionPoint(block):
            t.block(old)
        limit = BLOCK_SHARED.get(f"sm_{self.arch}", MAX_SHARED)
        if t.scratch_bytes > limit:
            err = TileError(f"tile too large: kernel {name} needs {t.scratch_bytes} bytes of shared memory, more than the "
                            f"{limit} a sm_{self.arch} block can have (this op's buffer and those live here, a pipelined "
                            "loop's copies among them): use smaller tiles or fewer stages")
            err.location = t.scratch_peak_at
            raise err
        gfn.attributes["tile.shared_bytes"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), t.scratch_bytes)
        fn.erase()
