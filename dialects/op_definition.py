"""How a `tile` op is defined: one `OpDef` per op, from which both its IRDL
declaration and its Python builder come.

IRDL (`mlir.dialects.irdl.load_dialects`) is the only way to add a dialect at
run time in the pinned MLIR 22 wheel. IRDL checks the structure of an op (its
operand, result and attribute kinds); the semantic checks it cannot express
(shapes, element types) live in each op's `verify` function, run by the
`tile-verify` pass before any upstream pass sees the IR and after every pass
stage (`passes/registry.run_pipeline`). IRDL has no traits either: which ops
are pure is `OpDef.pure`, used by `tile-canonicalize`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from mlir import ir

# IRDL constraint spelled once per operand/result: IRDL unifies repeated uses of
# one constraint SSA value, so each slot gets its own constraint op.
CONSTRAINTS = {
    "any": "irdl.any",
    "tensor": 'irdl.base "!builtin.tensor"',
    "memref": 'irdl.base "!builtin.memref"',
    "i32": "irdl.is i32",
    "index": "irdl.is index",
}

REGISTRY: dict[str, "OpDef"] = {}


@dataclass
class OpDef:
    """A tile op: its name, operand/result kinds, attribute names and verifier."""

    name: str
    operands: list[tuple[str, str]] = field(default_factory=list)
    results: list[tuple[str, str]] = field(default_factory=list)
    attributes: list[str] = field(default_factory=list)
    regions: int = 0
    verify: Callable[[ir.Operation], str | None] | None = None
    doc: str = ""
    # No side effect (reads no memory, writes none, cannot trap): `tile-canonicalize` may erase
    # the op when its results are unused and merge two identical ones. IRDL has no traits, so
    # MLIR's own canonicalize and cse treat every tile op as having unknown effects.
    pure: bool = False

    @property
    def full_name(self) -> str:
        return f"tile.{self.name}"

    def irdl(self) -> str:
        lines, n = [f"  irdl.operation @{self.name} {{"], 0

        def constraint(kind: str) -> str:
            nonlocal n
            n += 1
            lines.append(f"    %c{n} = {CONSTRAINTS[kind]}")
            return f"%c{n}"

        def slot(name: str, kind: str) -> str:
            # A leading "*" marks the one variadic slot of an operand or result list, a "?" an
            # optional one (several need the op's `operandSegmentSizes` / `resultSegmentSizes`).
            var = {"*": "variadic ", "?": "optional "}.get(kind[0], "")
            return f"{name}: {var}{constraint(kind.lstrip('*?'))}"

        if self.operands:
            lines.append(f"    irdl.operands({', '.join(slot(*o) for o in self.operands)})")
        if self.results:
            lines.append(f"    irdl.results({', '.join(slot(*r) for r in self.results)})")
        if self.attributes:
            slots = [f'"{a}" = {constraint("any")}' for a in self.attributes]
            lines.append(f"    irdl.attributes {{{', '.join(slots)}}}")
        if self.regions:
            regs = []
            for i in range(self.regions):
                lines.append(f"    %r{i} = irdl.region")
                regs.append(f"body: %r{i}")
            lines.append(f"    irdl.regions({', '.join(regs)})")
        lines.append("  }")
        return "\n".join(lines)


def define(name: str, **kw) -> Callable:
    """Decorator: register the op `tile.<name>`; the decorated function is its builder."""

    def wrap(builder: Callable) -> Callable:
        REGISTRY[name] = OpDef(name=name, doc=builder.__doc__ or "", **kw)
        builder.op_def = REGISTRY[name]
        return builder

    return wrap


def create(name: str, results, operands, attributes=None, *, regions: int = 0, loc=None, ip=None) -> ir.Operation:
    """Build one generic `tile.<name>` operation at the current insertion point."""
    return ir.Operation.create(
        f"tile.{name}",
        results=list(results),
        operands=list(operands),
        attributes=attributes or {},
        regions=regions,
        loc=loc,
        ip=ip,
    )
