"""Moving a tile between layouts through a swizzled shared tile (methods of the
GPU `Translator`): `stage` writes every register of a tile into a `SharedTile`,
with vector stores along its rows where the layout gives a thread consecutive
elements; `op_tile_convert_layout` stages a tile that cannot be recomputed in
its new layout, then reads it back in that layout, again with vector loads.

The case it is for is the epilogue of a matmul: in the tensor-core layouts a
thread holds pairs of consecutive columns, so a bf16 accumulator goes to global
memory as 4-byte stores, a warp writing 16 bytes of each of 8 rows per
instruction. Converted to a `#tile.blocked` layout of 16 bytes per thread
(`tile-assign-layouts` asks for it), each warp writes whole rows:

    bar.sync                                  ; earlier readers of the scratch are done
    st.shared.b32   [swizzled (row, 2t)], pair         (per register pair)
    bar.sync
    ld.shared.v4.b32 {...}, [swizzled (row, 8c)]       (per 16-byte run)

The swizzle (16-byte units XOR-ed by the row, `SharedTile`) keeps both sides
free of bank conflicts. Without a dot the same path serves any 2-D tile of 16-
or 32-bit elements; other conversions go element by element (`Translator.exchange`).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import gpu, memref, vector

from ..dialects.layout import element_bits as bits
from .convert_tile_to_linalg import to_index
from .distributed_async_copy import SharedTile
from .distributed_layout import MmaDistribution
from .register_vectors import elements, from_elements, i32


def _run(dist, unit: int) -> int:
    """Registers per vector access along the last dim: consecutive elements a thread
    holds in consecutive registers, at most a 16-byte unit, a power of two."""
    if isinstance(dist, MmaDistribution):
        w = dist.vector_width
    elif dist.layout.order[0] == dist.rank - 1:
        w = 1 << (max(min(dist.vector_width, unit), 1).bit_length() - 1)
        while w > 1 and dist.layout.size_per_thread[-1] % w:
            w //= 2
    else:
        w = 1
    return min(w, unit)


def _accesses(self, dist, tile: SharedTile):
    """(first register, width, element index in the tile's buffer) of each access."""
    n = dist.num_registers
    rows, cols = (elements(c, n) for c in self.coords(dist))
    w = _run(dist, tile.unit)
    return [(r, w, to_index(tile.offset(rows[r], cols[r]))) for r in range(0, n, w)]


def stage(self, value, tile: SharedTile):
    """Every register of a 2-D tile into the shared tile (swizzled); vector stores along rows where possible."""
    dist = self.dist(value)
    vals = elements(self.value(value), dist.num_registers)
    for r, w, at in _accesses(self, dist, tile):
        if w == 1:
            memref.StoreOp(vals[r], tile.buf, [at])
        else:
            vector.StoreOp(from_elements(vals[r : r + w], tile.elem), tile.buf, [at], alignment=w * bits(tile.elem) // 8)


def _fits(t: ir.RankedTensorType) -> bool:
    return t.rank == 2 and bits(t.element_type) in (16, 32) and t.shape[1] * bits(t.element_type) >= 128


def op_tile_convert_layout(self, op):
    src = op.operands[0]
    t = ir.RankedTensorType(src.type)
    if self.rematerializable(src) or not _fits(t):
        return self._remat_own(op)
    rows, cols = t.shape
    tile = SharedTile(self.scratch(t.element_type, rows * cols, align=1024), i32(0), rows, cols, t.element_type)
    gpu.barrier()
    stage(self, src, tile)
    gpu.barrier()
    dist = self.dist(op.results[0])
    out = []
    for _, w, at in _accesses(self, dist, tile):
        if w == 1:
            out.append(memref.LoadOp(tile.buf, [at]).result)
        else:
            vty = ir.VectorType.get([w], t.element_type)
            out.extend(elements(vector.LoadOp(vty, tile.buf, [at], alignment=w * bits(t.element_type) // 8).result, w))
    self.map[op.results[0]] = from_elements(out, t.element_type)
