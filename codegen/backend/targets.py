"""The PTX ISA each GPU target is written in (LLVM's NVPTX `+ptxNN` feature), shared by the
nvvm stage's `nvvm-attach-target` (`pipelines.py`) and the PTX printer (`ptx.py`). No MLIR
here: the runtime keys its caches by the pipelines that name these.

8.1 on sm_90 for the vector `atom` of `distributed_atomic.py`."""

PTX_FEATURES = {"sm_80": "+ptx80", "sm_90": "+ptx81", "sm_90a": "+ptx81"}

# LLVM's NVPTX data layout (nvptx64's target machine reports it for each target above). The
# LLVM IR is translated under it: LLVM's default layout aligns i64 to 4 bytes, so an i64 load
# without an alignment of its own (a scalar `tile.load` of an int64 label) would get `align 4`
# and NVPTX would split it into two `ld.global.b32`.
NVPTX64_DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
