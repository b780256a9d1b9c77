"""Codegen: lowering from the tile dialect through linalg/gpu/nvvm to LLVM IR, PTX and cubin (or CPU code).

The driver is here (`build.py`: kernel -> IR -> stages; `compiler.py`: the stages;
`pipelines.py`: each stage's passes; `pass_pipeline.py`: `tile.Pipeline` edits of them);
the lowerings are in `cpu/` (tile -> linalg), `gpu/` (tile -> gpu, distributed),
`common/` (what both share) and `backend/` (LLVM IR -> PTX -> cubin)."""
