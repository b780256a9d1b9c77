"""The values an integer tile takes in every register of every thread, computed at
compile time where the tile is a function of `tile.arange` and constants alone (as
the index of a permutation usually is).

The GPU codegen uses it to see which registers differ by a constant that is the
same in every thread: `tile.gather` then computes the shared-memory address of one
register of each such group and reaches the others by constant offsets, which
ptxas folds into the loads (`ld.shared [r + 24]`), where each would otherwise
recompute the whole index expression; an exchange through shared memory whose
targets are known (a bias row broadcast into a matmul accumulator's layout) reads
each distinct run of elements once, as wide a load as the runs allow
(`vector_reads`). The model follows the `arith` semantics of
i32 (truncating signed division, the remainder's sign that of the dividend, two's
complement wrap-around); an op outside it, or a runtime scalar, makes the tile
not static (None), and the codegen then computes every register as before.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from ...dialects.tile_ops import permutation_of
from ...passes.tile_fuse import through_groups
from .distributed_layout import Distribution, MmaDistribution, RowsDistribution, WgmmaDistribution

_WRAP = 1 << 32


def _i32(x: np.ndarray) -> np.ndarray:
    """Wrap to the signed 32-bit range, as the i32 arithmetic the codegen emits does."""
    return (x + (1 << 31)) % _WRAP - (1 << 31)


def _u32(x: np.ndarray) -> np.ndarray:
    return x % _WRAP


def _div_trunc(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


_BINARY = {
    "arith.addi": lambda a, b: _i32(a + b),
    "arith.subi": lambda a, b: _i32(a - b),
    "arith.muli": lambda a, b: _i32(a * b),
    "arith.divsi": _div_trunc,
    "arith.remsi": lambda a, b: a - _div_trunc(a, b) * b,
    "arith.divui": lambda a, b: _i32(_u32(a) // _u32(b)),
    "arith.remui": lambda a, b: _i32(_u32(a) % _u32(b)),
    "arith.andi": lambda a, b: a & b,
    "arith.ori": lambda a, b: a | b,
    "arith.xori": lambda a, b: a ^ b,
    "arith.maxsi": np.maximum,
    "arith.minsi": np.minimum,
    "arith.shli": lambda a, b: _i32(a << b),
    "arith.shrsi": lambda a, b: a >> b,
    "arith.shrui": lambda a, b: _i32(_u32(a) >> b),
}
_UNDEFINED_AT = {  # operands for which the op has no defined value: the tile is then not static
    "arith.divsi": lambda b: b == 0, "arith.remsi": lambda b: b == 0,
    "arith.divui": lambda b: b % _WRAP == 0, "arith.remui": lambda b: b % _WRAP == 0,
    "arith.shli": lambda b: (b < 0) | (b >= 32), "arith.shrsi": lambda b: (b < 0) | (b >= 32),
    "arith.shrui": lambda b: (b < 0) | (b >= 32),
}


def thread_coords(dist: Distribution, num_threads: int) -> list[np.ndarray]:
    """Per dim, the coordinate each thread's registers hold, [threads, registers]: the
    numbers `Translator.coords` (and, for tensor-core layouts, `mma_coords`) computes at run time."""
    tid = np.arange(num_threads)[:, None]
    lane, warp = tid % 32, tid // 32
    if isinstance(dist, MmaDistribution):
        return _mma_coords(dist, lane, warp)
    if isinstance(dist, RowsDistribution):
        return [_mma_coords(dist.parent, lane, warp)[dist.layout.axis][:, dist.picks]]
    L = dist.layout
    out = []
    for d in range(dist.rank):
        lane_d = lane // dist.lane_shift(d) % L.threads_per_warp[d]
        warp_d = warp // dist.warp_shift(d) % L.warps_per_cta[d]
        base = warp_d * (L.size_per_thread[d] * L.threads_per_warp[d]) + lane_d * L.size_per_thread[d]
        c = base + np.array([dist.register_offset(d, j[d]) for j in dist.register_indices])[None, :]
        out.append(c % dist.shape[d] if dist.shape[d] % dist.cta(d) else c)
    return out


def broadcast_coords(coords: list[np.ndarray], src_shape) -> list[np.ndarray]:
    """The operand's coordinates a broadcast reads: 0 along its size-1 dims."""
    return [np.zeros_like(c) if s == 1 else c for c, s in zip(coords, src_shape)]


def trans_coords(coords: list, permutation: list[int]) -> list:
    """The operand's coordinates a permutation of dims reads: operand dim permutation[k] is
    result dim k (numbers or IR vectors alike)."""
    out = [None] * len(permutation)
    for k, p in enumerate(permutation):
        out[p] = coords[k]
    return out


def reshape_coords(coords: list[np.ndarray], shape, src_shape) -> list[np.ndarray]:
    """The operand's coordinates a reshape reads: the same row-major linear position."""
    lin = np.zeros_like(coords[0])
    for c, s in zip(coords, shape):
        lin = lin * s + c
    out = [None] * len(src_shape)
    for d in range(len(src_shape) - 1, -1, -1):
        out[d], lin = lin % src_shape[d], lin // src_shape[d]
    return out


def _mma_coords(dist: MmaDistribution, lane, warp) -> list[np.ndarray]:
    rows, cols = (np.array(x)[None, :] for x in dist.register_offsets())
    (tm, tn), group, t = dist.warp_tile, lane >> 2, lane & 3
    if isinstance(dist, WgmmaDistribution):
        gn = dist.layout.warpgroups[1]
        part_m, part_n = (warp >> 2) // gn, (warp >> 2) % gn
        group = group + (warp & 3) * 16
    else:
        wn = dist.layout.warps[1]
        part_m, part_n = warp // wn, warp % wn
    return [part_m * tm + group + rows, part_n * tn + 2 * t + cols]


def _splat_value(v):
    """The scalar an integer splat or dense constant holds, if it is a compile-time constant."""
    if isinstance(v.owner, ir.Block):
        return None
    op = v.owner.operation
    if op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    if isinstance(v.type, ir.IntegerType):
        return ir.IntegerAttr(attr).value
    dense = ir.DenseElementsAttr(attr)
    return ir.IntegerAttr(dense.get_splat_value()).value if dense.is_splat else None


def static_values(v, coords: list[np.ndarray], depth: int = 0):
    """The values of integer tile v at per-dim coordinates ([threads, registers] each), or
    None where v is not a function of aranges and constants that the model covers."""
    v = through_groups(v)
    if depth > 24 or isinstance(v.owner, ir.Block) or not isinstance(v.type, ir.RankedTensorType):
        return None
    t = ir.RankedTensorType(v.type)
    if not isinstance(t.element_type, ir.IntegerType) or t.element_type.width != 32:
        return None
    op = v.owner.operation
    if op.name == "tile.arange":
        return coords[0] + ir.IntegerAttr(op.attributes["start"]).value
    if op.name in ("tile.splat", "arith.constant"):
        x = _splat_value(op.operands[0] if op.name == "tile.splat" else v)
        return None if x is None else np.full_like(coords[0], x)
    if op.name == "tile.convert_layout":
        return static_values(op.operands[0], coords, depth + 1)
    if op.name == "tile.broadcast":
        src_shape = ir.RankedTensorType(op.operands[0].type).shape
        return static_values(op.operands[0], broadcast_coords(coords, src_shape), depth + 1)
    if op.name == "tile.trans":
        return static_values(op.operands[0], trans_coords(coords, permutation_of(op)), depth + 1)
    if op.name == "tile.reshape":
        src_shape = list(ir.RankedTensorType(op.operands[0].type).shape)
        return static_values(op.operands[0], reshape_coords(coords, list(t.shape), src_shape), depth + 1)
    if op.name in _BINARY:
        a, b = (static_values(o, coords, depth + 1) for o in op.operands)
        if a is None or b is None or op.name in _UNDEFINED_AT and _UNDEFINED_AT[op.name](b).any():
            return None
        return _BINARY[op.name](a, b)
    return None


def constant_offset_groups(values: np.ndarray) -> list[tuple[int, int]]:
    """Per register r, (b, offset): register b (b <= r, b == r for a group's first) and the
    offset values[:, r] - values[:, b], the same in every thread."""
    out, bases = [], []
    for r in range(values.shape[1]):
        for b in bases:
            diff = values[:, r] - values[:, b]
            if (diff == diff[0]).all():
                out.append((b, int(diff[0])))
                break
        else:
            bases.append(r)
            out.append((r, 0))
    return out


def vector_reads(positions: np.ndarray, elem_bytes: int) -> list[tuple[int, int, int, int]]:
    """A plan for reading `positions` ([threads, registers] element positions in a
    buffer) with as few loads as every thread can share: per load, (first register,
    width, base register, offset), the load reading `width` consecutive elements from the
    position of register `base` plus `offset` (the same in every thread) into registers
    first .. first + width - 1. A register whose position an earlier register already reads
    in every thread (a broadcast's repeats) gets no load: `repeats` says whose value it takes.
    A load is as wide as the positions run consecutively and stay aligned to the width in
    every thread, at most 16 bytes."""
    n = positions.shape[1]
    plan, done = [], set(repeats(positions))
    for r in range(n):
        if r in done:
            continue
        w = 1
        while (w * 2 * elem_bytes <= 16 and r + w * 2 <= n and (positions[:, r] % (w * 2) == 0).all()
               and all((positions[:, r + k] == positions[:, r] + k).all() and r + k not in done for k in range(w * 2))):
            w *= 2
        done.update(range(r, r + w))
        plan.append((r, w))
    firsts = positions[:, [r for r, _ in plan]]
    return [(r, w, plan[b][0], off) for (r, w), (b, off) in zip(plan, constant_offset_groups(firsts))]


def repeats(positions: np.ndarray) -> dict[int, int]:
    """Registers whose position equals an earlier register's in every thread: {register: that earlier one}."""
    seen, out = {}, {}
    for r in range(positions.shape[1]):
        key = positions[:, r].tobytes()
        if key in seen:
            out[r] = seen[key]
        else:
            seen[key] = r
    return out
