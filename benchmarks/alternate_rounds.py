"""tile against Triton at one harness point, timed in rounds that alternate which goes
first, at several placements of the inputs in memory: for differences of a few tenths
of a percent, which one order or one allocation can hide or fake.

On the GPU machine, with a cache built by build_for_device.sh (TILE_CACHE_DIR):
    python3 benchmarks/alternate_rounds.py layer_norm 16384 8192 --num-warps 8
Ahead of time (no GPU), to compile the tile kernel into the cache:
    TILE_TARGET=sm_90a TILE_COMPILE_ONLY=1 python benchmarks/alternate_rounds.py layer_norm 16384 8192 --num-warps 8
"""

from __future__ import annotations

import argparse
import os

import torch

import harness


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kernel")
    ap.add_argument("shape", type=int, nargs="+")
    ap.add_argument("--num-warps", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--placements", type=int, default=4, help="inputs allocated after 0, 1, ... pads of ~32 MB")
    ap.add_argument("--compile-only", action="store_true", help="as TILE_COMPILE_ONLY=1 (for build_ab.sh)")
    ap.add_argument("--out", help="also write the lines to OUT/alternate_rounds.log")
    args = ap.parse_args()
    shape = tuple(args.shape)
    case = next(c for c in harness.cases() if c["kernel"] == args.kernel and tuple(c["shape"]) == shape)
    dtype = getattr(torch, case["dtype"])
    tile_fn, _ = harness.tile_impl(args.kernel, shape, args.num_warps, {})
    if args.compile_only or os.environ.get("TILE_COMPILE_ONLY"):
        tile_fn(*harness.make_inputs(args.kernel, shape, dtype, "meta"))
        return
    triton_fn, _ = harness.triton_impl(args.kernel, shape, args.num_warps)
    nbytes = harness.nbytes(args.kernel, shape, dtype.itemsize)
    pads = []
    for place in range(args.placements):
        pads.append(torch.empty(place * 7919 * 4096 + 4096, dtype=torch.uint8, device="cuda"))  # shifts what follows
        inputs = harness.make_inputs(args.kernel, shape, dtype, "cuda")
        torch.testing.assert_close(tile_fn(*inputs), harness.reference(args.kernel, inputs), **harness.tolerance(args.kernel, case["dtype"]))
        ms = {"tile": [], "triton": []}
        for r in range(args.rounds):
            order = [("tile", tile_fn), ("triton", triton_fn)]
            for name, fn in order if r % 2 == 0 else order[::-1]:
                ms[name].append(harness.time_ms(lambda: fn(*inputs), torch.cuda.synchronize, seconds=0.25)[0])
        t, tr = min(ms["tile"]), min(ms["triton"])
        line = (f"placement {place}: tile {t * 1e3:.2f} us ({nbytes / t / 1e6:.0f} GB/s), Triton {tr * 1e3:.2f} us, "
                f"tile vs Triton {tr / t:.4f}; rounds tile {[round(x * 1e3, 2) for x in ms['tile']]} "
                f"Triton {[round(x * 1e3, 2) for x in ms['triton']]}")
        print(line, flush=True)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "alternate_rounds.log"), "a") as f:
                f.write(f"{args.kernel} {shape}: {line}\n")
        del inputs


if __name__ == "__main__":
    main()
