"""A compile-time check for shared-memory races in a kernel's `gpu` stage (what
`convert-tile-to-gpu` made): the kernel's integer arithmetic is evaluated for every
thread of the block at once (numpy, one row per thread), and every `memref`/`vector`
access to a view of the dynamic shared memory is recorded with the bytes each thread
touches. Between two barriers (one phase), a byte that one thread writes and another
thread reads or writes is a hazard, what compute-sanitizer's racecheck reports on a GPU
(a write-write one even where both write the same value).

What it models: `gpu.thread_id`, integer `arith` and `vector` ops, `memref.view` of the
dynamic shared memory, `scf.if` (a per-thread condition masks the threads; one it cannot
evaluate runs both sides, whose accesses never meet), `scf.for` / `scf.while` (two
iterations, so that an iteration's writes meet the next one's accesses before a
barrier), `scf.execute_region`. Kernel integer arguments and block ids are uniform
samples; values read from memory are unknown, and an access at an unknown address is
counted (`Report.unknown`), not checked. Asynchronous accesses (TMA, wgmma's operand
reads) go through the async proxy, which racecheck does not see either; `cp.async`
writes are counted as their thread's writes.

    report = check(launcher.asm["gpu"])
    assert not report.hazards, report

Also a command: `python -m tile.tests.shared_races CACHE_DIR` checks every sm_* entry.
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass, field

import numpy as np
from mlir import ir

_SAMPLE = 1024  # every integer kernel argument (sizes, strides: multiples of 16 where specialized)

_BINARY = {
    "arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply,
    "arith.andi": np.bitwise_and, "arith.ori": np.bitwise_or, "arith.xori": np.bitwise_xor,
    "arith.maxsi": np.maximum, "arith.minsi": np.minimum, "arith.maxui": np.maximum, "arith.minui": np.minimum,
    "arith.shli": np.left_shift, "arith.shrui": np.right_shift, "arith.shrsi": np.right_shift,
}
_DIVISIONS = {
    "arith.divui": lambda a, b: a // b, "arith.remui": lambda a, b: a % b,
    "arith.divsi": lambda a, b: np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b)),
    "arith.remsi": lambda a, b: np.sign(a) * (np.abs(a) % np.abs(b)),
    "arith.ceildivsi": lambda a, b: -(-a // b), "arith.floordivsi": lambda a, b: a // b,
}
_COMPARE = {0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater, 5: np.greater_equal,
            6: np.less, 7: np.less_equal, 8: np.greater, 9: np.greater_equal}
_BARRIERS = ("gpu.barrier", "nvvm.barrier", "nvvm.barrier0", "nvvm.barrier.arrive")


@dataclass(frozen=True)
class Shared:
    """A view of the dynamic shared memory: per-thread base byte offset, element bytes, shape."""
    base: np.ndarray
    elem_bytes: int
    shape: tuple[int, ...]


@dataclass
class Access:
    op: str  # the op as printed (location-free), for reports
    write: bool
    threads: np.ndarray  # [T] bool
    start: np.ndarray  # [T] byte offset
    size: int
    path: tuple  # ((scf.if number, side), ...) of the conditions it could not evaluate


@dataclass
class Hazard:
    phase: int
    byte: int
    threads: tuple[int, ...]
    ops: tuple[str, ...]

    def __str__(self):
        ops = "\n      ".join(self.ops)
        return f"phase {self.phase}: byte {self.byte} accessed by threads {self.threads[:8]} through\n      {ops}"


@dataclass
class Report:
    hazards: list[Hazard] = field(default_factory=list)
    checked: int = 0  # accesses whose addresses were known
    unknown: list[str] = field(default_factory=list)  # accesses at addresses it could not evaluate
    phases: int = 0
    out_of_bounds: list[str] = field(default_factory=list)  # past the launch's dynamic shared memory

    def __repr__(self):
        head = f"{len(self.hazards)} hazard(s) in {self.phases} phases ({self.checked} accesses checked, " \
               f"{len(self.unknown)} at unknown addresses, {len(self.out_of_bounds)} out of bounds)"
        return "\n".join([head, *(f"  {h}" for h in self.hazards[:12]), *(f"  {o}" for o in self.out_of_bounds[:4])])


def _int_width(t) -> int | None:
    if isinstance(t, ir.IndexType):
        return 64
    if isinstance(t, ir.IntegerType):
        return t.width
    if isinstance(t, ir.VectorType):
        return _int_width(t.element_type)
    return None


def _wrap(x, width):
    if width is None or width >= 64:
        return x
    if width == 1:
        return x & 1
    half = 1 << (width - 1)
    return (x + half) % (1 << width) - half


def _bytes(t) -> int:
    w = _int_width(t)
    if w is not None:
        return max(w, 8) // 8
    return {"f16": 2, "bf16": 2, "f32": 4, "f64": 8}.get(str(t), 1) if "f8" not in str(t) else 1


class _Checker:
    def __init__(self, threads: int, shared_bytes: int | None = None):
        self.T = threads
        self.limit = shared_bytes
        self.env: dict = {}
        self.accesses: list[Access] = []
        self.report = Report()
        self.ifs = 0
        self.globals: dict = {}  # a static shared buffer's name -> its (made-up, disjoint) base

    # ---- values ----------------------------------------------------------------------
    def get(self, v):
        return self.env.get(v)

    def uniform(self, x):
        return np.full(self.T, x, dtype=np.int64)

    def set(self, v, x):
        self.env[v] = x

    # ---- phases ----------------------------------------------------------------------
    def barrier(self):
        self.report.phases += 1
        accs = self.accesses
        self.accesses = []
        if len(accs) < 2 and not any(a.threads.sum() > 1 for a in accs):
            return
        paths = sorted({a.path for a in accs})
        for i, p in enumerate(paths):
            for q in paths[i:]:
                if _compatible(p, q):
                    self._check([a for a in accs if a.path in (p, q)])

    def _check(self, accs):
        t_id, starts, sizes, writes, which = [], [], [], [], []
        tid = np.arange(self.T)
        for k, a in enumerate(accs):
            on = a.threads
            t_id.append(tid[on])
            starts.append(a.start[on])
            sizes.append(np.full(on.sum(), a.size))
            writes.append(np.full(on.sum(), a.write))
            which.append(np.full(on.sum(), k))
        t_id, starts, sizes, writes, which = map(np.concatenate, (t_id, starts, sizes, writes, which))
        if not writes.any():
            return
        # every byte of every access
        reps = sizes.astype(np.int64)
        byte = np.repeat(starts, reps) + (np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps))
        thread, write, acc = np.repeat(t_id, reps), np.repeat(writes, reps), np.repeat(which, reps)
        order = np.lexsort((thread, byte))
        byte, thread, write, acc = byte[order], thread[order], write[order], acc[order]
        starts_of = np.flatnonzero(np.r_[True, byte[1:] != byte[:-1]])
        lo = np.minimum.reduceat(thread, starts_of)
        hi = np.maximum.reduceat(thread, starts_of)
        any_write = np.maximum.reduceat(write.astype(np.int8), starts_of) > 0
        bad = np.flatnonzero((lo != hi) & any_write)
        seen = set()
        for b in bad:
            s = starts_of[b]
            e = starts_of[b + 1] if b + 1 < len(starts_of) else len(byte)
            ops = tuple(sorted({accs[k].op for k in acc[s:e]}))
            if ops in seen:
                continue
            seen.add(ops)
            self.report.hazards.append(Hazard(self.report.phases, int(byte[s]), tuple(sorted(set(thread[s:e].tolist()))), ops))

    # ---- ops -------------------------------------------------------------------------
    def block(self, block, mask, path):
        for op in block.operations:
            self.op(op.operation, mask, path)

    def op(self, op, mask, path):
        name = op.name
        res = list(op.results)
        if name in _BARRIERS:
            self.barrier()
            return
        if name == "arith.constant":
            attr = op.attributes["value"]
            if isinstance(attr, ir.IntegerAttr):
                self.set(res[0], self.uniform(ir.IntegerAttr(attr).value))
            elif isinstance(attr, ir.DenseIntElementsAttr):
                vals = np.array(list(ir.DenseIntElementsAttr(attr)), dtype=np.int64)
                n = ir.VectorType(res[0].type).shape[0] if isinstance(res[0].type, ir.VectorType) else len(vals)
                vals = np.broadcast_to(vals, (n,)) if vals.size == 1 else vals
                self.set(res[0], np.broadcast_to(vals, (self.T, n)).copy())
            return
        if name == "gpu.thread_id":
            dim = str(op.attributes["dimension"])
            self.set(res[0], np.arange(self.T) if dim.endswith("x>") else self.uniform(0))
            return
        if name == "gpu.lane_id":
            self.set(res[0], np.arange(self.T) % 32)
            return
        if name == "gpu.block_dim":
            self.set(res[0], self.uniform(self.T if str(op.attributes["dimension"]).endswith("x>") else 1))
            return
        if name in ("gpu.block_id", "gpu.grid_dim"):
            self.set(res[0], self.uniform(1))
            return
        if name == "memref.get_global" and "workgroup" in str(res[0].type):  # (the linalg codegen's buffers)
            t = ir.MemRefType(res[0].type)
            base = self.globals.setdefault(str(op.attributes["name"]), (len(self.globals) + 1) << 24)
            self.set(res[0], Shared(self.uniform(base), _bytes(t.element_type), tuple(t.shape)))
            return
        if name == "gpu.dynamic_shared_memory":
            self.set(res[0], Shared(self.uniform(0), 1, (-1,)))
            return
        ins = [self.get(o) for o in op.operands]
        width = _int_width(res[0].type) if res else None
        if name in _BINARY or name in _DIVISIONS:
            a, b = ins
            if a is None or b is None or isinstance(a, Shared):
                return
            a, b = np.broadcast_arrays(a, b)
            if name in _DIVISIONS:
                if (b == 0).any():
                    return
                if name in ("arith.divui", "arith.remui") and width:
                    a, b = a % (1 << min(width, 63)), b % (1 << min(width, 63))
            elif name == "arith.shrui" and width:
                a = a % (1 << min(width, 63))
            self.set(res[0], _wrap((_BINARY.get(name) or _DIVISIONS[name])(a, b), width))
            return
        if name == "arith.cmpi":
            a, b = ins
            if a is None or b is None:
                return
            pred = ir.IntegerAttr(op.attributes["predicate"]).value
            if pred >= 6:  # unsigned
                w = _int_width(op.operands[0].type)
                a, b = a % (1 << min(w, 63)), b % (1 << min(w, 63))
            self.set(res[0], _COMPARE[pred](a, b).astype(np.int64))
            return
        if name == "arith.select":
            c, a, b = ins
            if c is not None and a is not None and b is not None:
                c = c if c.ndim == a.ndim or c.ndim > 1 else c[:, None]
                self.set(res[0], np.where(c != 0, a, b))
            return
        if name in ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci"):
            a = ins[0]
            if a is not None:
                if name in ("arith.extui", "arith.index_castui"):
                    a = a % (1 << min(_int_width(op.operands[0].type), 63))
                self.set(res[0], _wrap(a, width))
            return
        if name == "vector.extract":
            a = ins[0]
            pos = list(ir.DenseI64ArrayAttr(op.attributes["static_position"]))
            if a is not None and len(pos) == 1 and pos[0] >= 0 and a.ndim == 2:
                self.set(res[0], a[:, pos[0]])
            return
        if name == "vector.from_elements":
            if all(x is not None for x in ins):
                self.set(res[0], np.stack(ins, axis=1))
            return
        if name in ("vector.broadcast", "vector.splat"):
            a = ins[0]
            if a is not None and a.ndim == 1 and isinstance(res[0].type, ir.VectorType):
                n = math.prod(ir.VectorType(res[0].type).shape)
                self.set(res[0], np.repeat(a[:, None], n, axis=1))
            return
        if name == "vector.insert":
            v, dest = ins[0], ins[1]
            pos = list(ir.DenseI64ArrayAttr(op.attributes["static_position"]))
            if v is not None and dest is not None and len(pos) == 1 and pos[0] >= 0 and v.ndim == 1:
                out = dest.copy()
                out[:, pos[0]] = v
                self.set(res[0], out)
            return
        if name == "memref.view":
            buf, off = ins[0], ins[1]
            if isinstance(buf, Shared) and off is not None:
                t = ir.MemRefType(res[0].type)
                self.set(res[0], Shared(buf.base + off, _bytes(t.element_type), tuple(t.shape)))
            return
        if name in ("memref.store", "vector.store", "memref.load", "vector.load", "nvgpu.device_async_copy",
                    "nvgpu.ldmatrix"):
            self.access(op, name, ins, mask, path)
            return
        if name == "scf.if":
            self.scf_if(op, ins[0], mask, path)
            return
        if name == "scf.for":
            self.scf_for(op, ins, mask, path)
            return
        if name == "scf.while":
            self.scf_while(op, ins, mask, path)
            return
        if name == "scf.execute_region":
            self.run_region(op.regions[0].blocks[0], [], mask, path, op)
            return
        if name in ("scf.yield", "scf.condition"):
            self._yielded = ins
            return
        if op.regions and any(len(r.blocks) for r in op.regions):
            for r in op.regions:
                for b in r.blocks:
                    self.block(b, mask, path)

    def access(self, op, name, ins, mask, path):
        if name == "nvgpu.device_async_copy":  # dst, dst indices..., src, src indices..., elements
            n_dst = ir.MemRefType(op.operands[0].type).rank
            buf, idx, write = ins[0], ins[1 : 1 + n_dst], True
            size = ir.IntegerAttr(op.attributes["dstElements"]).value
        elif name == "nvgpu.ldmatrix":
            buf, idx, write, size = ins[0], ins[1:], False, 16 // _bytes(ir.MemRefType(op.operands[0].type).element_type)
        else:
            store = name.endswith("store")
            buf, idx, write = (ins[1], ins[2:], True) if store else (ins[0], ins[1:], False)
            vt = (op.operands[0] if store else op.results[0]).type
            size = math.prod(ir.VectorType(vt).shape) if isinstance(vt, ir.VectorType) else 1
        if not isinstance(buf, Shared):
            return
        text = f"{name} #{self.report.checked + len(self.report.unknown)} {_short(op)}"
        if any(i is None for i in idx) or any(s < 0 for s in buf.shape):
            self.report.unknown.append(text)
            return
        lin = np.zeros(self.T, dtype=np.int64)
        for i, s in zip(idx, buf.shape):
            lin = lin * s + i
        self.report.checked += 1
        start = buf.base + lin * buf.elem_bytes
        self.accesses.append(Access(text, write, mask.copy(), start, size * buf.elem_bytes, path))
        # (static buffers sit at made-up bases from 1 << 24: only the dynamic memory has a known size)
        outside = mask & (start < 1 << 24) & ((start < 0) | (start + size * buf.elem_bytes > (self.limit or 1 << 24)))
        if self.limit is not None and outside.any():
            t = int(np.argmax(outside))
            self.report.out_of_bounds.append(f"thread {t} at byte {int(start[t])} of {self.limit}: {text}")

    def run_region(self, block, args, mask, path, op=None):
        for a, v in zip(block.arguments, args):
            self.set(a, v)
        self._yielded = []
        self.block(block, mask, path)
        got = self._yielded
        if op is not None:
            for r, v in zip(op.results, got):
                self.set(r, v)
        return got

    def scf_if(self, op, cond, mask, path):
        self.ifs += 1
        number = self.ifs
        has_else = len(op.regions[1].blocks) > 0
        if cond is not None:
            c = cond != 0
            then = self.run_region(op.regions[0].blocks[0], [], mask & c, path)
            other = self.run_region(op.regions[1].blocks[0], [], mask & ~c, path) if has_else else []
            for r, a, b in zip(op.results, then, other):
                if a is not None and b is not None:
                    self.set(r, np.where(c if a.ndim == 1 else c[:, None], a, b))
            return
        self.run_region(op.regions[0].blocks[0], [], mask, path + ((number, 0),))
        if has_else:
            self.run_region(op.regions[1].blocks[0], [], mask, path + ((number, 1),))

    def scf_for(self, op, ins, mask, path):
        lb, ub, step, *carried = ins
        lo = lb if lb is not None else self.uniform(0)
        st = step if step is not None else self.uniform(1)
        trips = 2  # (at least one: a body the samples skip may run in another launch)
        if lb is not None and ub is not None and step is not None and (st > 0).all():
            trips = int(min(2, max(1, np.max(-(-(ub - lb) // st)))))
        body = op.regions[0].blocks[0]
        iv = lo
        for _ in range(trips):
            carried = self.run_region(body, [iv, *carried], mask, path)
            iv = iv + st
        for r, v in zip(op.results, carried):
            self.set(r, v)

    def scf_while(self, op, ins, mask, path):
        args = ins
        for _ in range(2):
            cond = self.run_region(op.regions[0].blocks[0], args, mask, path)
            args = self.run_region(op.regions[1].blocks[0], cond[1:], mask, path)
        for r in op.results:
            self.set(r, None)


def _compatible(p, q) -> bool:
    sides = dict(p)
    return all(sides.get(k, s) == s for k, s in q)


def _short(op) -> str:
    text = str(op).strip().splitlines()[0]
    return text if len(text) < 200 else text[:200] + "..."


def check(gpu_stage: str, shared_bytes: int | None = None) -> Report:
    """Shared-memory hazards of every kernel in a `gpu` stage text (`launcher.asm["gpu"]`);
    with `shared_bytes` (the launch's, `launcher.metadata["shared_bytes"]`), also accesses past it."""
    from tile.dialects import make_context

    ctx = make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(gpu_stage)
        total = Report()
        for fn in _kernels(module.operation):
            threads = _block_size(fn)
            c = _Checker(threads, shared_bytes)
            entry = fn.regions[0].blocks[0]
            for a in entry.arguments:
                if _int_width(a.type) is not None:
                    c.set(a, c.uniform(_SAMPLE))
            c.block(entry, np.ones(threads, dtype=bool), ())
            c.barrier()
            total.hazards += c.report.hazards
            total.checked += c.report.checked
            total.unknown += c.report.unknown
            total.phases += c.report.phases
            total.out_of_bounds += c.report.out_of_bounds
        return total


def _kernels(module_op):
    for op in module_op.regions[0].blocks[0].operations:
        if op.operation.name == "gpu.module":
            for f in op.regions[0].blocks[0].operations:
                if f.operation.name == "gpu.func":
                    yield f.operation


def _block_size(fn) -> int:
    for name in ("known_block_size", "gpu.known_block_size"):
        if name in fn.attributes:
            return math.prod(ir.DenseI32ArrayAttr(fn.attributes[name]))
    raise ValueError("gpu.func without a known block size")


def main(argv) -> int:
    """Check every GPU entry of a cache folder; print each entry's report; 1 if any hazard."""
    bad = 0
    for entry in sorted(os.listdir(argv[0])):
        path = os.path.join(argv[0], entry)
        meta = os.path.join(path, "metadata.json")
        if not os.path.exists(os.path.join(path, "stage-gpu.mlir")) or not os.path.exists(meta):
            continue
        with open(meta) as f:
            m = json.load(f)
        with open(os.path.join(path, "stage-gpu.mlir")) as f:
            report = check(f.read(), m.get("shared_bytes"))
        bad += bool(report.hazards or report.out_of_bounds)
        print(f"{entry} {m['name']} {m.get('options', {})}: {report}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
