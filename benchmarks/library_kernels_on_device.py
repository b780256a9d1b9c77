"""examples/fused_moe.py on the GPU (a mixture-of-experts layer's expert GEMM: 4096 tokens, top-2
of 8 experts, N = K = 4096, fp16): checked against torch, then timed beside its Triton twin in
interleaved launches (matmul_rounds.py). The twin is the example's own kernel source renamed
`tile.` -> `tl.` (the rename a Triton user makes the other way), at the same config.

    python3 benchmarks/library_kernels_on_device.py --compile-only   # CPU machine: fills the cache (sm_90a)
    python3 benchmarks/library_kernels_on_device.py                  # a GPU; JSON to $OUT/library_kernels.json
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SHAPE = dict(M=4096, E=8, N=4096, K=4096, top_k=2)
LAUNCHES = 50


def triton_twin(module, names: list[str]):
    """The named `@tile.jit`/`@tile.kernel`/`@tile.func` functions of `module` (or ones it
    imports) and its module-level assignments (`LOG2E = tile.constexpr(...)`, annotated too), renamed to
    Triton and imported: helpers and constants before the kernels that use them."""
    text = inspect.getsource(module)
    assigned = {t.id: node for node in ast.parse(text).body if isinstance(node, (ast.Assign, ast.AnnAssign))
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)}
    source = "\n\n".join(ast.get_source_segment(text, assigned[n]) if n in assigned
                          else inspect.getsource(getattr(module, n).fn) for n in names)
    source = re.sub(r"@tile\.(jit|kernel|func)\b", "@triton.jit", source)
    source = re.sub(r"@tile\.(heuristics|autotune)\b", r"@triton.\1", source)
    source = re.sub(r"\btile\.", "tl.", source)
    path = os.path.join(tempfile.mkdtemp(), f"triton_{module.__name__}.py")
    with open(path, "w") as f:
        f.write("import triton\nimport triton.language as tl\n\n\n" + source)
    spec = importlib.util.spec_from_file_location(f"triton_{module.__name__}", path)
    twin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(twin)
    return twin


def moe_inputs(dev: str):
    """(a, w, topk_weights, topk_ids) at SHAPE, seeded."""
    import torch

    M, E, N, K, top_k = (SHAPE[k] for k in ("M", "E", "N", "K", "top_k"))
    g = torch.Generator().manual_seed(0)
    a = torch.randn(M, K, generator=g).half().to(dev)
    w = (torch.randn(E, N, K, generator=g) / K ** 0.5).half().to(dev)
    topk_ids = torch.stack([torch.randperm(E, generator=g)[:top_k] for _ in range(M)]).to(torch.int32).to(dev)
    topk_weights = torch.rand(M, top_k, generator=g).to(dev)
    return a, w, topk_weights, topk_ids


def moe_launchers(dev: str, inputs=None):
    """({"tile": launch, "triton": launch}, their outputs): the MoE kernel alone at fm.CONFIG,
    tile's and its Triton twin's (ncu_pair.py profiles them)."""
    import torch
    import triton.language as tl

    import fused_moe as fm
    import tile

    a, w, topk_weights, topk_ids = inputs or moe_inputs(dev)
    M, E, N, K, top_k = (SHAPE[k] for k in ("M", "E", "N", "K", "top_k"))
    twin = triton_twin(fm, ["write_zeros_to_output", "fused_moe_kernel"])
    ids, experts, padded = fm.moe_align_block_size(topk_ids, fm.CONFIG["BLOCK_SIZE_M"], E)
    outs = {k: torch.empty(M, top_k, N, dtype=a.dtype, device=dev) for k in ("tile", "triton")}
    grid = (-(-ids.numel() // fm.CONFIG["BLOCK_SIZE_M"]) * -(-N // fm.CONFIG["BLOCK_SIZE_N"]),)

    def launcher(kernel, c, compute_type):
        return lambda: kernel[grid](
            a, w, c, topk_weights, ids, experts, padded, N, K, ids.numel(), M * top_k,
            a.stride(0), a.stride(1), w.stride(0), w.stride(2), w.stride(1), c.stride(1), c.stride(2),
            MUL_ROUTED_WEIGHT=True, top_k=top_k, compute_type=compute_type, **fm.CONFIG)

    return {"tile": launcher(fm.fused_moe_kernel, outs["tile"], tile.float16),
            "triton": launcher(twin.fused_moe_kernel, outs["triton"], tl.float16)}, outs


def main() -> int:
    from device_checks import script_args

    args = script_args(LAUNCHES)
    import torch

    import fused_moe as fm

    dev = "cpu" if args.compile_only else "cuda"  # (the routing is computed in torch: real tensors)
    a, w, topk_weights, topk_ids = moe_inputs(dev)
    got = fm.fused_moe(a, w, topk_weights, topk_ids)
    if args.compile_only:
        return 0
    summary = {"shape": SHAPE, "dtype": "float16", "config": fm.CONFIG, "failed": []}
    want = fm.reference(a, w, topk_weights, topk_ids)
    err = (got.float() - want).abs().max().item()
    print(f"fused_moe: max abs error {err:.3g}")
    if not err < 5e-2:
        summary["failed"].append(f"fused_moe error {err}")

    from matmul_rounds import interleaved_launches, ratio_summary

    fns, outs = moe_launchers(dev, (a, w, topk_weights, topk_ids))
    M, top_k, N, K = (SHAPE[k] for k in ("M", "top_k", "N", "K"))
    for name, fn in fns.items():
        fn()
    torch.cuda.synchronize()
    for name, c in outs.items():
        e = (c.float() - want).abs().max().item()
        print(f"{name} at the benchmark config: max abs error {e:.3g}")
        if not e < 5e-2:
            summary["failed"].append(f"{name} error {e}")
    steps = interleaved_launches({k: (lambda f=f: f()) for k, f in fns.items()}, (), launches=args.launches)
    flop = 2 * M * top_k * N * K
    ms = {k: statistics.median(t[k] for t in steps) for k in fns}
    summary["timing"] = {k: {"median_ms": ms[k], "tflop_per_s": flop / ms[k] / 1e9} for k in fns}
    summary["triton_over_tile"] = ratio_summary(steps, "triton", "tile")
    print(json.dumps(summary, indent=1))
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "library_kernels.json"), "w") as f:
            json.dump(summary, f, indent=1)
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
