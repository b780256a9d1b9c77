"""`tile-column-loads`: a 2-D load or store whose offsets step by one element down the
columns (dim 0) and by a stride along the rows becomes the transpose of a load (store) of
its transposed offsets, whose last dim is the contiguous one:

    # before: k^T's block read as fla reads k, `o_k[:, None] + o_t[None, :] * HK` (K contiguous)
    %k = "tile.load"(%K, %offs, %mask, %zero) : (...) -> tensor<64x32xbf16>
    # after
    %kt = "tile.load"(%K, %offs_t, %mask_t, %zero_t) : (...) -> tensor<32x64xbf16>
    %k = "tile.trans"(%kt) {permutation = array<i32: 1, 0>} : (...) -> tensor<64x32xbf16>

    # before: a tile stored column-major
    "tile.store"(%Y, %offs, %v, %mask)
    # after
    %vt = "tile.trans"(%v) {permutation = array<i32: 1, 0>}
    "tile.store"(%Y, %offs_t, %vt, %mask_t)

Why: the GPU layouts put a thread's consecutive elements along the last dim, so such a tile
went one element per access (32 scalar `ld.global.b16` a thread for 64 x 64 bf16, a sector
a lane), where its transpose is loaded 16 bytes at a time and reaches the layout its users
want through shared memory (the transpose). Triton's coalescing does the same with a
blocked layout in the column order and a layout conversion. The offsets, mask and `other`
are index values, rebuilt transposed by `tile-trans-loads`' `transposed`.

Not here: a dot operand in a loop, which `tile-pipeline` copies transposed into its ring
(`transposed_copies.py`) or `tile-k-major-loads` already rewrote. A transposed load that a 16-bit dot
in a loop reads alone, as its A or B, marks the dot (`m_major_a`, `k_major_b`): it reads the
load's ring slot in place. Kernel arguments the launch found multiples of 16 (`divisible-args`)
let `x % M` keep its runs. Our own pass: upstream
has no tile loads.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..dialects import tile_ops
from ..dialects.layout import element_bits
from .axis_info import AxisInfo, argument_divisibility
from .fp8_dots import column_major_load, is_fp8_dot, is_int8_dot
from .index_values import is_elementwise
from .registry import register_pass
from .tile_fuse import K_MAJOR_B, M_MAJOR_A
from .tile_trans_loads import transposed, transposed_load
from .walk import collect, in_loop


def _two_d(data) -> bool:
    """A 2-D tile of 8- to 32-bit elements, neither dim 1 (not bools: those go a byte at a time either way)."""
    if not isinstance(data.type, ir.RankedTensorType):
        return False  # (a scalar access)
    t = ir.RankedTensorType(data.type)
    return (t.rank == 2 and min(t.shape) > 1  # (an R x 1 column is a vector: its layout is the rows')
            and 8 <= element_bits(t.element_type) <= 32 and str(t.element_type) != "i1")


def _dots_reading(v, depth: int = 0) -> list:
    """The dots that read v, directly or through transposes and elementwise ops (a conversion:
    a float8 weight widened for a 16-bit dot)."""
    out = []
    for use in v.uses:
        op = use.owner
        if op.name == "tile.dot":
            out.append(op)
        elif depth < 3 and (op.name == "tile.trans" or is_elementwise(op)) and len(op.results) == 1:
            out += _dots_reading(op.results[0], depth + 1)
    return out


def _left_to_the_dots(load) -> bool:
    """Whether a dot in a loop reads the load where `tile-pipeline` copies it transposed (a
    column-major block), or an 8-bit dot does (`tile-fp8-dots` lays those out)."""
    dots = _dots_reading(load.results[0])
    return bool(dots) and in_loop(load) and (column_major_load(load.results[0])
                                              or any(is_fp8_dot(d) or is_int8_dot(d) for d in dots))


def _transposed_access(op, operands: list, axis: AxisInfo):
    """The access's offsets and the other index operands (mask, `other`) transposed, built before
    `op`, where axis analysis finds the offsets consecutive down dim 0 but not along the rows
    and the transposed offsets consecutive along their rows; else None (and nothing built)."""
    offsets = operands[0]
    if axis(offsets).contiguity > 1:
        return None
    memo: dict = {}
    with ir.InsertionPoint(op), op.location:
        out = [transposed(v, [1, 0], memo) for v in operands]
    if axis(out[0]).contiguity > 1:
        return out
    for v in reversed(list(memo.values())):  # (built children first: erased parents first)
        if not isinstance(v.owner, ir.Block) and not list(v.uses):
            v.owner.erase()
    return None


def _read_in_place(v) -> None:
    """Mark the dot that alone reads v, a transpose of a row-major load, where it is a 16-bit
    dot in a loop: as its B (`k_major_b`, as `tile-k-major-loads` marks the B it transposes)
    or its A (`m_major_a`); it then reads the load's ring slot in place (wgmma's descriptors,
    ldmatrix). Without the mark the transpose went from its ring slot to registers and
    through shared memory again, a step: a paged cache's K^T in vLLM's prefix-prefill at head
    dim 128, 255 registers and spills (209 with it); A = X.T in a GEMM, 196 registers (the
    column-major A's, 122 as Triton's)."""
    users = list(v.uses)
    if len(users) != 1 or users[0].owner.name != "tile.dot" or users[0].operand_number not in (0, 1):
        return
    dot = users[0].owner
    if not is_fp8_dot(dot) and element_bits(ir.RankedTensorType(v.type).element_type) == 16 and in_loop(dot):
        dot.attributes[M_MAJOR_A if users[0].operand_number == 0 else K_MAJOR_B] = ir.UnitAttr.get()


def load_transposed(load, axis: AxisInfo) -> None:
    """load(offsets, mask, other) -> trans(load(offsets^T, mask^T, other^T)), where it pays."""
    got = _transposed_access(load, list(load.operands)[1:], axis)
    if got is None:
        return
    back = transposed_load(load, got)
    load.results[0].replace_all_uses_with(back)
    load.erase()
    _read_in_place(back)


def store_transposed(store, axis: AxisInfo) -> None:
    """store(offsets, value, mask) -> store(offsets^T, trans(value), mask^T), where it pays."""
    base, offsets, value, mask = store.operands
    got = _transposed_access(store, [offsets, mask], axis)
    if got is None:
        return
    with ir.InsertionPoint(store), store.location:
        stored = tile_ops.store(base, got[0], tile_ops.trans(value, [1, 0]), got[1])
    for name in store.attributes:
        stored.attributes[name] = store.attributes[name]
    store.erase()


@register_pass("tile-column-loads")
@dataclass
class TileColumnLoads:
    divisible_args: str = ""  # kernel arguments known 16-byte aligned (tensors) or multiples of 16 (ints)

    def run(self, module_op):
        # (Kernel arguments the launch found multiples of 16: `(pid * BM + arange(BM)) % M` keeps runs
        # of 16 only where M is one, the tutorial GEMM's wrapped rows down dim 0 of a column-major A.)
        divisible = {}
        for fn in collect(module_op, ("func.func",)):
            divisible.update(argument_divisibility(fn, self.divisible_args))
        axis = AxisInfo(divisible)
        for op in collect(module_op, ("tile.load", "tile.store")):
            if op.name == "tile.load" and _two_d(op.results[0]) and list(op.results[0].uses) \
                    and not _left_to_the_dots(op):
                load_transposed(op, axis)
            elif op.name == "tile.store" and _two_d(op.operands[2]):
                store_transposed(op, axis)
