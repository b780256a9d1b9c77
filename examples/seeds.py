"""The seed examples, in the order the product takes them, then the examples beyond the seed
(atomics: split-K matmul, histogram; FlashAttention's backward and autograd wrapper; training
kernels written as Triton libraries write them: fused cross-entropy, RMSNorm backward; an FP8
GEMM on float8 tensor cores with per-tensor, row-wise and block scales; a serving library's
fused mixture-of-experts GEMM): the
tests run each one's main() on the CPU (tests/test_examples.py) and benchmarks/run_examples.py on a GPU."""

SEEDS = ["vector_add", "fused_softmax", "layer_norm", "add_relu_layernorm", "patch_gather", "matmul",
         "flash_attention", "paged_attention", "int4_matmul", "fp8_matmul",
         "split_k_matmul", "histogram", "flash_attention_bwd", "cross_entropy",
         "rms_norm_backward", "fp8_gemm", "fused_moe"]
