"""The PTX ISA each GPU target is written in (LLVM's NVPTX `+ptxNN` feature), shared by the
nvvm stage's `nvvm-attach-target` (`pipelines.py`) and the PTX printer (`ptx.py`). No MLIR
here: the runtime keys its caches by the pipelines that name these.

8.1 on sm_90 for the vector `atom` of `distributed_atomic.py`."""

PTX_FEATURES = {"sm_80": "+ptx80", "sm_90": "+ptx81", "sm_90a": "+ptx81"}
