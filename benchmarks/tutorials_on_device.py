"""Triton's tutorials 03, 06, 08 and 09 on the GPU at their benchmark points: each port
(examples/triton_tutorials/) beside the same file with the rename reversed (Triton code,
`tests/as_triton.to_triton`), both through the port's own host code, so both autotune over the
tutorial's configs. Every output is checked against torch before it is timed; the two are then
launched in turn (`matmul_rounds.interleaved_launches`) and each point reports the median of
Triton's time over tile's (the issue's bar: >= 0.95).

    TILE_TARGET=sm_90a python3 benchmarks/tutorials_on_device.py --compile-only   # CPU machine
    python3 benchmarks/tutorials_on_device.py --out DIR [POINT ...]               # the GPU, that cache

--compile-only runs the host code on meta tensors as if on an H100 (132 SMs), so the ports pick
their CUDA configs and the autotuners compile every one into the cache. Run from the repository
root. A point's JSON is written as soon as it is measured.
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import sys
import tempfile

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PORTS = os.path.join(ROOT, "examples", "triton_tutorials")
# (tests/ from the working directory: a device build's snapshot of the package has none)
sys.path[:0] = [os.path.join(os.getcwd(), "tests"), os.path.dirname(os.path.abspath(__file__)), PORTS]

Z, H, N_CTX, HEAD_DIM = 4, 32, 4096, 128  # tutorial 06's benchmark point (fp16)


def load_port(name: str, triton: bool):
    """The port module, or its Triton twin (the rename reversed, imported from a temp file)."""
    path = os.path.join(PORTS, name + ".py")
    if triton:
        from as_triton import to_triton

        with open(path) as f:
            source = to_triton(f.read())
        path = os.path.join(tempfile.mkdtemp(), name + "_triton.py")
        with open(path, "w") as f:
            f.write(source)
        name += "_triton"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def pretend_h100():
    """torch.cuda as an H100 would answer the ports' host code (CUDA configs, 132 SMs), for
    --compile-only on a machine without one; tensors stay on 'meta'."""
    props = type("props", (), {"multi_processor_count": 132, "major": 9, "minor": 0})()
    torch.cuda.is_available = lambda: True
    torch.cuda.get_device_capability = lambda *a: (9, 0)
    torch.cuda.get_device_properties = lambda *a: props


def _attention_inputs(dev, grad: bool):
    """q, k, v as the tutorial makes them (normal, std 0.5)."""
    g = torch.Generator(device="cpu").manual_seed(20)
    qkv = [torch.empty(Z, H, N_CTX, HEAD_DIM, dtype=torch.float16).normal_(0.0, 0.5, generator=g).to(dev)
           for _ in range(3)]
    return [t.requires_grad_(grad) for t in qkv]


def points(dev: str):
    """name -> (port, flops, make, view, reference): make(module) gives the launch (returning
    its output), view(output) the float tensor checked against torch's `reference` (on meta,
    its shape only; the backward's None)."""
    meta = dev == "meta"
    g = torch.Generator(device="cpu").manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float16).to(dev)

    def flat(tensors):
        return torch.cat([t.float().flatten() for t in tensors])

    out = {}
    a, b = randn(4096, 4096), randn(4096, 4096)
    # (each launch binds its own inputs: tutorial 09's rebind a and b below)
    out["03 matmul fp16 4096^3"] = ("t03_matrix_multiplication", 2 * 4096**3, lambda m, a=a, b=b: lambda: m.matmul(a, b),
                                    torch.Tensor.float, a.float() @ b.float())
    sm_scale = 0.5
    for causal in (False, True):
        flops = 4 * Z * H * N_CTX * N_CTX * HEAD_DIM * (0.5 if causal else 1)
        suffix = " causal" if causal else ""
        q, k, v = _attention_inputs(dev, grad=False)
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm_scale).float()
        out["06 attention fwd fp16 B4 H32 N4096 D128" + suffix] = (
            "t06_fused_attention", flops,
            lambda m, q=q, k=k, v=v, causal=causal: lambda: m.attention(q, k, v, causal, sm_scale, False),
            torch.Tensor.float, ref)

        qkv = _attention_inputs(dev, grad=True)
        do = torch.randn(qkv[0].shape, generator=g, dtype=torch.float16).to(dev)
        grads = None
        if not meta:
            torch.nn.functional.scaled_dot_product_attention(*qkv, is_causal=causal, scale=sm_scale).backward(do)
            grads = flat(t.grad for t in qkv)

        def backward(m, qkv=qkv, do=do, causal=causal):
            o = m.attention(*qkv, causal, sm_scale, False)

            def launch():
                for t in qkv:
                    t.grad = None
                o.backward(do, retain_graph=True)
                return [t.grad for t in qkv]

            return launch

        out["06 attention bwd fp16 B4 H32 N4096 D128" + suffix] = ("t06_fused_attention", 2.5 * flops, backward, flat,
                                                                   grads)

    n = 1024  # tutorial 08's largest square point, 4 groups
    group_a, group_b = [randn(n, n) for _ in range(4)], [randn(n, n) for _ in range(4)]
    group_bt = [x.T.contiguous() for x in group_b]
    ref = flat(x.float() @ y.float() for x, y in zip(group_a, group_b))
    for label, fn, bs in (("pointers", "group_gemm_fn", group_b), ("descriptors", "group_gemm_tma_fn", group_bt)):
        out["08 grouped gemm fp16 4 x 1024^3 " + label] = (
            "t08_grouped_gemm", 4 * 2 * n**3, lambda m, fn=fn, bs=bs: lambda: getattr(m, fn)(group_a, bs), flat, ref)

    a, b = randn(8192, 8192), randn(8192, 8192)
    bt = b.T.contiguous()
    ref = a.float() @ b.float()
    for label, make in (("matmul", lambda m, a=a, b=b: lambda: m.matmul(a, b)),
                        ("persistent", lambda m, a=a, b=b: lambda: m.matmul_persistent(a, b)),
                        ("descriptor persistent",
                         lambda m, a=a, bt=bt: lambda: m.matmul_descriptor_persistent(a, bt, warp_specialize=False))):
        out[f"09 {label} fp16 8192^3"] = ("t09_persistent_matmul", 2 * 8192**3, make, torch.Tensor.float, ref)
    return out


def main() -> int:
    compile_only = "--compile-only" in sys.argv
    out_dir = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else None
    chosen = [x for x in sys.argv[1:] if not x.startswith("--") and x != out_dir]
    if compile_only:
        os.environ.setdefault("TILE_TARGET", "sm_90a")
        os.environ["TILE_COMPILE_ONLY"] = "1"
        pretend_h100()
    else:
        import triton

        # Tutorials 08 and 09 make descriptors in the kernel: Triton wants scratch for them.
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    dev = "meta" if compile_only else "cuda"
    modules, results, failed = {}, {}, []
    for name, (port, flops, make, view, want) in points(dev).items():
        if chosen and not any(name.startswith(c) for c in chosen):
            continue
        fns = {}
        for impl in (("tile",) if compile_only else ("tile", "triton")):
            if (port, impl) not in modules:
                modules[port, impl] = load_port(port, impl == "triton")
            try:
                launch = make(modules[port, impl])
                got = launch()  # the autotuner's search (on meta: every config compiled)
                if not compile_only:
                    torch.testing.assert_close(view(got), want, atol=0.15, rtol=1e-2)
                elif got is not None and want is not None and view(got).shape != want.shape:
                    raise AssertionError(f"output shape {list(view(got).shape)}, reference {list(want.shape)}")
                fns[impl] = launch
                print(f"{name} {impl}: {'compiled' if compile_only else 'matches torch'}", flush=True)
            except Exception as e:  # noqa: BLE001  (a failing point is a result; the others still run)
                failed.append(f"{name} {impl}")
                print(f"{name} {impl}: FAIL {type(e).__name__}: {str(e)[:1500]}", flush=True)
        if compile_only or len(fns) < 2:
            continue
        from matmul_rounds import interleaved_launches, ratio_summary

        steps = interleaved_launches(fns, (), launches=30)
        med = {k: statistics.median(t[k] for t in steps) for k in fns}
        results[name] = {"median_ms": med, "tflops": {k: flops / (ms * 1e-3) / 1e12 for k, ms in med.items()},
                         "triton_over_tile": ratio_summary(steps, "triton", "tile")}
        r = results[name]
        print(f"{name}: tile {r['tflops']['tile']:.0f} TFLOP/s, Triton {r['tflops']['triton']:.0f}, "
              f"ratio {r['triton_over_tile']['median']:.3f}x Triton", flush=True)
        if out_dir:
            os.makedirs(out_dir, exist_ok=True)
            with open(os.path.join(out_dir, "tutorials.json"), "w") as f:
                json.dump({"results": results, "failed": failed, "device": torch.cuda.get_device_name()}, f, indent=1)
    print(f"FAILED: {', '.join(failed)}" if failed else "every tutorial point compiled" if compile_only
          else "every tutorial point matches torch")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
