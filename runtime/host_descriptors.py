"""Launches with tensor descriptor arguments (`tile.TensorDescriptor`, or Triton's).

Each descriptor argument `d` is expanded into a `HostDescriptor` constexpr (rank, block
shape, padding: in the cache key with the base tensor's dtype) and the run-time arguments
`d.base` (the tensor), `d.shape[i]` and `d.strides[i]` (ints, specialized as any int), by a
view of the kernel whose parameters are the expanded ones, kept per pattern of
descriptor arguments; the view launches as any kernel does (the general path: the binder
takes tensors and numbers only).
"""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass

from ..frontend.tensor_descriptor import expand, is_descriptor, part_names


@dataclass
class _Param:
    """A parameter of a view (names such as `d.shape[0]` are no Python identifiers)."""

    name: str
    annotation: object = inspect.Parameter.empty
    default: object = inspect.Parameter.empty
    empty = inspect.Parameter.empty
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD


def present(args, kwargs) -> bool:
    return any(is_descriptor(v) for v in args) or any(is_descriptor(v) for v in kwargs.values())


def expanded(kernel, args, kwargs):
    """(view, positional arguments, options) of a launch with descriptor arguments."""
    values, options = kernel.bind(list(args), dict(kwargs))
    pattern, flat = [], []
    for p, v in zip(kernel.params, values):
        if p.name not in kernel.constexprs and is_descriptor(v):
            spec, parts = expand(p.name, v)
            pattern.append((p.name, spec.rank))
            flat += [spec, *parts]
        else:
            flat.append(v)
    views = kernel.__dict__.setdefault("_descriptor_views", {})
    key = tuple(pattern)
    if key not in views:
        views[key] = _view(kernel, dict(pattern))
    return views[key], flat, options


def _view(kernel, ranks: dict):
    """A copy of `kernel` whose parameter `d` of rank r is `d` (the constexpr) and its parts."""
    view = copy.copy(kernel)
    params, specs = [], set()
    for p in kernel.params:
        if p.name in ranks:
            specs.add(p.name)
            params += [_Param(p.name, "constexpr"), *[_Param(n) for n in part_names(p.name, ranks[p.name])]]
        else:
            params.append(p)
    view.params, view.constexprs = params, kernel.constexprs | specs
    view._names = [p.name for p in params]
    view._runtime_names = [p.name for p in params if p.name not in view.constexprs]
    view._is_const = [p.name in view.constexprs for p in params]
    view._launchers, view._fast, view._bound, view._grids = {}, {}, {}, {}
    view._binder = view._kinds = None
    view._entry, view._bindable = view._unbound, False
    view.__dict__.pop("_descriptor_views", None)
    return view
