"""Triton's tensor descriptors and block pointers, as sugar over masked block loads and stores.

    desc = tile.make_tensor_descriptor(x, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    a = desc.load([m0, k0])
        ==  rm = m0 + tile.arange(0, BM); rk = k0 + tile.arange(0, BK)
            tile.load(x + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0)

is the form `tile-pipeline` turns into TMA copies on sm_90a (cp.async rings elsewhere),
so descriptor loads in a K loop are pipelined as any block load is. Bounds are compared
unsigned: a negative coordinate is out of bounds too, as for a TMA copy. A descriptor
passed from the host (`frontend/tensor_descriptor.py`) is the same over the int
arguments the launch expands it to. `tile.make_block_ptr` / `tile.advance` /
`tile.load(block_ptr, boundary_check=...)` are the same loads with the offsets kept in the
pointer (loop-carried i32 scalars) and only the dims in `boundary_check` masked.
"""

from __future__ import annotations

from mlir.dialects import arith

from ..dialects import tile_ops
from . import semantics
from .builtins import EMITTERS, _describe, _pointer, _shape, _tile, emitter
from .dtypes import int1, int32, int64, pointer_type
from .errors import TileError
from .pointer_arrays import tma_aligned
from .semantics import SemanticError
from .tensor_descriptor import HostDescriptor, part_names
from .values import Aggregate, Pointer, TensorArg, Tile

_plain_load, _plain_store = EMITTERS["load"], EMITTERS["store"]


def _block_shape(v, what: str) -> list[int]:
    if not isinstance(v, (tuple, list)) or not v:
        raise SemanticError(f"{what} must be a list of compile-time ints, got {_describe(v)}")
    return _shape(v, what)


def _ints(v, rank: int, what: str) -> list:
    """One int or int scalar per dim."""
    if not isinstance(v, (tuple, list)) or len(v) != rank:
        n = len(v) if isinstance(v, (tuple, list)) else None
        raise SemanticError(f"{what} must have {rank} entries, one per dim of the block" + (f", got {n}" if n is not None else
                                                                                           f", got {_describe(v)}"))
    for x in v:
        scalar = isinstance(x, Tile) and x.is_scalar and not x.dtype.is_float and x.dtype != int1
        if isinstance(x, bool) or not (isinstance(x, int) or scalar):
            raise SemanticError(f"{what} must be ints or int scalars, got {_describe(x)}")
    return list(v)


def _offsets32(v, rank: int, what: str) -> list[Tile]:
    """Block offsets as i32 scalars (Triton's are int32), so that loops carry them with one type."""
    return [semantics.cast(_tile(x, what), int32) for x in _ints(v, rank, what)]


def _base(v, what: str) -> Pointer:
    p = _pointer(v, what)
    if isinstance(p.offsets, Tile) and not p.offsets.is_scalar:
        raise SemanticError(f"{what} must be a tensor plus a scalar offset, not a tile of offsets")
    return p


def _along(x: Tile, d: int, rank: int) -> Tile:
    """A 1-D tile as dim d of a rank-`rank` one (x[:, None] for d = 0 of 2)."""
    if rank == 1:
        return x
    return Tile(tile_ops.reshape(x.value, [x.shape[0] if k == d else 1 for k in range(rank)]))


def _below(index: Tile, bound) -> Tile:
    """index < bound, unsigned: a negative index is outside too."""
    a, b = semantics.operands(index, bound)
    return Tile(arith.cmpi(arith.CmpIPredicate.ult, a.value, b.value))


def block_access(base: Pointer, shape, strides, offsets, block, checked) -> tuple[Pointer, Tile | None]:
    """The pointer to the block at `offsets` (one i32 scalar per dim) and its mask over the
    dims in `checked` (None if none): each dim's indices times its stride, summed, the
    form `block_access.match_block` recognizes."""
    rank, wide = len(block), base.base.wide
    total = mask = None
    for d in range(rank):
        index = Tile(tile_ops.arange(0, block[d]))
        if not (isinstance(offsets[d], int) and offsets[d] == 0):
            index = semantics.binary("+", offsets[d], index)
        term = _along(index, d, rank)
        if d in checked:
            inside = _below(term, shape[d])
            mask = inside if mask is None else semantics.binary("&", mask, inside)
        if wide:  # (offsets past int32)
            term = semantics.cast(term, int64)
        if not (type(strides[d]) is int and strides[d] == 1):
            term = semantics.binary("*", term, strides[d])
        total = term if total is None else semantics.binary("+", total, term)
    if not (isinstance(base.offsets, int) and base.offsets == 0):
        total = semantics.binary("+", total, base.offsets)
    return Pointer(base.base, total), mask


def _padding(option, dtype) -> float:
    if option in (None, "", "zero"):
        return 0
    if option == "nan" and dtype.is_float:
        return float("nan")
    raise SemanticError(f"padding_option must be \"zero\" or \"nan\" (float tensors only), got {option!r}")


def _stored(value, block: list[int]) -> Tile:
    value = _tile(value, "the value stored")
    if value.shape and semantics.broadcast_shapes(value.shape, block) != block:
        raise SemanticError(f"a value of shape {value.shape} cannot be stored into a block of shape {block}")
    return value


def _same_parts(a, b) -> bool:
    return len(a) == len(b) and all(type(x) is type(y) and x == y for x, y in zip(a, b))


class TensorDescriptor(Aggregate):
    """`tile.make_tensor_descriptor(...)` or a descriptor argument: a tensor of `shape` and
    `strides` read and written in blocks of `block_shape`."""

    def __init__(self, base: Pointer, shape: list, strides: list, block_shape: list[int], padding: str = "zero"):
        self.base, self.shape, self.strides, self.block_shape, self.padding = base, shape, strides, block_shape, padding

    def __repr__(self):
        return f"a tensor descriptor of '{self.base.base.name}' with block {self.block_shape}"

    def check_carry(self, new):
        if new is not self and not (isinstance(new, TensorDescriptor) and new.base == self.base and new.padding == self.padding
                                    and all(_same_parts(getattr(new, k), getattr(self, k)) for k in ("shape", "strides", "block_shape"))):
            raise TileError("must stay the same tensor descriptor across control flow")

    def attribute(self, name: str):
        if name in ("load", "store"):
            bound = self.load if name == "load" else self.store

            def method(*args, **kwargs):
                return bound(*args, **kwargs)

            method.__name__, method.tile_method = name, True
            return method
        if name in ("shape", "strides", "block_shape"):
            return tuple(getattr(self, name))
        if name == "dtype":
            return self.base.base.dtype
        raise AttributeError(name)

    def _access(self, offsets):
        rank = len(self.block_shape)
        return block_access(self.base, self.shape, self.strides, _offsets32(offsets, rank, "the descriptor's offsets"),
                            self.block_shape, range(rank))

    def load(self, offsets):
        pointer, mask = self._access(offsets)
        return _plain_load(pointer, mask, _padding(self.padding, self.base.base.dtype))

    def store(self, offsets, value):
        pointer, mask = self._access(offsets)
        _plain_store(pointer, semantics.broadcast_to(_stored(value, self.block_shape), self.block_shape), mask)


class BlockPointer(Aggregate):
    """`tile.make_block_ptr(...)`: a block of a tensor at `offsets`, which loops carry (the
    rest must stay the same: `tile.advance` moves the block)."""

    def __init__(self, base: Pointer, shape: list, strides: list, offsets: list[Tile], block_shape: list[int], order):
        self.base, self.shape, self.strides, self.offsets = base, shape, strides, offsets
        self.block_shape, self.order = block_shape, order

    def __repr__(self):
        return f"a block pointer into '{self.base.base.name}' with block {self.block_shape}"

    def carried(self):
        return [o.value for o in self.offsets]

    def attribute(self, name: str):
        if name == "dtype":  # (Triton's `p.dtype.element_ty`, as a store's cast spells the element type)
            return pointer_type(self.base.base.dtype)
        if name in ("shape", "strides", "block_shape", "order"):
            return tuple(getattr(self, name))
        raise AttributeError(name)

    def rebuilt(self, values):
        return BlockPointer(self.base, self.shape, self.strides, [Tile(v) for v in values], self.block_shape, self.order)

    def check_carry(self, new):
        if not (isinstance(new, BlockPointer) and new.base == self.base and new.order == self.order
                and all(_same_parts(getattr(new, k), getattr(self, k)) for k in ("shape", "strides", "block_shape"))):
            raise TileError("must stay a block pointer into the same tensor, with the same shape, strides and block "
                            "shape, across control flow (tile.advance moves it)")

    def access(self, boundary_check) -> tuple[Pointer, Tile | None]:
        rank = len(self.block_shape)
        dims = (boundary_check,) if isinstance(boundary_check, int) else boundary_check
        if not isinstance(dims, (tuple, list)) or any(isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < rank
                                                       for d in dims):
            raise SemanticError(f"boundary_check must be dims of the block (0 to {rank - 1}), got {_describe(boundary_check)}")
        return block_access(self.base, self.shape, self.strides, self.offsets, self.block_shape, set(dims))


@emitter("make_tensor_descriptor")
def _make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    block = _block_shape(block_shape, "block_shape")
    rank = len(block)
    if rank > 5:
        raise SemanticError(f"a tensor descriptor has 1 to 5 dims, got {rank}")
    shape, strides = _ints(shape, rank, "shape"), _ints(strides, rank, "strides")
    if not (type(strides[-1]) is int and strides[-1] == 1):
        raise SemanticError(f"a tensor descriptor's last stride must be 1 (its last dim contiguous), got "
                            f"{_describe(strides[-1])}")
    base = _base(base, "make_tensor_descriptor's base")
    _padding(padding_option, base.base.dtype)
    tma_aligned(base, strides)
    return TensorDescriptor(base, shape, strides, block, padding_option)


def _descriptor(desc, what: str) -> TensorDescriptor:
    if not isinstance(desc, TensorDescriptor):
        raise SemanticError(f"{what} needs a tensor descriptor (tile.make_tensor_descriptor or a TensorDescriptor "
                            f"argument), got {_describe(desc)}")
    return desc


@emitter("load_tensor_descriptor")
def _load_tensor_descriptor(desc, offsets):
    return _descriptor(desc, "load_tensor_descriptor").load(offsets)


@emitter("store_tensor_descriptor")
def _store_tensor_descriptor(desc, offsets, value):
    return _descriptor(desc, "store_tensor_descriptor").store(offsets, value)


@emitter("make_block_ptr")
def _make_block_ptr(base, shape, strides, offsets, block_shape, order=None):
    block = _block_shape(block_shape, "block_shape")
    rank = len(block)
    if order is not None and sorted(_ints(order, rank, "order")) != list(range(rank)):
        raise SemanticError(f"order must be a permutation of the block's dims, got {_describe(order)}")
    return BlockPointer(_base(base, "make_block_ptr's base"), _ints(shape, rank, "shape"), _ints(strides, rank, "strides"),
                        _offsets32(offsets, rank, "offsets"), block, order)


@emitter("advance")
def _advance(base, offsets):
    if not isinstance(base, BlockPointer):
        raise SemanticError(f"advance needs a block pointer (tile.make_block_ptr), got {_describe(base)}")
    steps = _ints(offsets, len(base.block_shape), "advance's offsets")
    moved = [o if isinstance(s, int) and s == 0 else semantics.cast(semantics.binary("+", o, s), int32)
             for o, s in zip(base.offsets, steps)]
    return BlockPointer(base.base, base.shape, base.strides, moved, base.block_shape, base.order)


@emitter("load")
def _load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
          eviction_policy="", volatile=False):
    """Triton's load: through a block pointer (`boundary_check`, `padding_option`), or a pointer."""
    hints = dict(cache_modifier=cache_modifier, eviction_policy=eviction_policy, volatile=volatile)
    if isinstance(pointer, BlockPointer):
        if mask is not None or other is not None:
            raise SemanticError("a load through a block pointer takes boundary_check and padding_option, not mask and other")
        p, mask = pointer.access(boundary_check)
        return _plain_load(p, mask, _padding(padding_option, pointer.base.base.dtype), **hints)
    if boundary_check or padding_option:
        raise SemanticError("boundary_check and padding_option need a block pointer (tile.make_block_ptr)")
    return _plain_load(pointer, mask, other, **hints)


@emitter("store")
def _store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy="", volatile=False):
    """Triton's store: through a block pointer (`boundary_check`), or a pointer."""
    hints = dict(cache_modifier=cache_modifier, eviction_policy=eviction_policy, volatile=volatile)
    if isinstance(pointer, BlockPointer):
        if mask is not None:
            raise SemanticError("a store through a block pointer takes boundary_check, not a mask")
        p, mask = pointer.access(boundary_check)
        return _plain_store(p, semantics.broadcast_to(_stored(value, pointer.block_shape), pointer.block_shape), mask,
                            **hints)
    if boundary_check:
        raise SemanticError("boundary_check needs a block pointer (tile.make_block_ptr)")
    return _plain_store(pointer, value, mask, **hints)


def host_descriptors(scope: dict):
    """Replace each descriptor argument's `HostDescriptor` constexpr in a kernel's scope by the
    descriptor over the arguments the launch expanded it to (`tensor_descriptor.part_names`)."""
    for name, spec in list(scope.items()):
        if isinstance(spec, HostDescriptor):
            base, *parts = (scope.pop(n) for n in part_names(name, spec.rank))
            if not isinstance(base, TensorArg):
                raise SemanticError(f"argument '{name}': a descriptor's base must be a tensor")
            scope[name] = TensorDescriptor(Pointer(base, 0), parts[:spec.rank], parts[spec.rank:], list(spec.block_shape),
                                           spec.padding)
