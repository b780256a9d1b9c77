"""Codegen: lowering from the tile dialect through linalg/gpu/nvvm to LLVM IR, PTX and cubin (or CPU code)."""
