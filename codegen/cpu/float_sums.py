"""Float sums as accurate as a tree of additions on the CPU target (and the linalg GPU path).

A linalg reduction becomes one loop: a running sum over the whole axis, whose error grows
with its length (65536 values in [0, 1) summed 5e-6 off, torch 1e-7: past
torch.testing's f32 tolerance). Folding the axis in halves first, as a GPU's shuffle
tree adds, keeps it to SERIAL_SUM elements in a row.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, tensor

SERIAL_SUM = 64  # a float sum adds at most this many elements in a row (`halve_float_sum`)


def halve_float_sum(src, axis: int):
    """src with its reduced axis folded in halves (x[:n/2] + x[n/2:]) down to SERIAL_SUM
    elements (an odd extent stops the folding)."""
    ty = ir.RankedTensorType(src.type)
    shape = list(ty.shape)
    while shape[axis] > SERIAL_SUM and shape[axis] % 2 == 0:
        shape[axis] //= 2
        half = ir.RankedTensorType.get(shape, ty.element_type)
        lo, hi = ([0 if d != axis else start for d in range(len(shape))] for start in (0, shape[axis]))
        src = arith.addf(*(tensor.extract_slice(half, src, [], [], [], at, shape, [1] * len(shape)) for at in (lo, hi)))
    return src
