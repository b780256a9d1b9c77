"""Small builders for per-thread register vectors, shared by the distributed GPU codegen."""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, memref, vector

from ...dialects.layout import element_bits


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


def store_run(buf, vals: list, r: int, w: int, at, elem):
    """Registers r .. r + w - 1 into `buf` at element `at`: one vector store, or a scalar one."""
    if w == 1:
        memref.StoreOp(vals[r], buf, [at])
    else:
        vector.StoreOp(from_elements(vals[r : r + w], elem), buf, [at], alignment=w * element_bits(elem) // 8)


def load_run(buf, w: int, at, elem) -> list:
    """w elements of `buf` from element `at`: one vector load, or a scalar one."""
    if w == 1:
        return [memref.LoadOp(buf, [at]).result]
    vty = ir.VectorType.get([w], elem)
    return elements(vector.LoadOp(vty, buf, [at], alignment=w * element_bits(elem) // 8).result, w)

