"""Launch one seed kernel's tile and Triton versions a few times each, for a profiler
(`ncu --clock-control none ... python3 benchmarks/profile_kernel.py layer_norm 32768 4096`);
`--num-warps N` launches both with N warps instead of their defaults."""

from __future__ import annotations

import sys

import torch

import harness


def main() -> None:
    args = sys.argv[1:]
    warps = None
    if "--num-warps" in args:
        i = args.index("--num-warps")
        warps = int(args[i + 1])
        del args[i : i + 2]
    kernel, shape = args[0], tuple(int(s) for s in args[1:])
    case = next(c for c in harness.cases() if c["kernel"] == kernel and tuple(c["shape"]) == shape)
    inputs = harness.make_inputs(kernel, shape, getattr(torch, case["dtype"]), "cuda")
    tile_run, _ = harness.tile_impl(kernel, shape, warps)
    triton_run, _ = harness.triton_impl(kernel, shape, warps)
    for _ in range(3):
        tile_run(*inputs)
        triton_run(*inputs)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
