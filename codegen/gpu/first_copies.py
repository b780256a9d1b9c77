"""One writer per shared-memory element (methods of the GPU `Translator`).

Where a layout is wider than its tile (a 32-wide bias row in a 128-thread layout), or
after a butterfly that leaves a reduction's result in every lane along the axis, several
threads hold the same element. Writing it to shared memory from all of them is a
write-write race on the same address in one barrier phase: harmless in value (all write
the same), but what compute-sanitizer's racecheck reports (issue 38), and a write of
bytes nobody needs. As in Triton, only one copy of each element writes: the thread whose
id has zeros in the "copy bits", the bits of the thread id that, flipped, give a thread
holding the same element (`copy_bits`, found at compile time from the layout's numbers
`static_registers.thread_coords` gives). The guard is `(tid & bits) == 0`, one `and` and
one compare a mask, made once in the kernel's entry block; registers that no other thread
holds get none, so kernels without copies are unchanged.

    %m = arith.andi %tid, 96 ; %first = arith.cmpi eq, %m, 0      (lanes 0..31: warp 0's copy)
    scf.if %first { memref.store %bias0, %buf[%i] }
"""

from __future__ import annotations

import numpy as np
from mlir.dialects import arith

from ..common.ir_builders import if_else
from .register_vectors import i32


def copy_bits(ids: np.ndarray) -> list[int]:
    """Per column of `ids` ([threads, k]: what element, or shared-memory position, thread t
    writes at its k-th store), the thread-id bits whose flip lands on a thread writing the
    same there: its copies. With `(tid & bits) == 0` as the guard, exactly one thread writes
    each element (checked; where no bits do that, no bits: every copy writes, as before)."""
    threads = ids.shape[0]
    tid = np.arange(threads)
    out = []
    for k in range(ids.shape[1]):
        col, bits, b = ids[:, k], 0, 1
        while b < threads:
            if (col[tid ^ b] == col).all():
                bits |= b
            b <<= 1
        out.append(bits)
    # each element written, and by one thread only (a thread writing it twice is no race)
    pairs = np.unique(np.concatenate([np.stack([ids[(tid & m) == 0, k], tid[(tid & m) == 0]], 1)
                                      for k, m in enumerate(out)]), axis=0)
    if len(np.unique(pairs[:, 0])) != len(pairs) or len(pairs) and not np.isin(ids, pairs[:, 0]).all():
        return [0] * ids.shape[1]
    return out


def first_copy(self, bits: int):
    """An i1: whether this thread has zeros in `bits` (None for no bits: every thread)."""
    if not bits:
        return None
    memo = self.__dict__.setdefault("_first_copy", {})
    if bits not in memo:
        with self.entry:
            memo[bits] = arith.cmpi(arith.CmpIPredicate.eq, arith.andi(self.tid, i32(bits)), i32(0))
    return memo[bits]


def copy_number(self, bits: int):
    """An i32: which copy this thread is among those that differ in `bits` (its bits of
    the thread id, packed: 0 .. 2**popcount - 1; 0 for the first)."""
    out, k = None, 0
    with self.entry:
        for b in range(self.threads.bit_length()):
            if bits >> b & 1:
                part = arith.andi(arith.shrui(self.tid, i32(b - k)) if b > k else self.tid, i32(1 << k))
                out = part if out is None else arith.ori(out, part)
                k += 1
        return out if out is not None else i32(0)


def guards(self, ids: np.ndarray) -> list:
    """Per column of `ids` (see `copy_bits`), the i1 that lets only one copy write, or None."""
    return [first_copy(self, b) for b in copy_bits(ids)]


def guarded(cond, write) -> None:
    """`write()` where `cond` holds (always where it is None)."""
    if cond is None:
        write()
    else:
        if_else(cond, None, write, None)


def issue_copy(self, cond, copy) -> None:
    """An async copy (`copy()` makes it, returning its token) where `cond` holds; a guarded
    copy's token stays in its guard, which costs nothing: a commit takes every earlier copy
    of the thread, whatever tokens it names."""
    if cond is None:
        self.async_tokens.append(copy())
    else:
        guarded(cond, copy)


def linear(coords: list[np.ndarray], shape) -> np.ndarray:
    """Row-major element numbers of per-dim coordinates ([threads, registers] each)."""
    lin = np.zeros_like(coords[0])
    for c, s in zip(coords, shape):
        lin = lin * s + c
    return lin


__all__ = ["copy_bits", "copy_number", "first_copy", "guards", "guarded", "issue_copy", "linear"]
