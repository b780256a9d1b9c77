"""`tile.constexpr`: the annotation of a compile-time parameter, and (as Triton's) a wrapper
of a compile-time value, `MAX_FUSED_SIZE = tile.constexpr(65536)` at module level.

A wrapped value works on the host as the value does (`min(MAX_FUSED_SIZE, n)`, `n <
MAX_FUSED_SIZE`, `range(MAX_FUSED_SIZE)`), operators giving constexprs as Triton's do.
Kernels and launches see the bare value (`unwrap`): a global, an attribute read off a module,
a launch argument. Pure Python: the runtime imports it without the compiler.
"""

from __future__ import annotations

import operator


def unwrap(v):
    """The value a constexpr wraps; anything else as it is."""
    return v.value if isinstance(v, constexpr) else v


def _binary(op, reflected=False):
    def method(self, other):
        a, b = (unwrap(other), self.value) if reflected else (self.value, unwrap(other))
        return constexpr(op(a, b))

    return method


class constexpr:
    """Annotation for a compile-time parameter (`BLOCK: tile.constexpr`): its value is part
    of the kernel's specialization key, and code under it is folded at compile time.
    Called, `tile.constexpr(value)` wraps a value as Triton's does."""

    def __init__(self, value):
        self.value = unwrap(value)

    def __repr__(self):
        return f"constexpr[{self.value!r}]"

    def __hash__(self):  # (as its value's: a constexpr equals its bare value)
        return hash(self.value)

    def __bool__(self):
        return bool(self.value)

    def __index__(self):
        return operator.index(self.value)

    def __int__(self):
        return int(self.value)

    def __float__(self):
        return float(self.value)

    def __iter__(self):
        return iter(self.value)

    def __getitem__(self, key):
        return self.value[unwrap(key)]

    def __call__(self, *args, **kwargs):
        return self.value(*args, **kwargs)

    def __neg__(self):
        return constexpr(-self.value)

    def __pos__(self):
        return constexpr(+self.value)

    def __invert__(self):
        return constexpr(~self.value)

    def __abs__(self):
        return constexpr(abs(self.value))


for _name, _op in [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul), ("truediv", operator.truediv),
                   ("floordiv", operator.floordiv), ("mod", operator.mod), ("pow", operator.pow),
                   ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor),
                   ("lshift", operator.lshift), ("rshift", operator.rshift)]:
    setattr(constexpr, f"__{_name}__", _binary(_op))
    setattr(constexpr, f"__r{_name}__", _binary(_op, reflected=True))
for _name, _op in [("lt", operator.lt), ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge),
                   ("eq", operator.eq), ("ne", operator.ne)]:
    setattr(constexpr, f"__{_name}__", _binary(_op))
del _name, _op
