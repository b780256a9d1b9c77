"""Emitters for the language's builtins (`frontend/language.py`), one per name.

Each takes already-evaluated arguments (Tiles, TensorArgs, Pointers or Python
values) and returns what the call evaluates to.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, memref
from mlir.dialects import math as mlir_math

from ..dialects import tile_ops
from . import bounds_check, dtypes, memory_hints, semantics, unsigned
from .type_names import UnsupportedDtype, block_type
from .builtin_registry import EMITTERS, emitter  # noqa: F401  (EMITTERS: the other builtins' modules import it from here)
from .dtypes import int1, int32
from .language import PropagateNan
from .semantics import SemanticError, constant
from .values import Pointer, TensorArg, Tile
from .values import describe as _describe


def _const_int(v, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise SemanticError(f"{what} must be a compile-time integer (a constexpr), got {_describe(v)}")
    return v


def _shape(v, what: str) -> list[int]:
    if isinstance(v, int):
        v = (v,)
    if not isinstance(v, (tuple, list)):
        raise SemanticError(f"{what} must be a tuple of compile-time integers")
    dims = [_const_int(d, what) for d in v]
    if any(d < 1 for d in dims):
        raise SemanticError(f"{what} must be positive, got {tuple(dims)}")
    if any(d & (d - 1) for d in dims):  # (as Triton's: a GPU layout spreads a tile over 2**k lanes)
        raise SemanticError(f"{what} must be powers of two, got {tuple(dims)}")
    return semantics.check_tile_size(dims)


def _dtype(v, what="dtype") -> dtypes.dtype:
    if isinstance(v, UnsupportedDtype):  # (tile.float8e4b15: Triton's name, no tile type)
        raise SemanticError(v.error())
    if not isinstance(v, dtypes.dtype):
        raise SemanticError(f"{what} must be a tile dtype such as tile.float32, got {_describe(v)}")
    return v


def _tile(v, what: str) -> Tile:
    if isinstance(v, Tile):
        return v
    if isinstance(v, (bool, int, float)):
        return semantics.literal(v)
    raise SemanticError(f"{what} must be a tile or a number, got {_describe(v)}")


def _axis(v) -> int:
    return _const_int(v, "axis")


@emitter("program_id")
def _program_id(axis):
    return Tile(tile_ops.program_id(_axis(axis)))


@emitter("num_programs")
def _num_programs(axis):
    return Tile(tile_ops.num_programs(_axis(axis)))


@emitter("arange")
def _arange(start, end):
    start, end = _const_int(start, "arange start"), _const_int(end, "arange end")
    n = end - start
    if n <= 0 or n & (n - 1):
        raise SemanticError(f"arange length must be a power of two, got {n} (end={end} - start={start})")
    if not (-(1 << 31) <= start and end <= (1 << 31) - 1):
        raise SemanticError(f"arange bounds must fit in int32, got {start} and {end}")
    semantics.check_tile_size([n], "arange")
    return Tile(tile_ops.arange(start, end))


@emitter("zeros")
def _zeros(shape, dtype):
    return constant(0, _dtype(dtype), _shape(shape, "shape"))


@emitter("full")
def _full(shape, value, dtype):
    if isinstance(value, Tile):
        return semantics.broadcast_to(semantics.cast(value, _dtype(dtype)), _shape(shape, "shape"))
    return constant(value, _dtype(dtype), _shape(shape, "shape"))


@emitter("zeros_like")
def _zeros_like(x):
    x = _tile(x, "zeros_like's operand")
    return constant(0, x.dtype, list(x.shape)) if x.shape else constant(0, x.dtype)


@emitter("full_like")
def _full_like(x, value):
    x = _tile(x, "full_like's operand")
    return _full(x.shape, value, x.dtype) if x.shape else semantics.cast(_tile(value, "full_like's value"), x.dtype)


def _pointer(p, what: str) -> Pointer:
    if isinstance(p, TensorArg):
        return Pointer(p, 0)
    if isinstance(p, Pointer):
        return p
    raise SemanticError(f"{what} must be a tensor argument plus offsets (like `x + offs`), got {_describe(p)}")


def _access(p: Pointer, mask, kind: str = "atomic"):
    """The offsets and mask of an access through p, in the pointer's shape: a mask, like a
    stored value (`_fit`), broadcasts to it and never widens it (Triton's rule)."""
    offsets = p.offsets if isinstance(p.offsets, Tile) else semantics.literal(p.offsets)
    shape = offsets.shape
    mask = constant(True, int1) if mask is None else _tile(mask, "mask")
    if mask.dtype != int1:
        mask = semantics.compare("!=", mask, 0)
    mask = _fit(mask, shape, "mask")
    bounds_check.check(kind, p, offsets, mask)  # (TILE_DEBUG=1)
    return offsets, mask, shape


def _fit(x: Tile, shape: list[int], what: str) -> Tile:
    """x broadcast to an access's shape, which it must not widen: a [16] value stored through a
    scalar pointer, or a [B, B] one through a [B] pointer, writes each address several times
    (the last write wins on the CPU, a race on a GPU)."""
    if x.shape and not shape:
        raise SemanticError(f"{what} of shape {x.shape} given for a scalar pointer: the pointer "
                            "must have the shape of the access (as `x + offs`)")
    padded = [1] * (len(shape) - len(x.shape)) + x.shape
    if len(x.shape) > len(shape) or any(d not in (1, n) for d, n in zip(padded, shape)):
        raise SemanticError(f"{what} of shape {x.shape} does not broadcast to the pointer's shape {shape}")
    return semantics.broadcast_to(x, shape) if shape else x


@emitter("load")
def _load(pointer, mask=None, other=None, cache_modifier="", eviction_policy="", volatile=False):
    p = _pointer(pointer, "load's pointer")
    offsets, mask, shape = _access(p, mask, "load")
    dt = p.base.dtype
    if other is None or type(other) in (bool, int, float):
        # (a Python number becomes a constant of the tensor's type, float8 included; one the type
        # cannot hold is an error)
        other = constant(other or 0, dt)
    else:
        other = semantics.cast(_tile(other, "other"), dt)
    other = _fit(other, shape, "load's other")
    loaded = tile_ops.load(p.base.value, offsets.value, mask.value, other.value)
    memory_hints.attach(loaded.owner, "load", cache_modifier, eviction_policy, volatile)
    return Tile(unsigned.mark(loaded) if not dt.signed else loaded)


@emitter("store")
def _store(pointer, value, mask=None, cache_modifier="", eviction_policy="", volatile=False):
    p = _pointer(pointer, "store's pointer")
    value = semantics.cast(_tile(value, "value"), p.base.dtype)
    offsets, mask, shape = _access(p, mask, "store")
    value = _fit(value, shape, "store's value")
    op = tile_ops.store(p.base.value, offsets.value, value.value, mask.value)
    memory_hints.attach(op, "store", cache_modifier, eviction_policy, volatile)


def _indices(tensor: TensorArg, index) -> list[ir.Value]:
    if not isinstance(index, (tuple, list)):
        index = (index,)
    if len(index) != tensor.rank:
        raise SemanticError(f"tensor argument '{tensor.name}' has rank {tensor.rank} but the tile index has {len(index)} entries")
    return [semantics.cast(_tile(i, "tile index"), int32).value for i in index]


@emitter("load_tile")
def _load_tile(tensor, index, shape, padding=0):
    if not isinstance(tensor, TensorArg):
        raise SemanticError(f"load_tile needs a tensor argument, got {_describe(tensor)}")
    shape = _shape(shape, "tile shape")
    ty = tensor.dtype.to_mlir()
    whole = isinstance(padding, int) or (isinstance(padding, float) and math.isfinite(padding) and padding.is_integer())
    if not isinstance(padding, (int, float)) or (not tensor.dtype.is_float and not whole):
        raise SemanticError(f"load_tile's padding must be a number that {tensor.dtype!r} holds, got {_describe(padding)}")
    pad = ir.FloatAttr.get(ty, float(padding)) if tensor.dtype.is_float else \
        ir.IntegerAttr.get(ty, semantics.integer_bits(padding, tensor.dtype))
    loaded = tile_ops.load_tile(tensor.value, _indices(tensor, index), shape, pad)
    return Tile(unsigned.mark(loaded) if not tensor.dtype.signed else loaded)


@emitter("store_tile")
def _store_tile(tensor, index, value):
    if not isinstance(tensor, TensorArg):
        raise SemanticError(f"store_tile needs a tensor argument, got {_describe(tensor)}")
    value = semantics.cast(_tile(value, "value"), tensor.dtype)
    if len(value.shape) != tensor.rank:
        raise SemanticError(f"a rank-{len(value.shape)} tile cannot be stored into rank-{tensor.rank} tensor '{tensor.name}'")
    tile_ops.store_tile(tensor.value, value.value, _indices(tensor, index))


@emitter("where")
def _where(condition, x, y):
    return semantics.where(condition, x, y)


for _name in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos", "erf", "floor", "ceil"):
    EMITTERS[_name] = lambda x, _n=_name: semantics.unary_math(
        _n, semantics.computable(_tile(x, f"{_n}'s operand"), f"{_n}'s operand"))


@emitter("abs")
def _abs(x):
    return semantics.absolute(_tile(x, "abs's operand"))


def _propagate_nan(option) -> bool:
    """Whether `propagate_nan=` (None: tile's default, as torch) lets a NaN win."""
    if option is None:
        return True
    if isinstance(option, bool) or option not in tuple(PropagateNan):
        raise SemanticError(f"propagate_nan must be tile.PropagateNan.NONE or .ALL, got {_describe(option)}")
    return option == PropagateNan.ALL


@emitter("maximum")
def _maximum(x, y, propagate_nan=None):
    return semantics.extremum("max", x, y, "maximum's operand", _propagate_nan(propagate_nan))


@emitter("minimum")
def _minimum(x, y, propagate_nan=None):
    return semantics.extremum("min", x, y, "minimum's operand", _propagate_nan(propagate_nan))


@emitter("static_assert")
def _static_assert(condition, message=""):
    if isinstance(condition, Tile):
        raise SemanticError("static_assert needs a compile-time condition (constexprs and shapes), got a run-time value")
    if not condition:
        raise SemanticError(f"static_assert failed{': ' + str(message) if message else ''}")


@emitter("device_print")
def _device_print(prefix, *values):
    """Each value's elements printed when the kernel runs (`tile.print`), after `prefix`."""
    if not isinstance(prefix, str):
        raise SemanticError(f"device_print's first argument is its prefix, a string; got {_describe(prefix)}")
    for i, v in enumerate(values):
        v = semantics.computable(_tile(v, "device_print's value"), "device_print's value")
        label = prefix.strip().rstrip(":") + (f" (operand {i})" if len(values) > 1 else "")
        tile_ops.print_(v.value, label + ": " if label else "")


@emitter("static_print")
def _static_print(*values):
    """Prints when the kernel compiles (a tile prints its shape and dtype)."""
    print(*(f"tile({v.shape}, {v.dtype!r})" if isinstance(v, Tile) else v for v in values))


@emitter("clamp")
def _clamp(x, min, max, propagate_nan=None):
    """min(max(x, lo), hi): NaN in x stays NaN (Triton's `tl.clamp`), or with
    PropagateNan.NONE gives lo."""
    nan = _propagate_nan(propagate_nan)
    return semantics.extremum("min", semantics.extremum("max", x, min, "clamp's operand", nan), max, "clamp's operand", nan)


def _arithmetic(op: str):
    """Triton's tl.add/sub/mul: the operator (`sanitize_overflow` checks only under its sanitizer)."""
    def emit(x, y, sanitize_overflow=True):
        if isinstance(x, Pointer) or isinstance(y, Pointer):
            raise SemanticError(f"tile.{_NAMES[op]} takes tiles and scalars; offset a pointer with `+`")
        return semantics.binary(op, x, y)
    return emit


_NAMES = {"+": "add", "-": "sub", "*": "mul"}
for _op, _name in _NAMES.items():
    emitter(_name)(_arithmetic(_op))


@emitter("fma")
def _fma(x, y, z):
    x, y = semantics.operands(x, y, "fma's operand")  # (three times: one dtype and shape for all three)
    x, z = semantics.operands(x, z, "fma's operand")
    x, y = semantics.operands(x, y, "fma's operand")
    if not x.dtype.is_float:
        raise SemanticError(f"fma needs float operands, got {x.dtype!r}")
    return Tile(mlir_math.fma(x.value, y.value, z.value))


@emitter("gather")
def _gather(src, index, axis):
    src, index = _tile(src, "gather's src"), _tile(index, "gather's index")
    axis = _axis(axis)
    axis += len(src.shape) if axis < 0 else 0
    if len(src.shape) != len(index.shape) or not 0 <= axis < len(src.shape):
        raise SemanticError(f"gather needs src and index of one rank and an axis of it, got {src.shape}, {index.shape}, axis {axis}")
    if any(s != i for d, (s, i) in enumerate(zip(src.shape, index.shape)) if d != axis):
        raise SemanticError(f"gather's index {index.shape} must match src {src.shape} in every dim but axis {axis}")
    if index.dtype.is_float or index.dtype.bits == 1:
        raise SemanticError(f"gather's index must be integers, got {index.dtype!r}")
    if index.dtype.bits < 32:  # sign-extended: the GPU lowering reads 32-bit indices
        index = semantics.cast(index, int32)
    return Tile(tile_ops.gather(src.value, index.value, axis))


@emitter("cast")
def _cast(x, dtype, fp_downcast_rounding=None, bitcast=False):
    """A conversion of values (Triton's `tl.cast`, `x.to`, `x.cast`), or with `bitcast=True`
    the same bits read as `dtype` (of the same width)."""
    if isinstance(dtype, dtypes.pointer_type):  # an address to a pointer (Triton's int-to-pointer cast)
        from .pointer_arrays import pointer_from_int

        return pointer_from_int(x, dtype.element_ty)
    x, dt = _tile(x, "cast's operand"), _dtype(dtype)
    if not bitcast:
        return semantics.cast(x, dt, fp_downcast_rounding)
    if x.dtype.bits != dt.bits or int1 in (x.dtype, dt):
        raise SemanticError(f"bitcast needs types of one width (not bool), got {x.dtype!r} ({x.dtype.bits} bits) and "
                            f"{dt!r} ({dt.bits} bits)")
    if x.dtype == dt:
        return x
    ty = ir.RankedTensorType.get(x.shape, dt.to_mlir()) if x.shape else dt.to_mlir()
    out = arith.bitcast(ty, x.value)
    return Tile(unsigned.mark(out) if not dt.signed else out)


@emitter("cdiv")
def _cdiv(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    return semantics.binary("//", semantics.binary("-", semantics.binary("+", a, b), 1), b)


def tensor_method(arg: TensorArg, name: str):
    """`x.stride(d)` and `x.size(d)` on a tensor argument, as i32 scalars (i64 where the tensor is wide)."""

    def emit(dim):
        dim = _const_int(dim, f"{name}'s dim")
        if not 0 <= dim < arg.rank:
            raise SemanticError(f"tensor argument '{arg.name}' has rank {arg.rank}; dim {dim} is out of range")
        meta = memref.ExtractStridedMetadataOp(arg.value)
        sizes_strides = list(meta.results)[2:]
        v = sizes_strides[dim] if name == "size" else sizes_strides[arg.rank + dim]
        return Tile(arith.index_cast(ir.IntegerType.get_signless(64 if arg.wide else 32), v))

    if name not in ("stride", "size"):
        raise SemanticError(f"tensor argument '{arg.name}' has no attribute '{name}' (only .stride(d) and .size(d))")
    return emit


TILE_METHODS = ("reshape", "broadcast_to", "trans", "permute", "sum", "max", "min", "argmax", "argmin", "ravel",
                "expand_dims", "split", "join", "interleave", "cumsum", "cumprod", "associative_scan", "reduce",
                "xor_sum", "reduce_or", "flip", "softmax", "histogram", "view")


def tile_method(t: Tile, name: str):
    if name in ("to", "cast"):  # (Triton spells both)
        return lambda dtype, fp_downcast_rounding=None, bitcast=False: _cast(t, dtype, fp_downcast_rounding, bitcast)
    if name == "shape":
        return tuple(t.shape)
    if name == "dtype":
        return t.dtype
    if name == "type":  # (Triton's: a tile's block_type, a scalar's dtype)
        return block_type(t.dtype, tuple(t.shape)) if t.shape else t.dtype
    if name == "T":
        return EMITTERS["trans"](t)
    if name in TILE_METHODS:  # x.sum(1) is tile.sum(x, 1), as Triton's tensor methods
        return lambda *args, **kwargs: EMITTERS[name](t, *args, **kwargs)
    raise SemanticError(f"a tile has no attribute '{name}' (only .to(dtype), .cast(dtype), .T, .shape, .dtype, .type and "
                        f"{', '.join('.' + m + '()' for m in TILE_METHODS)})")
