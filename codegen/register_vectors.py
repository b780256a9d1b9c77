"""Small builders for per-thread register vectors, shared by the distributed GPU codegen."""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, vector


def i32(v: int):
    return arith.ConstantOp(ir.IntegerType.get_signless(32), v).result


def i32_vector(values: list[int]):
    ty = ir.VectorType.get([len(values)], ir.IntegerType.get_signless(32))
    return arith.ConstantOp(ty, ir.DenseElementsAttr.get(np.array(values, dtype="int32"), type=ty)).result


def splat(scalar, n: int):
    return vector.BroadcastOp(ir.VectorType.get([n], scalar.type), scalar).result


def linear_index(coords: list, strides: list[int], n: int):
    """sum(coords[d] * strides[d]) over i32 coordinate vectors of n registers."""
    lin = None
    for c, s in zip(coords, strides):
        term = arith.muli(c, splat(i32(s), n))
        lin = term if lin is None else arith.addi(lin, term)
    return lin


def elements(vec, n: int) -> list:
    return [vector.extract(vec, [], [i]) for i in range(n)]


def from_elements(values: list, elem) -> ir.Value:
    return vector.FromElementsOp(ir.VectorType.get([len(values)], elem), values).result
