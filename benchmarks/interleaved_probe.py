"""tile's plain matmul (one program per tile, and persistent) against Triton's best tutorial
config and torch.matmul in interleaved launches (`matmul_rounds.paired_matmul`, as the
harness measures them), with no check of the outputs: for timing builds whose cubins were
altered by hand (a probe of what a change could gain). Prints the median ratios and their
quartiles per size."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from matmul_rounds import paired_matmul  # noqa: E402

SIZES = (4096, 8192)
TRITON_BEST = 0  # 128x256x64/8w/3s, Triton's fastest at both sizes in every run


def main() -> None:
    label = sys.argv[1] if len(sys.argv) > 1 else ""
    for x in paired_matmul(SIZES, {}, {("triton", n): TRITON_BEST for n in SIZES}):
        t, c = x["vs_triton"], x["vs_torch"]
        print(f"{label} {x['size']}^3 {x['tile_choice']}: {x['median_ms'][x['tile_choice']]:.4f} ms, "
              f"vs Triton {t['median']:.4f}x ({t['low']:.3f}-{t['high']:.3f}), "
              f"vs torch {c['median']:.4f}x ({c['low']:.3f}-{c['high']:.3f})", flush=True)


if __name__ == "__main__":
    main()
