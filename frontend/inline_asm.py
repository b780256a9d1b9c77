"""The emitter of Triton's `inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack)`:
PTX run on every `pack` elements of the broadcast `args`, making one tile per dtype (a tuple
of them for a tuple of dtypes). Its operands are numbered as LLVM's inline asm numbers them:
the output registers first, then the inputs'; an operand or result narrower than 32 bits
shares 32-bit registers, `min(32 // bits, pack)` elements each (Triton's rule). What LLVM
would stop the process on (a constraint count that does not match the registers, a `$n`
past them) is an error at the call's line; the CPU target cannot run PTX (`codegen`)."""

from __future__ import annotations

import re

from mlir import ir

from ..dialects.inline_asm_ops import MAX_ARGS, MAX_RESULTS, inline_asm, registers_per_instance
from . import dtypes, semantics, unsigned
from .builtins import SemanticError, _describe, _dtype, _tile, emitter
from .values import Tile


def _registers(dts, pack: int) -> int:
    return sum(registers_per_instance(dt.to_mlir(), pack)[0] for dt in dts)


def _check_constraints(constraints: str, n_out: int, n_in: int, asm: str):
    parts = [c.strip() for c in constraints.split(",")]
    extra = [c for c in parts[n_out:] if c.startswith("~")]  # clobbers ("~{memory}") come last
    given = parts[: len(parts) - len(extra)]
    if len(given) != n_out + n_in:
        raise SemanticError(f"inline_asm_elementwise's constraints name {len(given)} operands, but its {n_out} output "
                            f"and {n_in} input registers need {n_out + n_in} (each `pack` elements narrower than 32 bits "
                            "share 32-bit registers)")
    if any(not c.startswith("=") for c in given[:n_out]) or any(c.startswith("=") for c in given[n_out:]):
        raise SemanticError(f"inline_asm_elementwise's constraints must list its {n_out} outputs ('=r') first, then "
                            f"its {n_in} inputs, got {constraints!r}")
    used = [int(n) for n in re.findall(r"\$(\d+)", asm)]
    if used and max(used) >= n_out + n_in:
        raise SemanticError(f"inline_asm_elementwise's asm uses ${max(used)}, but it has only {n_out + n_in} operands "
                            f"($0 .. ${n_out + n_in - 1})")


@emitter("inline_asm_elementwise")
def _inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
    if not isinstance(asm, str) or not isinstance(constraints, str):
        raise SemanticError("inline_asm_elementwise's asm and constraints must be compile-time strings")
    if not isinstance(is_pure, bool) or isinstance(pack, bool) or not isinstance(pack, int) or pack < 1:
        raise SemanticError(f"inline_asm_elementwise's is_pure must be a bool and pack an int >= 1, got "
                            f"{_describe(is_pure)} and {_describe(pack)}")
    if not isinstance(args, (tuple, list)):
        raise SemanticError(f"inline_asm_elementwise's args must be a tuple or list of tiles, got {_describe(args)}")
    several = isinstance(dtype, (tuple, list))
    out_dts = [_dtype(d, "inline_asm_elementwise's dtype") for d in (dtype if several else [dtype])]
    if not out_dts:
        raise SemanticError("inline_asm_elementwise needs at least one result dtype")
    tiles = [_tile(a, "inline_asm_elementwise's argument") for a in args]
    if len(tiles) > MAX_ARGS or len(out_dts) > MAX_RESULTS:
        raise SemanticError(f"inline_asm_elementwise takes at most {MAX_ARGS} args and {MAX_RESULTS} dtypes, got "
                            f"{len(tiles)} and {len(out_dts)}")
    for dt in [*out_dts, *(t.dtype for t in tiles)]:
        if dt == dtypes.int1 or dt in dtypes.FLOAT8:
            raise SemanticError(f"inline_asm_elementwise takes and makes integer and float tiles of 8 bits or more "
                                f"(not bools or float8), got {dt!r}")
    _check_constraints(constraints, _registers(out_dts, pack), _registers([t.dtype for t in tiles], pack), asm)
    shape = []
    for t in tiles:
        shape = semantics.broadcast_shapes(shape, t.shape) if (shape or t.shape) else []
    tiles = [semantics.broadcast_to(t, shape) if shape else t for t in tiles]
    types = [ir.RankedTensorType.get(shape, dt.to_mlir()) if shape else dt.to_mlir() for dt in out_dts]
    op = inline_asm(types, [t.value for t in tiles], asm, constraints, is_pure, pack)
    outs = [Tile(unsigned.mark(r) if not dt.signed else r) for r, dt in zip(op.results, out_dts)]
    return tuple(outs) if several else outs[0]
