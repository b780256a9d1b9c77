"""Host-side cost of launching a cached kernel: tile vs Triton, on the GPU.

Times many back-to-back launches of a tiny vector add (so the GPU is never
the bottleneck) with a wall clock, synchronizing only at the end, and reports
microseconds per launch. Run by bench_on_device.sh; with --compile-only it
just fills the cache (on the CPU machine).

With --host-only (any machine, no GPU needed) it times only tile's Python side
of a launch: the kernel is built for sm_90, the arguments are CPU tensors that
pass for CUDA ones, torch's stream query is a C builtin, and cuLaunchKernel is
a native no-op (libc's labs, called through ctypes exactly as the driver would
be). That is the host cost tile adds on top of the driver, not a GPU measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

N, BLOCK, LAUNCHES = 1024, 1024, 5000


def per_launch_us(launch, sync) -> float:
    for _ in range(50):
        launch()
    sync()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(LAUNCHES):
            launch()
        sync()
        best = min(best, (time.perf_counter() - t0) / LAUNCHES * 1e6)
    return best


def stub_driver() -> dict:
    """Fake just the device: the driver's entry points become native no-ops, CPU tensors
    pass the once-per-signature device check, the current stream is 0. Everything tile does
    per launch (binding, specialization key, parameter slots, the ctypes call) runs as is."""
    import contextlib
    import ctypes
    import ctypes.util

    from tile.runtime import arguments, cuda_driver, cuda_launcher

    libc = ctypes.CDLL(ctypes.util.find_library("c"))

    class NoOpLib:
        """labs(0) == 0: a C function that ignores cuLaunchKernel's other arguments."""

        def __getitem__(self, name):
            return libc["labs"]

        def __getattr__(self, name):
            if name != "cuLaunchKernel":  # once per kernel, not per launch: success, nothing written
                return lambda *args: 0
            fn = libc["labs"]
            fn.argtypes, fn.restype = cuda_driver._SIGNATURES[name], ctypes.c_int
            setattr(self, name, fn)
            return fn

    class NoModule:
        def __init__(self, image, device=None):
            pass

        def function(self, name):
            return cuda_driver.Function(0, self)  # handle 0: labs(NULL) returns 0

    cuda_driver._lib, cuda_driver._initialized = NoOpLib(), True
    cuda_driver.available = lambda: True
    cuda_driver.Module = NoModule
    cuda_driver.on_device = lambda device: contextlib.nullcontext()  # (one device, its context current)
    cuda_driver.ensure_context = lambda ordinal=0: 1
    cuda_launcher._getters = (abs, int)  # torch's raw-stream and device queries: one C call each, like these
    check_tensor = arguments.check_tensor
    arguments.check_tensor = lambda name, t, want_cuda: check_tensor(name, t, False)
    os.environ["TILE_TARGET"] = "sm_90"
    fn = libc["labs"]
    fn.restype = ctypes.c_int
    argv, h = (ctypes.c_void_p * 16)(), ctypes.c_void_p(0)
    call = lambda: fn(h, 1, 1, 1, 128, 1, 1, 0, h, argv, None)  # noqa: E731
    return {"ctypes_call_us": per_launch_us(call, lambda: None)}


def host_only(out_dir) -> int:
    floor = stub_driver()
    import torch

    import tile

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(tile.__file__)), "examples"))
    from vector_add import add_kernel

    x, y, out = (torch.rand(N) for _ in range(3))
    results = {
        "what": "tile's Python-side cost per launch, driver call stubbed with a native no-op, CPU tensors: NOT a GPU measurement",
        "tile_host_us": per_launch_us(lambda: add_kernel[(1,)](x, y, out, N, BLOCK=BLOCK), lambda: None),
        "of_which_bare_ctypes_call_us": floor["ctypes_call_us"],
    }
    print(json.dumps(results))
    if out_dir:
        with open(os.path.join(out_dir, "launch_overhead_host_only.json"), "w") as f:
            json.dump(results, f, indent=1)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--host-only", action="store_true", help="time tile's host side with the driver stubbed out (no GPU)")
    ap.add_argument("--out", default=os.environ.get("OUT"))
    args = ap.parse_args()
    if args.host_only:
        return host_only(args.out)
    import torch

    import tile

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(tile.__file__)), "examples"))
    from vector_add import add_kernel

    device = "meta" if args.compile_only else "cuda"
    x, y, out = (torch.rand(N, device=device) if device == "cuda" else torch.empty(N, device=device) for _ in range(3))
    tile_launch = lambda: add_kernel[(1,)](x, y, out, N, BLOCK=BLOCK)  # noqa: E731
    if args.compile_only:
        tile_launch()
        return 0
    results = {"tile_us": per_launch_us(tile_launch, torch.cuda.synchronize)}
    torch.testing.assert_close(out, x + y)
    try:
        import triton
        import triton.language as tl

        @triton.jit
        def triton_add(x, y, out, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

        results["triton_us"] = per_launch_us(lambda: triton_add[(1,)](x, y, out, N, BLOCK=BLOCK), torch.cuda.synchronize)
    except Exception as e:  # noqa: BLE001  (Triton is the comparison, not the subject)
        results["triton_error"] = repr(e)[:300]
    results["torch_add_us"] = per_launch_us(lambda: torch.add(x, y, out=out), torch.cuda.synchronize)
    print(json.dumps(results))
    if args.out:
        with open(os.path.join(args.out, "launch_overhead.json"), "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
