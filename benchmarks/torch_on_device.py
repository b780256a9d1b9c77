"""tile in real PyTorch programs, on a GPU: CUDA graphs, torch.compile, several devices.

1. CUDA graphs. Every example's main() runs on the GPU (checking itself against torch)
   while each tile launch it makes is recorded (kernel, grid, arguments). Each recorded
   launch is then replayed through a CUDA graph: its tensors' storages are copied into
   static buffers (views, aliasing and alignment kept), one warm-up launch, the launch
   captured in `torch.cuda.graph`, then twice: new values written into the float
   tensors of the same buffers, the graph replayed, and the result compared with an
   eager launch on a copy of the same inputs (which main() checked against torch).
2. torch.compile: a tile op (`tile.torch.op`) in a function compiled with fullgraph=True
   has no graph break and the right answer (aot_eager and inductor), a tiny model with
   layer_norm_backward.py's op trains with torch's gradients, compiled, and a block of the
   tile layer norm and attention ops (flash_attention_bwd.check_compiled) compiled with
   inductor matches eager torch, output and gradients.
3. Several GPUs (when there are): launches on cuda:1 tensors while cuda:0 is current, on
   a side stream of cuda:1, and the LaunchError of a launch mixing devices.
4. tile.testing: do_bench (against Triton's) and roofline of a vector add; tile.profile of
   it under Nsight Compute (DRAM GB/s within 5% of the GB/s its time gives), and
   tile.profile.compare's bar chart of three block sizes and torch's add ($OUT/vector_add_bars.*).

    TILE_CACHE_DIR=$PWD/.device/cache PYTHONPATH=$PWD/.device/src python3 .device/src/tile/benchmarks/torch_on_device.py
                                                         # on the GPU machine, after build_for_device.sh; --out for JSON
    python benchmarks/torch_on_device.py --compile-only  # without a GPU (TILE_TARGET=sm_90a,
                                                         # TILE_COMPILE_ONLY=1): the cubins it needs
"""


import argparse
import copy
import importlib
import json
import os
import sys
import time
import traceback

import torch

import tile

def _setup_path():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(tile.__file__)), "examples"))


# ---- recording the launches of the examples -------------------------------------------
class Recorder:
    """Wraps `Kernel.__getitem__` so that each `kernel[grid](*args, **kwargs)` is kept."""

    def __init__(self):
        self.launches = []

    def __enter__(self):
        self._original = original = tile.Kernel.__getitem__
        launches = self.launches

        def getitem(kernel, grid):
            launch = original(kernel, grid)

            def recorded(*args, **kwargs):
                launches.append((kernel, grid, args, kwargs))
                return launch(*args, **kwargs)

            return recorded

        tile.Kernel.__getitem__ = getitem
        return self

    def __exit__(self, *exc):
        tile.Kernel.__getitem__ = self._original


def clone_storages(values, storages=None):
    """`values` with each tensor (and tensor descriptor's tensor) a view of a copy of its storage:
    same offsets, sizes and strides; tensors sharing a storage share the copy."""
    storages = {} if storages is None else storages

    def one(v):
        if type(v).__name__ == "TensorDescriptor":
            d = copy.copy(v)
            d.base = one(v.base)
            return d
        if not isinstance(v, torch.Tensor):
            return v
        s = v.untyped_storage()
        key = (s.data_ptr(), v.device)
        if key not in storages:
            raw = torch.empty(s.nbytes(), dtype=torch.uint8, device=v.device)
            raw.copy_(torch.empty(0, dtype=torch.uint8, device=v.device).set_(s))
            storages[key] = raw.untyped_storage()
        return torch.empty(0, dtype=v.dtype, device=v.device).set_(storages[key], v.storage_offset(), v.shape, v.stride())

    return [one(v) for v in values], storages


def _tensors(values):
    out = []
    for v in values:
        v = v.base if type(v).__name__ == "TensorDescriptor" else v
        if hasattr(v, "data_ptr"):
            out.append(v)
    return out


def refill(values, generator):
    """New values in the float tensors (the integer ones are often indices: kept)."""
    for t in _tensors(values):
        if t.dtype.is_floating_point and t.numel():
            t.copy_(torch.randn(t.shape, generator=generator, device=t.device).to(t.dtype))


def check_graph(kernel, grid, args, kwargs, compile_only: bool) -> str:
    """Capture one recorded launch in a CUDA graph and replay it with new inputs against eager launches."""
    flat = list(args) + list(kwargs.values())
    static, _ = clone_storages(flat)
    s_args, s_kwargs = static[:len(args)], dict(zip(kwargs, static[len(args):]))
    if compile_only:
        kernel[grid](*s_args, **s_kwargs)  # (compiles the specialization the graph launches)
        return "compiled"
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up, off the default stream (torch's pattern)
        kernel[grid](*s_args, **s_kwargs)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel[grid](*s_args, **s_kwargs)
    gen = torch.Generator(device=next((t.device for t in _tensors(static)), "cuda")).manual_seed(7)
    for round_ in range(2):
        refill(static, gen)
        fresh, _ = clone_storages(static)
        graph.replay()
        kernel[grid](*fresh[:len(args)], **dict(zip(kwargs, fresh[len(args):])))
        torch.cuda.synchronize()
        for i, (a, b) in enumerate(zip(_tensors(static), _tensors(fresh))):
            if a.dtype.is_floating_point:
                torch.testing.assert_close(a.float(), b.float(), rtol=1e-3, atol=1e-3, equal_nan=True,
                                           msg=lambda m: f"round {round_}, tensor {i}: {m}")
            elif not torch.equal(a, b) and not torch.equal(a.flatten().long().sort()[0], b.flatten().long().sort()[0]):
                # (the same values in another order pass: histogram's ranks follow its atomics' order)
                raise AssertionError(f"round {round_}, tensor {i}: graph replay differs from the eager launch")
    return "ok"


def run_graphs(device: str, compile_only: bool, names) -> list:
    from seeds import SEEDS

    results = []
    for name in names or [*SEEDS, "layer_norm_backward"]:
        mod = importlib.import_module(name)
        with Recorder() as rec:
            try:
                mod.main(device=device)
            except AssertionError:
                if not compile_only:  # (compile-only launches write nothing: its checks fail)
                    raise
        seen = set()
        for kernel, grid, args, kwargs in rec.launches:
            key = (kernel.name, str(grid), tuple((getattr(a, "dtype", type(a)), getattr(a, "shape", a)) for a in args),
                   tuple(sorted((k, str(v)) for k, v in kwargs.items())))
            if key in seen:
                continue
            seen.add(key)
            t0 = time.perf_counter()
            try:
                status, detail = check_graph(kernel, grid, args, kwargs, compile_only), ""
            except Exception as e:  # noqa: BLE001  (report every launch)
                status, detail = "FAIL", "".join(traceback.format_exception_only(type(e), e)).strip()[:1500]
            results.append({"part": "graph", "example": name, "kernel": kernel.name, "status": status,
                            "seconds": round(time.perf_counter() - t0, 2), "detail": detail})
            print(f"graph    {name:20s} {kernel.name:32s} {status:8s} {detail[:300]}", flush=True)
    return results


# ---- torch.compile --------------------------------------------------------------------
@tile.kernel
def axpy_kernel(x, y, out, alpha, n, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    tile.store(out + offs, alpha * tile.load(x + offs, mask=mask) + tile.load(y + offs, mask=mask), mask=mask)


@tile.torch.op("tile_device::axpy", mutates_args=())
def axpy(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    axpy_kernel[(tile.cdiv(x.numel(), 256),)](x, y, out, alpha, x.numel(), BLOCK=256)
    return out


def run_compile(device: str, compile_only: bool) -> list:
    from layer_norm_backward import layer_norm_op

    def model(x, y, w, b):
        return layer_norm_op(torch.relu(axpy(x, y, 2.0)), w, b, 1e-5) * 3

    def reference(x, y, w, b):
        return torch.nn.functional.layer_norm(torch.relu(2 * x + y), (x.shape[1],), w, b, 1e-5) * 3

    results = []

    def report(what, fn):
        try:
            status, detail = fn() or "ok", ""
        except Exception as e:  # noqa: BLE001
            status, detail = "FAIL", "".join(traceback.format_exception_only(type(e), e)).strip()[:1500]
        results.append({"part": "compile", "check": what, "status": status, "detail": detail})
        print(f"compile  {what:40s} {status:8s} {detail[:300]}", flush=True)

    torch.manual_seed(0)
    x, y = torch.randn(64, 300, device=device), torch.randn(64, 300, device=device)
    w, b = torch.randn(300, device=device), torch.randn(300, device=device)
    if compile_only:
        report("eager (compiles the kernels)", lambda: model(x, y, w, b) is not None and "compiled")
        from layer_norm_backward import layer_norm_backward

        report("backward kernel", lambda: layer_norm_backward(x, w, torch.randn_like(x)) and "compiled")
        from flash_attention_bwd import check_compiled

        report("layer norm + attention block", lambda: check_compiled("cpu", dtype=torch.float16) or "compiled")
        return results

    def explain():
        e = torch._dynamo.explain(model)(x, y, w, b)
        assert e.graph_break_count == 0 and e.graph_count == 1, str(e)

    report("fullgraph: no graph break", explain)
    for backend in ("aot_eager", "inductor"):
        def compiled(backend=backend):
            torch._dynamo.reset()
            f = torch.compile(model, backend=backend, fullgraph=True)
            for _ in range(2):
                x.normal_()
                torch.testing.assert_close(f(x, y, w, b), reference(x, y, w, b), rtol=1e-4, atol=1e-4)

        report(f"fullgraph {backend}: matches torch", compiled)

    def train():
        torch._dynamo.reset()
        lin = torch.nn.Linear(300, 300, device=device)
        ref = copy.deepcopy(lin)
        ww, bb = torch.ones(300, device=device, requires_grad=True), torch.zeros(300, device=device, requires_grad=True)
        rw, rb = ww.detach().clone().requires_grad_(), bb.detach().clone().requires_grad_()
        step = torch.compile(lambda inp: layer_norm_op(lin(inp), ww, bb, 1e-5).square().mean(), backend="aot_eager",
                             fullgraph=True)
        losses = []
        for _ in range(5):
            loss = step(x)
            loss.backward()
            ref_loss = torch.nn.functional.layer_norm(ref(x), (300,), rw, rb, 1e-5).square().mean()
            ref_loss.backward()
            for p, q in ((lin.weight, ref.weight), (ww, rw), (bb, rb)):
                torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-4)
            with torch.no_grad():
                for p in (*lin.parameters(), ww, bb, *ref.parameters(), rw, rb):
                    p -= 0.1 * p.grad
                    p.grad = None
            losses.append(loss.item())
        assert losses[-1] < losses[0], losses

    report("training (aot_eager): torch's gradients", train)

    def block():
        from flash_attention_bwd import check_compiled

        check_compiled(device, backend="inductor")

    report("layer norm + attention (inductor)", block)
    return results


# ---- several devices ------------------------------------------------------------------
def run_devices(compile_only: bool) -> list:
    from vector_add import add_kernel

    if compile_only or torch.cuda.device_count() < 2:
        return []
    results = []

    def report(what, fn):
        try:
            fn()
            status, detail = "ok", ""
        except Exception as e:  # noqa: BLE001
            status, detail = "FAIL", "".join(traceback.format_exception_only(type(e), e)).strip()[:1500]
        results.append({"part": "devices", "check": what, "status": status, "detail": detail})
        print(f"devices  {what:40s} {status:8s} {detail[:300]}", flush=True)

    n = 10_000

    def on(dev):
        x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
        out = torch.empty(n, device=dev)
        add_kernel[(tile.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        torch.cuda.synchronize(dev)
        torch.testing.assert_close(out, x + y)

    def current_other():
        with torch.cuda.device(0):
            on("cuda:1")
            on("cuda:0")
        with torch.cuda.device(1):
            on("cuda:0")

    def side_stream():
        s = torch.cuda.Stream(device="cuda:1")
        x = torch.randn(n, device="cuda:1")
        out = torch.empty(n, device="cuda:1")
        with torch.cuda.stream(s):
            for _ in range(50):  # (long enough to still run when the event is recorded)
                add_kernel[(tile.cdiv(n, 1024),)](x, x, out, n, BLOCK=1024)
            done = torch.cuda.Event()
            done.record(s)
        done.synchronize()
        torch.testing.assert_close(out, 2 * x)

    def mixed():
        x, y, out = torch.randn(n, device="cuda:0"), torch.randn(n, device="cuda:1"), torch.empty(n, device="cuda:0")
        try:
            add_kernel[(tile.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        except tile.LaunchError as e:
            assert "different devices" in str(e), e
        else:
            raise AssertionError("no LaunchError for tensors on two devices")

    report("cuda:1 tensors, cuda:0 current", current_other)
    report("a side stream of cuda:1", side_stream)
    report("mixed devices: LaunchError", mixed)
    return results


# ---- tile.testing ------------------------------------------------------------------------
def run_timing(compile_only: bool, out_dir: str | None) -> list:
    """do_bench and roofline on the GPU: a vector add's time (against Triton's do_bench, where
    Triton is installed) and its share of the copy ceiling; tile.profile with ncu, and the bars."""
    from vector_add import add, add_kernel

    n = 1 << 26
    if compile_only:  # (the launches the timings make: compiled here, for the GPU machine's cache)
        x, y, out = (torch.empty(n, device="meta") for _ in range(3))  # (three: noalias is specialized)
        for block in (128, 1024, 4096):
            add_kernel[(tile.cdiv(n, block),)](x, y, out, n, BLOCK=block)
        return []
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    results = []

    def report(what, fn):
        """fn() returns the check's detail; an exception fails it."""
        try:
            status, detail = "ok", fn()
        except Exception as e:  # noqa: BLE001
            status, detail = "FAIL", "".join(traceback.format_exception_only(type(e), e)).strip()[:1500]
        results.append({"part": "timing", "check": what, "status": status, "detail": detail})
        print(f"timing   {what:40s} {status:8s} {detail[:300]}", flush=True)

    def bench():
        ms = tile.testing.do_bench(lambda: add(x, y))
        r = tile.testing.roofline(ms, bytes=3 * 4 * n)
        detail = f"vector add of 2**26 floats: {r}"
        try:
            import triton.testing

            theirs = triton.testing.do_bench(lambda: add(x, y))
            detail += f"; triton.testing.do_bench {theirs * 1e3:.1f} us"
            assert 0.7 < ms / theirs < 1.4, (ms, theirs)
        except ImportError:
            pass
        assert 0.3 < r.bandwidth_fraction < 1.3, str(r)
        return detail

    def under_ncu():
        p = tile.profile(add_kernel, (tile.cdiv(n, 1024),), x, y, out, n, BLOCK=1024, bytes=3 * 4 * n, ncu=True)
        torch.testing.assert_close(out, x + y)
        ratio = p.ncu["dram_gbps"] / p.gbps
        detail = f"{p}; ncu DRAM {p.ncu['dram_gbps']:.0f} GB/s over do_bench's {p.gbps:.0f}: {ratio:.3f}"
        assert abs(ratio - 1) <= 0.05, detail
        return detail

    def bars():
        profiles = {f"tile BLOCK={block}": tile.profile(add_kernel, (tile.cdiv(n, block),), x, y, out, n, BLOCK=block,
                                                        bytes=3 * 4 * n) for block in (128, 1024, 4096)}
        torch_ms = tile.testing.do_bench(lambda: torch.add(x, y, out=out), return_mode="median")
        profiles["torch.add"] = tile.profile.Profile("torch.add", torch_ms, tile.testing.roofline(torch_ms, bytes=3 * 4 * n))
        path = tile.profile.compare(profiles, os.path.join(out_dir or ".", "vector_add_bars.png"),
                                    title="vector add, 2**26 floats: GB/s (line: copy ceiling)")
        return f"{path}: " + "; ".join(f"{k} {v.gbps:.0f} GB/s" for k, v in profiles.items())

    report("do_bench + roofline", bench)
    report("tile.profile ncu: DRAM within 5%", under_ncu)
    report("tile.profile.compare: bars", bars)
    return results


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--out", default=os.environ.get("OUT"), help="folder for torch_on_device.json")
    ap.add_argument("names", nargs="*", help="examples (default: all)")
    args = ap.parse_args()
    if args.compile_only:
        os.environ.setdefault("TILE_TARGET", "sm_90a")
        os.environ["TILE_COMPILE_ONLY"] = "1"
        # Outputs are never written in a compile-only run: skip the examples' checks so that
        # every launch is made (and compiled), as run_examples.py does.
        torch.testing.assert_close = lambda *a, **k: None
    _setup_path()
    device = "cpu" if args.compile_only else "cuda"
    results = run_graphs(device, args.compile_only, args.names)
    if not args.names:
        results += run_compile(device, args.compile_only) + run_devices(args.compile_only) + run_timing(args.compile_only, args.out)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        record = {"device": "compile-only" if args.compile_only else torch.cuda.get_device_name(), "torch": torch.__version__,
                  "results": results}
        with open(os.path.join(args.out, "torch_on_device.json"), "w") as f:
            json.dump(record, f, indent=1)
    failed = [r for r in results if r["status"] == "FAIL"]
    print(f"{len(results) - len(failed)} of {len(results)} passed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
