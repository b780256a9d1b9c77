"""Emitters of the random numbers, Triton's (`triton/language/random.py`, op for op, so that a
kernel draws the same bits as the Triton kernel it was ported from): `philox_impl` runs the
rounds of the Philox 4x32 (4x64 for uint64 counters) counter-based generator (Salmon et al.,
SC'11) on a counter and a key; `philox` keys it with a seed; `randint4x` counts by an offset
(its low and high 32 bits, then 0, 0), `randint` is its first output, a uint32 as Triton's;
`uint_to_uniform_float` maps one to [0, 1), `pair_uniform_to_normal` two uniforms to two
normals (Box-Muller); `rand`, `rand4x`, `randn`, `randn4x` compose them. Elementwise integer
ops only; nothing is kept between launches.
"""

from __future__ import annotations

from . import math_functions, semantics
from .builtins import SemanticError, _const_int, _describe, _tile, emitter
from .dtypes import int32, int64, uint32, uint64
from .values import Tile

# (the key's increments per round, the multipliers) by counter width
CONSTANTS = {
    32: (0x9E3779B9, 0xBB67AE85, 0xD2511F53, 0xCD9E8D57),
    64: (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B, 0xD2E7470EE14C6C93, 0xCA5A826395121157),
}
N_ROUNDS = 10
# an int32 (int64) folded to >= 0, times this, is below 1.0 in float32
TO_UNIT = {32: 4.6566127342e-10, 64: 1.0842020432385337e-19}

_bin = semantics.binary


def _rounds(n_rounds) -> int:
    n = _const_int(n_rounds, "n_rounds")
    if n < 0:
        raise SemanticError(f"n_rounds must be >= 0, got {n}")
    return n


def _int(v, what: str) -> Tile:
    v = _tile(v, what)
    if v.dtype.is_float or v.dtype.bits < 8:
        raise SemanticError(f"{what} must be an integer tile or scalar, got {_describe(v)}")
    return v


@emitter("philox_impl")
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds=N_ROUNDS):
    """`n_rounds` rounds of Philox on the counter (c0, c1, c2, c3) and key (k0, k1), all uint32
    or all uint64 (the 4x32 or 4x64 constants)."""
    c0, c1, c2, c3, k0, k1 = (_tile(v, "philox_impl's operand") for v in (c0, c1, c2, c3, k0, k1))
    if c0.dtype not in (uint32, uint64):
        raise SemanticError(f"philox_impl's counters must be uint32 or uint64, got {_describe(c0)}")
    key_a, key_b, round_a, round_b = CONSTANTS[c0.dtype.bits]
    for _ in range(_rounds(n_rounds)):
        # two multiplications, their high halves mixed with the other words and the key
        _c0, _c2 = c0, c2
        c0 = _bin("^", _bin("^", math_functions.umulhi(round_b, _c2), c1), k0)
        c2 = _bin("^", _bin("^", math_functions.umulhi(round_a, _c0), c3), k1)
        c1, c3 = _bin("*", round_b, _c2), _bin("*", round_a, _c0)
        k0, k1 = _bin("+", k0, key_a), _bin("+", k1, key_b)
    return c0, c1, c2, c3


@emitter("philox")
def philox(seed, c0, c1, c2, c3, n_rounds=N_ROUNDS):
    """Philox on the counter (c0, c1, c2, c3) (32- or 64-bit ints, read as unsigned) keyed by
    the seed: its low and high 32 bits, or for 64-bit counters the seed and 0."""
    seed = _int(seed, "the random seed")
    if not seed.is_scalar:
        raise SemanticError(f"the random seed must be an integer scalar, got {_describe(seed)}")
    seed = semantics.cast(seed, uint64)
    counters = [_int(c, "a philox counter") for c in (c0, c1, c2, c3)]
    bits = counters[0].dtype.bits
    if bits not in (32, 64) or any(c.dtype.bits != bits for c in counters):
        raise SemanticError(f"philox's counters must be all 32-bit or all 64-bit ints, got "
                            f"{', '.join(repr(c.dtype) for c in counters)}")
    if bits == 32:
        k1 = semantics.cast(_bin("&", _bin(">>", seed, 32), 0xFFFFFFFF), uint32)
        k0 = semantics.cast(_bin("&", seed, 0xFFFFFFFF), uint32)
    else:
        k0, k1 = seed, semantics.constant(0, uint64)
    unsigned = uint32 if bits == 32 else uint64
    # (int32 -> uint32 keeps the bits: Triton's .to(tl.uint32, bitcast=True))
    return philox_impl(*(semantics.cast(c, unsigned) for c in counters), k0, k1, n_rounds)


@emitter("randint4x")
def randint4x(seed, offset, n_rounds=N_ROUNDS):
    """Four uint32 tiles per offset: Philox on the counter (offset's low 32 bits, its high 32
    bits, 0, 0)."""
    offset = _int(offset, "the random offset")
    lo = semantics.cast(offset, uint32)
    zero = _bin("*", lo, 0)
    hi = semantics.cast(_bin(">>", offset, 32), uint32) if offset.dtype.bits > 32 else zero
    return philox(seed, lo, hi, zero, zero, n_rounds)


@emitter("randint")
def randint(seed, offset, n_rounds=N_ROUNDS):
    return randint4x(seed, offset, n_rounds)[0]


@emitter("uint_to_uniform_float")
def uint_to_uniform_float(x):
    """A random 32- or 64-bit int to a float32 in [0, 1): its bits as a signed int, folded to
    >= 0 (x < 0: ~x), scaled so that the largest stays below 1.0."""
    x = _int(x, "uint_to_uniform_float's operand")
    if x.dtype.bits not in (32, 64):
        raise SemanticError(f"uint_to_uniform_float takes a 32- or 64-bit int, got {_describe(x)}")
    x = semantics.cast(x, int32 if x.dtype.bits == 32 else int64)
    x = semantics.where(semantics.compare("<", x, 0), _bin("^", x, -1), x)
    return _bin("*", x, TO_UNIT[x.dtype.bits])


@emitter("rand")
def rand(seed, offset, n_rounds=N_ROUNDS):
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@emitter("rand4x")
def rand4x(seed, offsets, n_rounds=N_ROUNDS):
    return tuple(uint_to_uniform_float(i) for i in randint4x(seed, offsets, n_rounds))


@emitter("pair_uniform_to_normal")
def pair_uniform_to_normal(u1, u2):
    """Two standard normals from two uniforms in [0, 1) (Box-Muller)."""
    u1 = semantics.extremum("max", 1.0e-7, _tile(u1, "pair_uniform_to_normal's operand"))
    th = _bin("*", 6.283185307179586, _tile(u2, "pair_uniform_to_normal's operand"))
    r = semantics.unary_math("sqrt", _bin("*", -2.0, semantics.unary_math("log", u1)))
    return _bin("*", r, semantics.unary_math("cos", th)), _bin("*", r, semantics.unary_math("sin", th))


@emitter("randn")
def randn(seed, offset, n_rounds=N_ROUNDS):
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    return pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))[0]


@emitter("randn4x")
def randn4x(seed, offset, n_rounds=N_ROUNDS):
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    return pair_uniform_to_normal(u1, u2) + pair_uniform_to_normal(u3, u4)
