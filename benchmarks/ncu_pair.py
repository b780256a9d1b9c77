"""One kernel of a tile-against-Triton pair, launched once inside a profiler range, for
`ncu --profile-from-start off` (ncu_pairs_on_device.sh): warm-up (Triton's autotuning, tile's
first launch) happens before the range, so the report holds the timed kernel alone.

    python3 benchmarks/ncu_pair.py t03 tile|triton     # tutorial 03 at 4096^3, tile's config 0
    python3 benchmarks/ncu_pair.py moe tile|triton     # fused MoE, its Triton twin by rename
"""

from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def t03(impl: str):
    import triton_ports_on_device as tp

    a, b = (torch.randn(tp.SIZE, tp.SIZE, dtype=torch.float16, device="cuda") for _ in range(2))
    c = torch.empty_like(a)
    if impl == "tile":
        return tp.tutorial_launch(tp.tutorial_matmul_kernel, a, b, c, tp.TILE_CONFIGS[0])
    return tp.triton_tutorial()[0](a, b, c)


def moe(impl: str):
    import library_kernels_on_device as lk

    return lk.moe_launchers("cuda")[0][impl]


def main() -> None:
    case, impl = sys.argv[1], sys.argv[2]
    fn = {"t03": t03, "moe": moe}[case](impl)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
