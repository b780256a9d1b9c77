"""`cache_modifier=`, `eviction_policy=` and `volatile=` of `load` and `store`, checked as
Triton checks them, kept as attributes of the op (`dialects/tile_ops.MEMORY_HINTS`) for the
GPU lowering's PTX qualifiers (`ld.global.cg`, `ld.global.L1::evict_last.L2::cache_hint`,
`ld.volatile.global`); the CPU has no caches to steer and ignores them."""

from __future__ import annotations

from mlir import ir

from .values import describe as _describe
from .semantics import SemanticError

CACHE_MODIFIERS = {"load": (".ca", ".cg", ".cs", ".cv"), "store": (".wb", ".cg", ".cs", ".wt")}
EVICTION_POLICIES = ("evict_first", "evict_last", "evict_normal")


def attach(op: ir.Operation, what: str, cache_modifier, eviction_policy, volatile) -> None:
    """Check the three options of a `load` or `store` (`what`) and set them on its op; "" or
    None (and "evict_normal") leave the default, and no attribute."""
    allowed = CACHE_MODIFIERS[what]
    if cache_modifier not in ("", None) + allowed:
        raise SemanticError(f"{what}'s cache_modifier must be one of {', '.join(map(repr, allowed))}, "
                            f"got {_describe(cache_modifier)}")
    if eviction_policy not in ("", None) + EVICTION_POLICIES:
        raise SemanticError(f"{what}'s eviction_policy must be one of {', '.join(map(repr, EVICTION_POLICIES))}, "
                            f"got {_describe(eviction_policy)}")
    if not isinstance(volatile, bool):
        raise SemanticError(f"{what}'s volatile must be True or False (a compile-time bool), got {_describe(volatile)}")
    if cache_modifier:
        op.attributes["cache"] = ir.StringAttr.get(cache_modifier)
    if eviction_policy and eviction_policy != "evict_normal":
        op.attributes["evict"] = ir.StringAttr.get(eviction_policy)
    if volatile:
        op.attributes["volatile"] = ir.UnitAttr.get()
