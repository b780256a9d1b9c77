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

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, llvm, memref, vector

from ...dialects.layout import element_bits

_I16, _I32, _I64 = (lambda: ir.IntegerType.get_signless(16)), (lambda: ir.IntegerType.get_signless(32)), (lambda: ir.IntegerType.get_signless(64))


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


@dataclass(frozen=True)
class Hints:
    """A load's or store's `cache_modifier`, `eviction_policy` and `volatile` (the op's
    attributes, `frontend/memory_hints.py`) as Triton's PTX qualifiers. A cache operator
    (`.cg`) and an L1 eviction priority exclude each other in PTX: with both, the eviction
    reaches L2 only (`ld.global.cg.L2::cache_hint`); `ld.volatile` takes neither."""

    cache: str = ""
    evict: str = ""
    volatile: bool = False

    @staticmethod
    def of(op) -> "Hints | None":
        a = op.attributes
        got = Hints(ir.StringAttr(a["cache"]).value if "cache" in a else "",
                    ir.StringAttr(a["evict"]).value if "evict" in a else "", "volatile" in a)
        return got if got != Hints() else None

    def instruction(self, op: str, read_only: bool = False) -> str:
        """`ld` or `st` with its qualifiers, up to the vector width and type."""
        if self.volatile:
            return f"{op}.volatile.global"
        nc = ".nc" if read_only and self.cache != ".cv" else ""  # (ld.global.nc has no .cv)
        l1 = f".L1::{self.evict}" if self.evict and not self.cache else ""
        return f"{op}.global{nc}{self.cache}{l1}{'.L2::cache_hint' if self.evict else ''}"

    def policy(self):
        """The L2 eviction policy register the `.L2::cache_hint` access takes (None: no hint)."""
        if not self.evict or self.volatile:
            return None
        return llvm.inline_asm(_I64(), [], f"createpolicy.fractional.L2::{self.evict}.b64 $0, 1.0;", "=l")


def load(address, pred, other_vec, w: int, elem, read_only: bool = False, hints: Hints | None = None, policy=None):
    """vector<w x elem> loaded from `address` where `pred` holds, else `other_vec`."""
    others = _words(other_vec, w, elem)
    n = len(others)
    outs = [f"${i}" for i in range(n)]
    p, a = f"${n}", f"${n + 1}"
    movs = "".join(f"mov.b32 ${i}, ${n + 2 + i};\n\t" for i in range(n))
    instruction, registers = _access((hints or Hints()).instruction("ld", read_only), outs)
    cache_policy = f", ${2 * n + 2}" if policy is not None else ""
    asm = f"{movs}@{p} {instruction} {registers}, [{a}]{cache_policy};"
    constraints = ",".join(["=r"] * n + ["b", "l"] + ["r"] * n + ["l"] * (policy is not None))
    res_ty = _I32() if n == 1 else ir.Type.parse("!llvm.struct<(" + ", ".join(["i32"] * n) + ")>")
    # Marked as having side effects: LLVM must not move a load it cannot see into across
    # the stores and barriers around it.
    operands = [pred, address, *others] + ([policy] if policy is not None else [])
    got = llvm.inline_asm(res_ty, operands, asm, constraints, has_side_effects=True)
    words = [got] if n == 1 else [llvm.ExtractValueOp(_I32(), got, [i]).result for i in range(n)]
    packed = vector.FromElementsOp(ir.VectorType.get([n], _I32()), words).result
    return vector.BitCastOp(ir.VectorType.get([w], elem), packed).result


def store(address, pred, vec, w: int, elem, hints: Hints | None = None, policy=None):
    """Store vector<w x elem> `vec` at `address` where `pred` holds."""
    words = _words(vec, w, elem)
    n = len(words)
    regs = [f"${2 + i}" for i in range(n)]
    instruction, registers = _access((hints or Hints()).instruction("st"), regs)
    cache_policy = f", ${2 + n}" if policy is not None else ""
    asm = f"@$0 {instruction} [$1], {registers}{cache_policy};"
    operands = [pred, address, *words] + ([policy] if policy is not None else [])
    llvm.inline_asm(None, operands, asm, ",".join(["b", "l"] + ["r"] * n + ["l"] * (policy is not None)),
                    has_side_effects=True)


# one element of a width no 32-bit word holds whole: (PTX type, register constraint, register bits)
_ONE = {8: ("u8", "h", 16), 16: ("b16", "h", 16), 32: ("b32", "r", 32), 64: ("b64", "l", 64)}


def _as_register(v, elem):
    bits = element_bits(elem)
    word = v if isinstance(elem, ir.IntegerType) else arith.bitcast(ir.IntegerType.get_signless(bits), v)
    return arith.extui(_I16(), word) if bits == 8 else word


def load_one(address, pred, other, elem, hints: Hints, policy=None):
    """One element loaded with `hints` from `address` where `pred` holds, else `other`."""
    kind, c, reg_bits = _ONE[element_bits(elem)]
    tail = ", $4" if policy is not None else ""
    asm = f"mov.b{reg_bits} $0, $3;\n\t@$1 {hints.instruction('ld')}.{kind} $0, [$2]{tail};"
    operands = [pred, address, _as_register(other, elem)] + ([policy] if policy is not None else [])
    got = llvm.inline_asm(ir.IntegerType.get_signless(reg_bits), operands, asm,
                          ",".join([f"=&{c}", "b", "l", c] + ["l"] * (policy is not None)), has_side_effects=True)
    bits = element_bits(elem)
    got = arith.trunci(ir.IntegerType.get_signless(8), got) if bits == 8 else got
    return got if isinstance(elem, ir.IntegerType) else arith.bitcast(elem, got)


def store_one(address, pred, value, elem, hints: Hints, policy=None):
    """One element stored with `hints` at `address` where `pred` holds."""
    kind, c, _ = _ONE[element_bits(elem)]
    tail = ", $3" if policy is not None else ""
    operands = [pred, address, _as_register(value, elem)] + ([policy] if policy is not None else [])
    llvm.inline_asm(None, operands, f"@$0 {hints.instruction('st')}.{kind} [$1], $2{tail};",
                    ",".join(["b", "l", c] + ["l"] * (policy is not None)), has_side_effects=True)
