"""Host-side cost of launching a cached kernel: tile vs Triton, on the GPU.

Times many back-to-back launches of a tiny vector add (so the GPU is never
the bottleneck) with a wall clock, synchronizing only at the end, and reports
microseconds per launch. Run by bench_on_device.sh; with --compile-only it
just fills the cache (on the CPU machine).
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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--out", default=os.environ.get("OUT"))
    args = ap.parse_args()
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
