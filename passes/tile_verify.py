"""`tile-verify`: run each tile op's semantic verifier (shapes, element types).

IRDL checks only the structure of an op; this pass checks the rest and reports
at the op's location. It runs first in every pipeline, since the bundled LLVM
aborts the process on IR that breaks an upstream pass's assumptions.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dialects.op_definition import REGISTRY
from ..frontend.errors import TileError
from .registry import register_pass
from .walk import all_ops


class VerifyError(TileError):
    def __init__(self, message, location):
        super().__init__(message)
        self.location = location


def verify_module(module_op) -> list[tuple[object, str]]:
    errors = []
    for op in all_ops(module_op):
        definition = REGISTRY.get(op.name[5:]) if op.name.startswith("tile.") else None
        message = definition.verify(op) if definition and definition.verify else None
        if message:
            errors.append((op.location, f"'{op.name}' op {message}"))
    return errors


@register_pass("tile-verify")
@dataclass
class TileVerify:
    def run(self, module_op):
        errors = verify_module(module_op)
        for loc, message in errors[1:]:
            loc.emit_error(message)
        if errors:
            raise VerifyError(errors[0][1], errors[0][0])
