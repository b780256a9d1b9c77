"""One kernel of a tile-against-Triton pair, launched once inside a profiler range, for
`ncu --profile-from-start off` (ncu_pairs_on_device.sh): warm-up (Triton's autotuning, tile's
first launch) happens before the range, so the report holds the timed kernel alone.

    python3 benchmarks/ncu_pair.py t03 tile|triton     # tutorial 03 at 4096^3, tile's config 0
    python3 benchmarks/ncu_pair.py moe tile|triton     # fused MoE, its Triton twin by rename
    python3 benchmarks/ncu_pair.py rms tile|triton     # RMSNorm backward, atomic dW (after a torch.zeros)
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


def rms(impl: str):
    import rms_norm_backward as rn
    import triton_training_kernels as tk
    from training_kernels_on_device import RMS_SHAPE

    x, dy = (torch.randn(RMS_SHAPE, device="cuda").to(torch.bfloat16) for _ in range(2))
    w = (1 + 0.1 * torch.randn(RMS_SHAPE[1], device="cuda")).to(torch.bfloat16)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    _, rstd = rn.rms_norm_forward(x, w)
    if impl == "tile":
        return lambda: rn.rms_norm_backward(dy, x, w, rstd, atomic_dw=True)
    return lambda: tk.rms_norm_backward(dy, x, w, rstd, sms, atomic_dw=True)


def main() -> None:
    case, impl = sys.argv[1], sys.argv[2]
    fn = {"t03": t03, "moe": moe, "rms": rms}[case](impl)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
