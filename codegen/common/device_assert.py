"""`tile.assert_fail` (a failed `device_assert`, under the `scf.if` that tested it) on both
targets. The CPU target calls `tile_assert_fail(message, pid x, y, z)`, a function the CPU
launcher registers with the JIT (`runtime/cpu_launcher.py`): it records the failure, the
kernel runs on, and the launch then raises `DeviceAssertionError`. A GPU calls CUDA's
`__assertfail`, as Triton's device-side assert: the message printed, the launch failed.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm

from ...dialects import tile_ops
from .device_print import _declare, _symbols
from .lowerings import lowering

# (the JIT's runtime symbols are `_mlir_ciface_` + the name `ExecutionEngine.register_runtime` takes)
CPU_CALLBACK = "tile_assert_fail"
_SIGNATURE = "!llvm.func<void (ptr, i32, i32, i32)>"


def _message(op) -> str:
    return ir.StringAttr(op.attributes["message"]).value


def _global_string(body, name: str, text: str):
    """A pointer to `text`, NUL-terminated, in a constant global `name` of the module `body`."""
    data = text.encode() + b"\0"
    with ir.InsertionPoint.at_block_begin(body), ir.Location.unknown():
        llvm.GlobalOp(ir.Type.parse(f"!llvm.array<{len(data)} x i8>"), name, ir.Attribute.parse("#llvm.linkage<internal>"),
                      constant=True, value=ir.StringAttr.get(data.decode()))
    return llvm.AddressOfOp(ir.Type.parse("!llvm.ptr"), name).result


def _assert_names(names) -> int:
    return len([n for n in names if n.startswith("tile_assert_")])


@lowering("tile.assert_fail", target="cpu")
def lower_assert_fail(op):
    """The CPU target: the launcher's callback, with the message and the program id."""
    body, names = _symbols(op)
    callee = "_mlir_ciface_" + CPU_CALLBACK
    _declare(body, names, callee, _SIGNATURE)
    pids = [tile_ops.program_id(a) for a in range(3)]
    message = _global_string(body, f"tile_assert_{_assert_names(names)}", _message(op))
    llvm.CallOp(None, [message, *pids], [], [], callee=callee)
    return None


def _module_being_built():
    """The gpu.module around the insertion point (the op converted sits in the source module)."""
    op = ir.InsertionPoint.current.block.owner
    while op.name != "gpu.module":
        op = op.parent
    return op


@lowering("tile.assert_fail", target="gpu")
def op_tile_assert_fail(self, op):
    """A GPU: CUDA's `__assertfail(message, file, line, function, char size)` in every thread,
    as Triton's device_assert: the driver prints the message (once per thread) and the
    launch fails."""
    module = _module_being_built()
    body = module.regions[0].blocks[0]
    names = {ir.StringAttr(o.attributes["sym_name"]).value for o in body.operations if "sym_name" in o.attributes}
    _declare(body, names, "__assertfail", "!llvm.func<void (ptr, ptr, i32, ptr, i64)>")
    text = _message(op)
    where, _, message = text.partition(": device_assert failed: ")
    file, _, line = where.rpartition(":")
    first = _assert_names(names)
    strings = [_global_string(body, f"tile_assert_{first + i}", s)
               for i, s in enumerate((message or text, file or "<kernel>", "kernel"))]
    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    line_no = arith.ConstantOp(i32, int(line) if line.isdigit() else 0).result
    llvm.CallOp(None, [strings[0], strings[1], line_no, strings[2], arith.ConstantOp(i64, 1).result], [], [],
                callee="__assertfail")
