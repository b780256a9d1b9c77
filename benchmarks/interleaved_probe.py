"""tile's plain matmul (one program per tile, and persistent) against Triton's best tutorial
config and torch.matmul in interleaved launches (matmul_rounds.interleaved_launches), with
no check of the outputs: for timing builds whose cubins were altered by hand (a probe of
what a change could gain). Prints the median ratios and their quartiles per size."""

from __future__ import annotations

import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from implementations import PERSISTENT, make_inputs, tile_impl, torch_impl, triton_impl  # noqa: E402
from matmul_rounds import interleaved_launches, ratio_summary  # noqa: E402

TRITON_BEST = 0  # 128x256x64/8w/3s, Triton's fastest at both sizes in every run


def main() -> None:
    import torch

    label = sys.argv[1] if len(sys.argv) > 1 else ""
    for n in (4096, 8192):
        shape = (n, n, n)
        torch.manual_seed(0)
        args = make_inputs("matmul", shape, torch.bfloat16, "cuda")
        fns = {"tile": tile_impl("matmul", shape)[0], "persistent": tile_impl("matmul", shape, PERSISTENT)[0],
               "triton": triton_impl("matmul", shape, TRITON_BEST)[0], "torch": torch_impl("matmul")}
        steps = interleaved_launches(fns, args)
        for name in ("tile", "persistent"):
            t, c = ratio_summary(steps, "triton", name), ratio_summary(steps, "torch", name)
            ms = statistics.median(s[name] for s in steps)
            print(f"{label} {n}^3 {name}: {ms:.4f} ms, vs Triton {t['median']:.4f}x ({t['low']:.3f}-{t['high']:.3f}), "
                  f"vs torch {c['median']:.4f}x ({c['low']:.3f}-{c['high']:.3f})", flush=True)


if __name__ == "__main__":
    main()
