"""Launch the FP8 and INT4 weight-only matmuls of `decode_probe.py` (M=4096, N=K=8192, the
examples' prefill tiles, `PREFILL_TILES`) a few times each, for a profiler:

    ncu --clock-control none --kernel-name regex:'(fp8|int4)_matmul' --launch-skip 1 --launch-count 2 \\
        --section WarpStateStats --section SourceCounters python3 benchmarks/quantized_profile.py

The kernels come from the cache `decode_probe.py --compile-only` filled (same shapes and tiles)."""

from __future__ import annotations

import importlib
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from decode_probe import quantized_cases  # noqa: E402
from implementations import _examples  # noqa: E402


def main() -> None:
    _examples()
    for name in ("fp8", "int4"):
        example = importlib.import_module(f"{name}_matmul")
        t = example.PREFILL_TILES
        run = quantized_cases("cuda", 4096, (t["BM"], t["BN"], t["BK"], t["num_warps"], t["num_stages"]))[name][0]
        for _ in range(3):
            run()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
