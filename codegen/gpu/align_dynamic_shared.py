"""`align-dynamic-shared`: raise the alignment of the dynamic shared memory global,
and declare it `extern`.

Our own pass (upstream's `gpu.dynamic_shared_memory` lowering always declares
16 bytes). The 128-byte swizzle that wgmma and `ldmatrix` tiles use repeats
every 1024 bytes of the shared address, so the buffers inside the dynamic
shared memory line up with it only if its start does; ptxas then places it so.

Upstream declares the global `internal`, which the NVPTX backend prints as a
one-byte static variable (`.shared .align 16 .b8 __dynamic_shmem__0;`): a
kernel with exactly 48 KB of dynamic shared memory then needs 48 KB + 1 and
failed to launch (CUDA_ERROR_INVALID_VALUE) without the opt-in past 48 KB.
Declared `external`, it is PTX's `.extern .shared ... []`, the dynamic
shared memory itself, and takes no static bytes.

    # before
    llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
    # after
    llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ...passes.registry import register_pass
from ...passes.walk import collect


@register_pass("align-dynamic-shared")
@dataclass
class AlignDynamicShared:
    alignment: int = 1024

    def run(self, module_op):
        i64 = ir.IntegerType.get_signless(64)
        for op in collect(module_op, {"llvm.mlir.global"}):
            space = op.attributes["addr_space"] if "addr_space" in op.attributes else None
            if space is not None and ir.IntegerAttr(space).value == 3 and ir.StringAttr(op.attributes["sym_name"]).value.startswith("__dynamic_shmem"):
                op.attributes["alignment"] = ir.IntegerAttr.get(i64, self.alignment)
                op.attributes["linkage"] = ir.Attribute.parse("#llvm.linkage<external>")
