"""LLVM IR -> PTX -> cubin: MLIR's LLVM translation, llvmlite's NVPTX backend and ptxas."""
