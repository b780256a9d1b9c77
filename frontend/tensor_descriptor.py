"""Tensor descriptors made on the host (Triton's `TensorDescriptor`), passed as kernel arguments.

Light: the runtime imports it (no MLIR). A launch expands a descriptor argument `d` into
its base tensor and its shape and strides as int arguments (`d.base`, `d.shape[i]`,
`d.strides[i]`, specialized as any int: == 1 folded, multiples of 16 known), with a
`HostDescriptor` constexpr holding its block shape, so that the kernel computes the same
masked block loads as `tile.make_tensor_descriptor` over those arguments
(`frontend/descriptors.py`), which become TMA copies where the alignment allows.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import LaunchError


@dataclass
class TensorDescriptor:
    """`base` (a torch tensor) seen as a tensor of `shape` and `strides` (in elements, the
    last 1), read and written in blocks of `block_shape` (powers of two); out-of-bounds
    elements read as zero ("nan": NaN) and are not written."""

    base: object
    shape: list
    strides: list
    block_shape: list
    padding: str = "zero"

    @staticmethod
    def from_tensor(tensor, block_shape, padding="zero"):
        return TensorDescriptor(tensor, list(tensor.shape), list(tensor.stride()), list(block_shape), padding)


@dataclass(frozen=True)
class HostDescriptor:
    """What a kernel is compiled for, per descriptor argument: its rank, block shape and padding."""

    rank: int
    block_shape: tuple
    padding: str


def is_descriptor(v) -> bool:
    """tile's or Triton's TensorDescriptor (duck-typed: the runtime imports no Triton)."""
    return type(v).__name__ == "TensorDescriptor" and all(hasattr(v, a) for a in ("base", "shape", "strides", "block_shape"))


def part_names(name: str, rank: int) -> list[str]:
    """The arguments a descriptor argument expands to, after its HostDescriptor."""
    return [f"{name}.base", *[f"{name}.shape[{d}]" for d in range(rank)], *[f"{name}.strides[{d}]" for d in range(rank)]]


def expand(name: str, desc) -> tuple[HostDescriptor, list]:
    """(the constexpr, [base, *shape, *strides]) of descriptor argument `name`; a LaunchError
    naming it if the descriptor is malformed."""
    def ints(v, what):
        try:
            out = [int(x) for x in v]
        except (TypeError, ValueError):
            raise LaunchError(f"argument '{name}': the descriptor's {what} must be ints, got {v!r}") from None
        if any(type(x) is bool or int(x) != x for x in v):
            raise LaunchError(f"argument '{name}': the descriptor's {what} must be ints, got {v!r}")
        return out

    base = desc.base
    if not hasattr(base, "data_ptr"):
        raise LaunchError(f"argument '{name}': a descriptor's base must be a tensor, got {type(base).__name__}")
    shape, strides, block = ints(desc.shape, "shape"), ints(desc.strides, "strides"), ints(desc.block_shape, "block_shape")
    rank = len(block)
    if not 1 <= rank <= 5 or len(shape) != rank or len(strides) != rank:
        raise LaunchError(f"argument '{name}': a descriptor needs 1 to 5 dims and a shape, strides and block_shape of one "
                          f"length, got {shape}, {strides} and {block}")
    if strides[-1] != 1:
        raise LaunchError(f"argument '{name}': a descriptor's last stride must be 1 (its rows contiguous), got strides {strides}")
    if any(d < 1 or d & (d - 1) for d in block):
        raise LaunchError(f"argument '{name}': a descriptor's block_shape must be powers of two, got {block}")
    if any(s < 0 for s in shape) or any(s < 0 for s in strides):
        raise LaunchError(f"argument '{name}': a descriptor's shape and strides must not be negative, got {shape} and {strides}")
    if all(shape) and sum((n - 1) * s for n, s in zip(shape, strides)) >= _elements_from(base):
        raise LaunchError(f"argument '{name}': a descriptor of shape {shape} and strides {strides} reaches past the end "
                          f"of its base tensor's storage")
    padding = getattr(desc, "padding", "zero")
    if padding not in ("zero", "nan"):
        raise LaunchError(f"argument '{name}': a descriptor's padding must be \"zero\" or \"nan\", got {padding!r}")
    if padding == "nan" and not base.dtype.is_floating_point:
        raise LaunchError(f"argument '{name}': padding \"nan\" needs a float tensor, got {base.dtype}")
    return HostDescriptor(rank, tuple(block), padding), [base, *shape, *strides]


def _elements_from(t) -> int:
    """Elements of t's storage from its first element on."""
    return t.untyped_storage().nbytes() // t.element_size() - t.storage_offset()
