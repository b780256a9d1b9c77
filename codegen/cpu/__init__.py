"""tile -> linalg -> loops -> LLVM: the CPU target's lowering and passes (the linalg lowering
also serves the GPU's `codegen=linalg`)."""
