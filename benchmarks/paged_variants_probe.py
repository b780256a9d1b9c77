"""A probe: the paged attention decode of examples/paged_attention.py against a variant
(`paged_row_state.py`: an online softmax per token slot, no cross-warp step in the loop), at
decode_probe.py's shape, on the same (tokens a step, num_warps, stages, splits) configs, in
interleaved launches; every output checked against torch first.

    python3 benchmarks/paged_variants_probe.py --compile-only    # CPU machine, TILE_TARGET=sm_90a
    python3 benchmarks/paged_variants_probe.py                   # the H200
"""

from __future__ import annotations

import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from decode_probe import PAGED, paged_case  # noqa: E402
from matmul_rounds import interleaved_launches, ratio_summary  # noqa: E402
from probe_device import probe_device  # noqa: E402
import paged_row_state  # noqa: E402

CONFIGS = ((32, 4, 1, 1), (32, 4, 1, 4), (64, 8, 1, 1), (64, 8, 1, 2), (64, 8, 1, 4), (64, 8, 2, 4), (64, 4, 1, 4),
           (128, 16, 1, 1), (128, 16, 1, 4), (16, 4, 1, 4))


def main() -> None:
    dev = probe_device()
    pa, pargs, pbytes = paged_case(dev)
    variants = {"example": pa.paged_attention, "row_state": paged_row_state.paged_attention}
    if dev == "meta":
        for config in CONFIGS:
            for fn in variants.values():
                fn(*pargs, config[2], config[3], config[0], config[1])
        return
    from timing import copy_ceiling_gbs

    ceiling = copy_ceiling_gbs()
    print(f"copy ceiling: {ceiling:.0f} GB/s", flush=True)
    q, k_cache, v_cache, tables, lens = pargs
    want = pa.reference(q[:2], k_cache, v_cache, tables[:2], lens[:2])
    for block_n, warps, stages, splits in CONFIGS:
        fns = {name: (lambda fn=fn: fn(*pargs, stages, splits, block_n, warps)) for name, fn in variants.items()}
        for fn in fns.values():
            torch.testing.assert_close(fn()[:2], want, rtol=2e-2, atol=2e-2)
        steps = interleaved_launches(fns, (), launches=100)
        gbs = {name: pbytes / (statistics.median(t[name] for t in steps) * 1e-3) / 1e9 for name in fns}
        r = ratio_summary(steps, "example", "row_state")
        print(f"paged attention {PAGED}, {block_n} tokens a step, {warps} warps, {stages} stages, {splits} splits: "
              f"example {gbs['example']:.0f} GB/s ({gbs['example'] / ceiling:.0%} of copy), row state "
              f"{gbs['row_state']:.0f} ({gbs['row_state'] / ceiling:.0%}); row state vs example {r['median']:.3f}x "
              f"({r['low']:.3f}-{r['high']:.3f})", flush=True)


if __name__ == "__main__":
    main()
