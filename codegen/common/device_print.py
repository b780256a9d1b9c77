"""`tile.print` (the language's `device_print`) on both targets: one line per element,

    pid (0, 0, 0) idx (3, 1) x: 0.250000

printed with C's `printf` on the CPU target (an `llvm.call` the JIT resolves in the
process) and `vprintf` on a GPU (upstream `gpu.printf`, `gpu/device_print.py`). Elements print in index order
on the CPU; on a GPU each thread prints the elements it holds (the first copy of each,
where a layout gives an element to several threads), in no particular order. Floats
print as doubles (`%f`), integers as `%d` (`%lld` for 64-bit), bools as 0 or 1.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm, scf, tensor

from ...dialects import tile_ops
from .ir_builders import const_index
from .lowerings import lowering


def _prefix(op) -> str:
    return ir.StringAttr(op.attributes["prefix"]).value


def _element_type(v):
    return ir.RankedTensorType(v.type).element_type if isinstance(v.type, ir.RankedTensorType) else v.type


def _printable(x):
    """(printf conversion, x widened to what printf reads): floats as f64, ints as i32/i64."""
    t = x.type
    if isinstance(t, ir.IntegerType):
        if t.width == 64:
            return "%lld", x
        i32 = ir.IntegerType.get_signless(32)
        if t.width == 32:
            return "%d", x
        return "%d", (arith.extui if t.width == 1 else arith.extsi)(i32, x)
    f64 = ir.F64Type.get()
    if not isinstance(t, ir.F32Type) and not isinstance(t, ir.F64Type):
        x = arith.extf(ir.F32Type.get(), x)
    return "%f", x if isinstance(x.type, ir.F64Type) else arith.extf(f64, x)


def _line(prefix: str, rank: int, value):
    """The format and the value of one element's line, after the pid and index arguments."""
    conv, v = _printable(value)
    idx = ", ".join(["%d"] * rank)
    return f"pid (%d, %d, %d) idx ({idx}) {prefix.replace('%', '%%')}{conv}\n", v


# ---- the CPU target: printf ---------------------------------------------------------

def _module_of(op):
    while op.name != "builtin.module":
        op = op.parent
    return op


_PRINTF = "!llvm.func<i32 (ptr, ...)>"
_FFLUSH = "!llvm.func<i32 (ptr)>"


def _symbols(anchor):
    """The module's body and the names of its symbols."""
    body = _module_of(anchor).regions[0].blocks[0]
    return body, {ir.StringAttr(o.attributes["sym_name"]).value for o in body.operations if "sym_name" in o.attributes}


def _declare(body, names, name: str, signature: str) -> None:
    if name not in names:
        with ir.InsertionPoint.at_block_begin(body), ir.Location.unknown():
            llvm.LLVMFuncOp(name, ir.TypeAttr.get(ir.Type.parse(signature)))


def _fflush(anchor) -> None:
    """fflush(NULL): the lines reach the process's stdout before the launch returns, not
    when C's buffer fills (a file or pipe is block-buffered)."""
    body, names = _symbols(anchor)
    _declare(body, names, "fflush", _FFLUSH)
    null = llvm.ZeroOp(ir.Type.parse("!llvm.ptr")).result
    llvm.CallOp(ir.IntegerType.get_signless(32), [null], [], [], callee="fflush")


def _printf(anchor, fmt: str, args) -> None:
    """A call of C's printf with a format string held in a global of the module."""
    body, names = _symbols(anchor)
    _declare(body, names, "printf", _PRINTF)
    with ir.InsertionPoint.at_block_begin(body), ir.Location.unknown():
        name = f"tile_print_{len([n for n in names if n.startswith('tile_print_')])}"
        data = fmt.encode() + b"\0"
        text = ir.StringAttr.get(data.decode())
        llvm.GlobalOp(ir.Type.parse(f"!llvm.array<{len(data)} x i8>"), name, ir.Attribute.parse("#llvm.linkage<internal>"),
                      constant=True, value=text)
    ptr = llvm.AddressOfOp(ir.Type.parse("!llvm.ptr"), name).result
    llvm.CallOp(ir.IntegerType.get_signless(32), [ptr, *args], [], [], callee="printf",
                var_callee_type=ir.TypeAttr.get(ir.Type.parse(_PRINTF)))


def _for_each_index(shape, body, ivs=()):
    """Nested scf.for over a static shape, in row-major order; `body(indices)` per element."""
    if len(ivs) == len(shape):
        body(list(ivs))
        return
    loop = scf.ForOp(const_index(0), const_index(shape[len(ivs)]), const_index(1))
    with ir.InsertionPoint(loop.body):
        _for_each_index(shape, body, (*ivs, loop.induction_variable))
        scf.YieldOp([])


@lowering("tile.print", target="cpu")
def lower_print(op):
    value = op.operands[0]
    pids = [tile_ops.program_id(a) for a in range(3)]
    i32 = ir.IntegerType.get_signless(32)
    if not isinstance(value.type, ir.RankedTensorType):
        fmt, v = _line(_prefix(op), 0, value)
        _printf(op, fmt, [*pids, v])
        _fflush(op)
        return None

    def body(ivs):
        fmt, v = _line(_prefix(op), len(ivs), tensor.ExtractOp(value, ivs).result)
        _printf(op, fmt, [*pids, *(arith.index_cast(i32, i) for i in ivs), v])

    _for_each_index(list(ir.RankedTensorType(value.type).shape), body)
    _fflush(op)
    return None
