"""Launch one seed kernel's tile and Triton versions a few times each, for a profiler
(`ncu --clock-control none ... python3 benchmarks/profile_kernel.py layer_norm 32768 4096`)."""

from __future__ import annotations

import sys

import torch

import harness


def main() -> None:
    kernel, shape = sys.argv[1], tuple(int(s) for s in sys.argv[2:])
    case = next(c for c in harness.cases() if c["kernel"] == kernel and tuple(c["shape"]) == shape)
    inputs = harness.make_inputs(kernel, shape, getattr(torch, case["dtype"]), "cuda")
    tile_run, _ = harness.tile_impl(kernel, shape)
    triton_run, _ = harness.triton_impl(kernel, shape)
    for _ in range(3):
        tile_run(*inputs)
        triton_run(*inputs)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
