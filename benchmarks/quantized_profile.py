"""Launch the FP8 and INT4 weight-only matmuls of `decode_probe.py` (M=4096, N=K=8192, the
examples' prefill tiles) a few times each, for a profiler:

    ncu --clock-control none --kernel-name regex:'(fp8|int4)_matmul' --launch-skip 1 --launch-count 2 \\
        --section WarpStateStats --section SourceCounters python3 benchmarks/quantized_profile.py

The kernels come from the cache `decode_probe.py --compile-only` filled (same shapes and tiles)."""

from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from decode_probe import quantized_cases  # noqa: E402

PREFILL = (128, 128, 64, 8, 3)


def main() -> None:
    cases = quantized_cases("cuda", 4096, PREFILL)
    for name in ("fp8", "int4"):
        run = cases[name][0]
        for _ in range(3):
            run()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
