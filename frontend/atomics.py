"""Emitters of the atomics (Triton's `tl.atomic_*`) and `debug_barrier`.

Every atomic returns the old values (0 where the mask is false; `atomic_store` nothing,
`atomic_load` the values it read) and takes Triton's
`sem=` (memory order: "acq_rel", the default, "acquire", "release", "relaxed") and
`scope=` ("gpu", the default, "cta", "sys"); a GPU lowers them to `atom.<sem>.<scope>`.
"""

from __future__ import annotations

from ..dialects import tile_ops
from . import semantics, unsigned
from .builtins import _access, _describe, _fit, _pointer, _tile, emitter
from .semantics import SemanticError
from .values import Tile

_NAMES = {"f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16", "i32": "int32", "i64": "int64"}


def _ordering(name: str, sem, scope) -> tuple[str, str]:
    """Triton's checks of `sem=` and `scope=` (None: the defaults)."""
    sem = tile_ops.ATOMIC_SEMS[0] if sem is None else sem
    scope = tile_ops.ATOMIC_SCOPES[0] if scope is None else scope
    if sem not in tile_ops.ATOMIC_SEMS:
        raise SemanticError(f"{name}'s sem must be one of {', '.join(map(repr, tile_ops.ATOMIC_SEMS))}, got {_describe(sem)}")
    if scope not in tile_ops.ATOMIC_SCOPES:
        raise SemanticError(f"{name}'s scope must be one of {', '.join(map(repr, tile_ops.ATOMIC_SCOPES))}, "
                            f"got {_describe(scope)}")
    return sem, scope


def _target(name: str, pointer, allowed):
    p = _pointer(pointer, f"{name}'s pointer")
    if p.base.dtype.mlir not in allowed:
        names = ", ".join(_NAMES[t] for t in allowed)
        raise SemanticError(f"{name} takes {names} tensors, but '{p.base.name}' is {p.base.dtype.name}")
    if name in ("atomic_max", "atomic_min") and not p.base.dtype.signed:  # (the lowerings compare signed)
        raise SemanticError(f"{name} of a {p.base.dtype!r} tensor ('{p.base.name}') is not in the language yet: "
                            "its comparison would be signed")
    return p


def _old(p, value) -> Tile:
    """The old values an atomic returns, as unsigned as the tensor."""
    return Tile(unsigned.mark(value) if not p.base.dtype.signed else value)


def _atomic(kind: str, pointer, value, mask, sem, scope):
    name = f"atomic_{kind}"
    p = _target(name, pointer, tile_ops.ATOMIC_KINDS[kind])
    sem, scope = _ordering(name, sem, scope)
    value = semantics.cast(_tile(value, "value"), p.base.dtype)
    offsets, mask, shape = _access(p, mask)
    value = _fit(value, shape, f"{name}'s value")
    return _old(p, tile_ops.atomic_rmw(kind, p.base.value, offsets.value, value.value, mask.value, sem, scope))


# Triton's atomic_load / atomic_store: the orders each takes, its default first
_ACCESS_SEMS = {"load": ("acquire", "relaxed"), "store": ("release", "relaxed")}

for _kind in tile_ops.ATOMIC_KINDS:
    if _kind not in _ACCESS_SEMS:
        emitter(f"atomic_{_kind}")(
            lambda pointer, val, mask=None, sem=None, scope=None, _k=_kind: _atomic(_k, pointer, val, mask, sem, scope))


def _atomic_access(kind: str, pointer, value, mask, sem, scope) -> Tile:
    sems = _ACCESS_SEMS[kind]
    sem = sems[0] if sem is None else sem
    if sem not in sems:
        raise SemanticError(f"atomic_{kind}'s sem must be {' or '.join(map(repr, sems))}, got {_describe(sem)}")
    return _atomic(kind, pointer, value, mask, sem, scope)


@emitter("atomic_load")
def _atomic_load(pointer, mask=None, sem=None, scope=None):
    """Triton's `tl.atomic_load`: the values, read atomically (`ld.acquire.gpu`), 0 where the mask is false."""
    return _atomic_access("load", pointer, 0, mask, sem, scope)


@emitter("atomic_store")
def _atomic_store(pointer, val, mask=None, sem=None, scope=None):
    """Triton's `tl.atomic_store`: each element written once, atomically (`st.release.gpu`)."""
    _atomic_access("store", pointer, val, mask, sem, scope)


@emitter("atomic_cas")
def _atomic_cas(pointer, cmp, val, sem=None, scope=None):
    """Triton's `tl.atomic_cas`: no mask; cmp and val take the tensor's type and the access's shape."""
    p = _target("atomic_cas", pointer, tile_ops.CAS_TYPES)
    sem, scope = _ordering("atomic_cas", sem, scope)
    cmp, val = (semantics.cast(_tile(v, what), p.base.dtype) for v, what in ((cmp, "cmp"), (val, "val")))
    offsets, mask, shape = _access(p, None)
    cmp, val = _fit(cmp, shape, "atomic_cas's cmp"), _fit(val, shape, "atomic_cas's val")
    return _old(p, tile_ops.atomic_cas(p.base.value, offsets.value, cmp.value, val.value, mask.value, sem, scope))


@emitter("debug_barrier")
def _debug_barrier():
    """Every thread of the program waits for the others: what a spin lock's holder needs
    before it lets go (Triton's tutorial 05 releases its lock after one)."""
    tile_ops.barrier()
