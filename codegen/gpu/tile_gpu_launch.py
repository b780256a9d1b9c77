"""`tile-gpu-launch`: turn a bufferized kernel into a `gpu.func` whose block of
threads shares the work of each loop nest.

Our own pass. Upstream's `gpu-map-parallel-loops` + `convert-parallel-loops-to-gpu`
build a host-side `gpu.launch` and outline it, which reorders the kernel's
arguments; here the kernel *is* the function, so its signature (and so the
launch ABI) is kept as written. First version of the thread mapping:

- the function moves into `gpu.module @tile_kernels` as a `gpu.func ... kernel`;
- `tile.program_id` / `tile.num_programs` become `gpu.block_id` / `gpu.grid_dim`;
- each outermost `scf.parallel` becomes a block-strided loop over its
  flattened iteration space (thread t takes elements t, t + T, ...), fenced by
  `gpu.barrier`s, since the next nest may read what other threads wrote;
- a tile buffer written inside such a loop lives in shared memory (a
  workgroup `memref.global`); one written only by code every thread runs
  redundantly (scalar reductions) is private to each thread (`memref.alloca`).

    # before
    func.func @k(%x: memref<?xf32, ...>) attributes {tile.kernel} {
      scf.parallel (%i) = (%c0) to (%c1024) step (%c1) { ... }
    # after
    gpu.module @tile_kernels {
      gpu.func @k(%x: memref<?xf32, ...>) kernel {
        gpu.barrier
        scf.for %t = %tid to %c1024 step %c128 { ... }
        gpu.barrier
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf

from ...dialects.layout import element_bits
from ...frontend.errors import TileError
from ...passes.registry import register_pass
from ...passes.walk import collect
from ..common.ir_builders import kernel_functions

STATIC_SHARED_LIMIT = 48 * 1024
_VIEW_OPS = {"memref.subview", "memref.expand_shape", "memref.collapse_shape", "memref.cast", "memref.reinterpret_cast"}
_DIMS = {0: gpu.Dimension.x, 1: gpu.Dimension.y, 2: gpu.Dimension.z}


def _ancestors(op):
    p = op.parent
    while p is not None and p.name != "builtin.module":
        yield p
        p = p.parent


def outermost_parallel_loops(fn) -> list:
    return [p for p in collect(fn, {"scf.parallel"}) if not any(a.name == "scf.parallel" for a in _ancestors(p))]


def _carried(v) -> list[ir.Value]:
    """The values a buffer `v` becomes through control flow: the results of the `scf.if` or
    `scf.for` whose yield passes it, and a loop's iteration argument and result it starts."""
    out = []
    for use in v.uses:
        owner, n = use.owner, use.operand_number
        if owner.name == "scf.yield":
            parent = owner.parent
            out.append(parent.results[n])
            if parent.name == "scf.for":
                out.append(parent.regions[0].blocks[0].arguments[n + 1])
        elif owner.name == "scf.for" and n >= 3:
            out += [owner.results[n - 3], owner.regions[0].blocks[0].arguments[n - 2]]
    return out


def buffer_groups(allocs) -> list[tuple[list, list]]:
    """The allocs whose buffers control flow merges (a tile yielded by either branch of an
    `scf.if`, or carried by a loop), each group with every value that may hold one of them:
    one address space for the whole group, or the merged values' types disagree."""
    grouped, groups = set(), []
    for alloc in allocs:
        if alloc.results[0] in grouped:
            continue
        members, values, seen, todo = [], [], set(), [alloc.results[0]]
        while todo:
            v = todo.pop()
            if v in seen:
                continue
            seen.add(v)
            values.append(v)
            op = None if isinstance(v.owner, ir.Block) else v.owner
            if op is not None and op.name == "memref.alloc":
                members.append(op)
            related = [r for u in v.uses if u.owner.name in _VIEW_OPS and u.operand_number == 0 for r in u.owner.results]
            related += _carried(v)
            if op is not None and op.name in ("scf.if", "scf.for"):  # (what its yields pass in)
                n = list(op.results).index(v)
                related += [_terminator(b).operands[n] for r in op.regions for b in r.blocks]
                if op.name == "scf.for":
                    related.append(op.operands[3 + n])
            loop = v.owner.owner if isinstance(v.owner, ir.Block) else None
            if loop is not None and loop.name == "scf.for" and v.arg_number >= 1:  # (an iteration argument)
                n = v.arg_number - 1
                related += [loop.results[n], loop.operands[3 + n], _terminator(v.owner).operands[n]]
            todo += related
        groups.append((members, values))
        grouped.update(m.results[0] for m in members)
    return groups


def _terminator(block):
    ops = block.operations
    return ops[len(ops) - 1]


def _in_any(op, loops) -> bool:
    ids = {id_of(l) for l in loops}
    return any(id_of(a) in ids for a in _ancestors(op))


def id_of(op):
    return op.operation if hasattr(op, "operation") else op


def _bytes(ty: ir.MemRefType) -> int:
    return math.prod(ty.shape) * element_bits(ty.element_type) // 8


def _with_space(ty, space):
    t = ir.MemRefType(ty)
    return ir.MemRefType.get(list(t.shape), t.element_type, t.layout, space)


def place_buffers(fn, gpu_module, loops, name: str) -> int:
    """Shared memory for buffers written by distributed loops, private allocas for the rest."""
    workgroup = ir.Attribute.parse("#gpu.address_space<workgroup>")
    shared_bytes, largest = 0, None  # (largest: the biggest buffer's bytes and location, where a too-large error points)
    allocs = collect(fn, {"memref.alloc"})
    stores = collect(fn, {"memref.store"})
    shared_group = {}  # an alloc's buffer -> whether its group goes to shared memory
    for members, values in buffer_groups(allocs):
        writers = [s for s in stores if any(s.operands[1] == v for v in values)]
        shared = any(_in_any(w, loops) for w in writers)
        for m in members:
            shared_group[m.results[0]] = shared
        if shared:  # (its views and the values control flow carries it in; the allocs become globals below)
            for v in values:
                if isinstance(v.owner, ir.Block) or v.owner.name != "memref.alloc":
                    v.set_type(_with_space(v.type, workgroup))
    for i, alloc in enumerate(allocs):
        ty = ir.MemRefType(alloc.results[0].type)
        if not ty.has_static_shape:
            raise TileError("a tile buffer has a dynamic shape; tiles must have static shapes")
        if shared_group[alloc.results[0]]:
            if largest is None or _bytes(ty) > largest[0]:
                largest = (_bytes(ty), alloc.location)
            shared_bytes += _bytes(ty)
            sym = f"__tile_shared_{i}"
            gty = _with_space(ty, workgroup)
            with ir.InsertionPoint(gpu_module.regions[0].blocks[0]), alloc.location:
                memref.GlobalOp(sym, ir.TypeAttr.get(gty), sym_visibility="private", alignment=16)
            with ir.InsertionPoint(alloc), alloc.location:
                new = memref.GetGlobalOp(gty, sym).result
        else:
            with ir.InsertionPoint(alloc), alloc.location:
                new = memref.AllocaOp(ty, [], []).result
        alloc.results[0].replace_all_uses_with(new)
        alloc.erase()
    for d in collect(fn, {"memref.dealloc"}):
        d.erase()
    if shared_bytes > STATIC_SHARED_LIMIT:
        err = TileError(f"tile too large: kernel {name}: its tiles need {shared_bytes} bytes of shared memory, more than the "
                        f"{STATIC_SHARED_LIMIT} this target allows; use smaller block sizes")
        err.location = largest[1]  # (the op of the biggest buffer: the user's line)
        raise err
    return shared_bytes


def distribute(loop, num_threads: int):
    """scf.parallel over a box -> a loop over its flattened index, strided by the block size."""
    n = len(loop.regions[0].blocks[0].arguments)
    ops = list(loop.operands)
    lbs, ubs, steps = ops[:n], ops[n : 2 * n], ops[2 * n : 3 * n]
    idx = ir.IndexType.get()
    with ir.InsertionPoint(loop), loop.location:
        gpu.barrier()
        counts = [arith.ceildivsi(arith.subi(u, l), s) for l, u, s in zip(lbs, ubs, steps)]
        total = counts[0]
        for c in counts[1:]:
            total = arith.muli(total, c)
        tid = gpu.thread_id(gpu.Dimension.x)
        step = arith.ConstantOp(idx, num_threads).result
        new = scf.ForOp(tid, total, step)
        with ir.InsertionPoint(new.body):
            rest, ivs = new.induction_variable, [None] * n
            for d in range(n - 1, -1, -1):  # row-major: the last dim varies fastest
                k = arith.remsi(rest, counts[d]) if d else rest
                ivs[d] = arith.addi(lbs[d], arith.muli(k, steps[d]))
                if d:
                    rest = arith.divsi(rest, counts[d])
            term = scf.YieldOp([])
        after = gpu.BarrierOp()
    body = loop.regions[0].blocks[0]
    for arg, iv in zip(body.arguments, ivs):
        arg.replace_all_uses_with(iv)
    for op in list(body.operations)[:-1]:  # drop scf.reduce
        op.move_before(term)
    loop.erase()
    return after


@register_pass("tile-gpu-launch")
@dataclass
class TileGpuLaunch:
    num_threads: int = 128

    def run(self, module_op):
        module_op.attributes["gpu.container_module"] = ir.UnitAttr.get()
        with ir.InsertionPoint(module_op.regions[0].blocks[0]), module_op.location:
            gmod = gpu.GPUModuleOp("tile_kernels")
            gmod.regions[0].blocks.append()
        for fn in kernel_functions(module_op):
            self.convert(fn, gmod)

    def convert(self, fn, gmod):
        name = ir.StringAttr(fn.attributes["sym_name"]).value
        ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        loops = outermost_parallel_loops(fn)
        shared = place_buffers(fn, gmod, loops, name)
        for op in collect(fn, {"tile.program_id", "tile.num_programs"}):
            with ir.InsertionPoint(op), op.location:
                dim = _DIMS[ir.IntegerAttr(op.attributes["axis"]).value]
                v = gpu.block_id(dim) if op.name == "tile.program_id" else gpu.grid_dim(dim)
                op.results[0].replace_all_uses_with(arith.index_cast(ir.IntegerType.get_signless(32), v))
            op.erase()
        for loop in loops:
            distribute(loop, self.num_threads)
        with ir.InsertionPoint(gmod.regions[0].blocks[0]), fn.location:
            gfn = gpu.GPUFuncOp(ir.TypeAttr.get(ftype), sym_name=name, kernel=True,
                                known_block_size=[self.num_threads, 1, 1])
        gfn.attributes["tile.shared_bytes"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), shared)
        old = fn.regions[0].blocks[0]
        new = gfn.regions[0].blocks.append(*ftype.inputs)
        for a, b in zip(old.arguments, new.arguments):
            a.replace_all_uses_with(b)
        ops = list(old.operations)
        with ir.InsertionPoint(new), fn.location:
            ret = gpu.ReturnOp([])
        for op in ops[:-1]:
            op.move_before(ret)
        fn.erase()
