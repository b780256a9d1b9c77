"""Predicated 16-byte global loads and stores, as inline PTX.

    @p ld.global.v4.b32 {r0, r1, r2, r3}, [addr];     (r0..r3 first set to `other`)
    @p st.global.v4.b32 [addr], {r0, r1, r2, r3};

A load of data that nothing writes while the kernel runs and that every
program rereads (`read_only`: a layer norm's weight and bias rows) takes the
non-coherent path, `ld.global.nc` (CUDA's `__ldg`). Measured on the H200, layer
norm 16384x8192 f16: 132.0 us so against 133.6 plain; `.nc` on the streamed
rows as well gained nothing, and varied more with where the input lay.

A masked access written as a branch around a `vector.load` splits the code
into blocks that ptxas schedules apart, and it keeps more registers live (16
more in a layer norm of 32 elements a thread, which cost a resident block per
SM). A predicate on the instruction itself, as Triton emits, keeps one block.
NVVM has no predicated vector load or store, so these are inline PTX
(`llvm.inline_asm`); everything else stays in upstream ops.

The address is the memref's aligned pointer plus its offset and the index, in
bytes: device pointers are the same in the generic and the global window.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm, memref, vector

from ..dialects.layout import element_bits

_I32, _I64 = (lambda: ir.IntegerType.get_signless(32)), (lambda: ir.IntegerType.get_signless(64))


def supported(w: int, elem) -> bool:
    """Runs of 4, 8 or 16 bytes (whole 32-bit words)."""
    return (w * element_bits(elem)) // 8 in (4, 8, 16) and (w * element_bits(elem)) % 32 == 0


class ByteAddress:
    """Global addresses (i64) of the elements of `flat`: `address(index)` of an i32 or i64
    element index, and `address.shifted(a, k)` for the element k (a constant) after address a."""

    def __init__(self, flat, elem):
        self.size = element_bits(elem) // 8
        meta = memref.ExtractStridedMetadataOp(flat)
        base = arith.addi(memref.ExtractAlignedPointerAsIndexOp(flat).result,
                          arith.muli(meta.offset, arith.ConstantOp(ir.IndexType.get(), self.size).result))
        self.base = arith.index_cast(_I64(), base)

    def __call__(self, index):
        if ir.IntegerType(index.type).width < 64:  # int64 offsets (`o.to(tile.int64) * s`) are already wide
            index = arith.extsi(_I64(), index)
        return arith.addi(self.base, arith.muli(index, arith.ConstantOp(_I64(), self.size).result))

    def shifted(self, address, elements: int):
        return arith.addi(address, arith.ConstantOp(_I64(), elements * self.size).result)


def _words(vec, w: int, elem) -> list:
    """A run of w elements as 32-bit words."""
    n = w * element_bits(elem) // 32
    as_words = vector.BitCastOp(ir.VectorType.get([n], _I32()), vec).result
    return [vector.extract(as_words, [], [i]) for i in range(n)]


def _access(op: str, names: list[str]) -> tuple[str, str]:
    """The PTX instruction for n 32-bit words (`ld.global.v4.b32`) and its register list."""
    if len(names) == 1:
        return f"{op}.b32", names[0]
    return f"{op}.v{len(names)}.b32", "{" + ", ".join(names) + "}"


def load(address, pred, other_vec, w: int, elem, read_only: bool = False):
    """vector<w x elem> loaded from `address` where `pred` holds, else `other_vec`."""
    others = _words(other_vec, w, elem)
    n = len(others)
    outs = [f"${i}" for i in range(n)]
    p, a = f"${n}", f"${n + 1}"
    movs = "".join(f"mov.b32 ${i}, ${n + 2 + i};\n\t" for i in range(n))
    instruction, registers = _access("ld.global.nc" if read_only else "ld.global", outs)
    asm = f"{movs}@{p} {instruction} {registers}, [{a}];"
    constraints = ",".join(["=r"] * n + ["b", "l"] + ["r"] * n)
    res_ty = _I32() if n == 1 else ir.Type.parse("!llvm.struct<(" + ", ".join(["i32"] * n) + ")>")
    # Marked as having side effects: LLVM must not move a load it cannot see into across
    # the stores and barriers around it.
    got = llvm.inline_asm(res_ty, [pred, address, *others], asm, constraints, has_side_effects=True)
    words = [got] if n == 1 else [llvm.ExtractValueOp(_I32(), got, [i]).result for i in range(n)]
    packed = vector.FromElementsOp(ir.VectorType.get([n], _I32()), words).result
    return vector.BitCastOp(ir.VectorType.get([w], elem), packed).result


def store(address, pred, vec, w: int, elem):
    """Store vector<w x elem> `vec` at `address` where `pred` holds."""
    words = _words(vec, w, elem)
    n = len(words)
    regs = [f"${2 + i}" for i in range(n)]
    instruction, registers = _access("st.global", regs)
    asm = f"@$0 {instruction} [$1], {registers};"
    llvm.inline_asm(None, [pred, address, *words], asm, ",".join(["b", "l"] + ["r"] * n), has_side_effects=True)
