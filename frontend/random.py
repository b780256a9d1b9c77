"""Emitters of the random numbers, Triton's: `randint`, `rand`, `randn` of a seed and an
offset per element, from ten rounds of the Philox 4x32 counter-based generator (Salmon
et al., SC'11), with the counter (offset, 0, 0, 0) and the key (the seed's low and high
32 bits), so that a kernel draws the same numbers as the Triton kernel it was ported
from. Composed of elementwise integer ops; nothing is kept between launches.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from . import semantics
from .builtins import SemanticError, _const_int, _describe, emitter
from .dtypes import float32, int32, int64
from .values import Tile

KEY_A, KEY_B = 0x9E3779B9, 0xBB67AE85  # the key's increments per round
ROUND_A, ROUND_B = 0xD2511F53, 0xCD9E8D57  # the multipliers
N_ROUNDS = 10
TO_UNIT = 4.6566127342e-10  # about 2**-31: a non-negative int32 to [0, 1)


def _i32(x: int, like: Tile) -> Tile:
    """The 32-bit pattern of x as an int32 tile of like's shape."""
    return semantics.constant(x - (1 << 32) if x >= 1 << 31 else x, int32, list(like.shape) or None)


def _umulhi(a: Tile, b: Tile) -> Tile:
    """The high 32 bits of the unsigned 64-bit product (PTX `mul.hi.u32`)."""
    i64 = ir.IntegerType.get_signless(64)
    wide = ir.RankedTensorType.get(a.shape, i64) if a.shape else i64
    prod = arith.muli(arith.extui(wide, a.value), arith.extui(wide, b.value))
    return semantics.cast(Tile(arith.shrui(prod, semantics.constant(32, int64, list(a.shape) or None).value)), int32)


def _op(fn, a: Tile, b: Tile) -> Tile:
    return Tile(fn(a.value, b.value))


def philox(seed, offset, rounds: int = N_ROUNDS) -> list[Tile]:
    """The four 32-bit outputs for counters (offset, 0, 0, 0) under key (seed lo, seed hi)."""
    if not isinstance(offset, Tile):
        offset = semantics.constant(_const_int(offset, "the random offset"), int32)
    if offset.dtype.is_float or offset.dtype.bits > 32:
        raise SemanticError(f"the random offset must be an int32 tile or scalar, got {_describe(offset)}")
    c0 = semantics.cast(offset, int32)
    if not isinstance(seed, Tile):
        seed = semantics.constant(_const_int(seed, "the random seed"), int64)
    if seed.dtype.is_float or not seed.is_scalar:
        raise SemanticError(f"the random seed must be an integer scalar, got {_describe(seed)}")
    seed = semantics.cast(seed, int64)
    k0 = semantics.cast(seed, int32)
    k1 = semantics.cast(Tile(arith.shrui(seed.value, semantics.constant(32, int64).value)), int32)
    k0, k1 = (semantics.broadcast_to(k, c0.shape) if c0.shape else k for k in (k0, k1))
    c1 = c2 = c3 = _i32(0, c0)
    ra, rb, ka, kb = _i32(ROUND_A, c0), _i32(ROUND_B, c0), _i32(KEY_A, c0), _i32(KEY_B, c0)
    for _ in range(rounds):
        # one round: two multiplications, their high halves mixed with the other words and the key
        n0 = _op(arith.xori, _op(arith.xori, _umulhi(rb, c2), c1), k0)
        n2 = _op(arith.xori, _op(arith.xori, _umulhi(ra, c0), c3), k1)
        c1, c3 = _op(arith.muli, rb, c2), _op(arith.muli, ra, c0)
        c0, c2 = n0, n2
        k0, k1 = _op(arith.addi, k0, ka), _op(arith.addi, k1, kb)
    return [c0, c1, c2, c3]


def _uniform(x: Tile) -> Tile:
    """An int32 (read as unsigned 32 bits) to [0, 1): |x| folded (x < 0 -> -x - 1), scaled."""
    folded = semantics.where(semantics.compare("<", x, 0), semantics.binary("-", semantics.negate(x), 1), x)
    return semantics.binary("*", semantics.cast(folded, float32), TO_UNIT)


@emitter("randint")
def _randint(seed, offset, n_rounds=N_ROUNDS):
    return philox(seed, offset, _const_int(n_rounds, "n_rounds"))[0]


@emitter("rand")
def _rand(seed, offset, n_rounds=N_ROUNDS):
    return _uniform(philox(seed, offset, _const_int(n_rounds, "n_rounds"))[0])


@emitter("randn")
def _randn(seed, offset, n_rounds=N_ROUNDS):
    """A standard normal from the first two outputs (Box-Muller)."""
    i0, i1, _, _ = philox(seed, offset, _const_int(n_rounds, "n_rounds"))
    u0 = semantics.extremum("max", _uniform(i0), 1.0e-7)
    radius = semantics.unary_math("sqrt", semantics.binary("*", -2.0, semantics.unary_math("log", u0)))
    angle = semantics.binary("*", 6.283185307179586, _uniform(i1))
    return semantics.binary("*", radius, semantics.unary_math("cos", angle))
