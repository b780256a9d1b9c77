"""A probe: examples/flash_attention.py's forward kernel at B=4, H=32, N=4096, D=128, bf16
(the shape of ../shared/notes/toolchain.md, where torch's SDPA ran at 587 TFLOP/s, 524
causal) against torch's scaled_dot_product_attention, at a few tile configs, in
interleaved launches, and against a Triton kernel of the fused-attention tutorial's algorithm
(`triton_attention.py`) at the same configs; every output checked against torch first. Not
a harness group yet: attention has no bar in the issues, this measures where it stands.

    python3 benchmarks/attention_probe.py --compile-only    # CPU machine, TILE_TARGET=sm_90a
    python3 benchmarks/attention_probe.py                   # the H200
"""

from __future__ import annotations

import math
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from implementations import _examples  # noqa: E402
from matmul_rounds import interleaved_launches, ratio_summary  # noqa: E402
from probe_device import probe_device  # noqa: E402

SHAPE = (4, 32, 4096, 128)
# (BLOCK_M, BLOCK_N, num_warps, num_stages)
CONFIGS = [(128, 64, 8, 2), (128, 64, 8, 3), (128, 64, 8, 4), (128, 128, 8, 2), (64, 64, 4, 2)]


def tile_attention(causal, block_m, block_n, warps, stages):
    _examples()
    import flash_attention as fa

    def run(q, k, v):
        B, H, N, D = q.shape
        out = torch.empty_like(q)
        fa.attention_kernel[(-(-N // block_m), B * H)](
            q, k, v, out, N, 1.0 / math.sqrt(D), H, *q.stride(), *k.stride(), *v.stride(), *out.stride(),
            BLOCK_M=block_m, BLOCK_N=block_n, D=D, CAUSAL=causal, num_warps=warps, num_stages=stages)
        return out
    return run


def main() -> None:
    dev = probe_device()
    q, k, v = (torch.randn(SHAPE, dtype=torch.bfloat16, device=dev) for _ in range(3))
    for causal in (False, True):
        fns = {f"tile {bm}x{bn}/{w}w/{s}s": tile_attention(causal, bm, bn, w, s) for bm, bn, w, s in CONFIGS}
        if dev == "meta":
            for name, fn in fns.items():
                try:
                    fn(q, k, v)
                except Exception as e:  # noqa: BLE001 (a config that does not compile is reported, not fatal)
                    print(f"{name}: {type(e).__name__}: {str(e)[:200]}")
            continue
        import triton_attention

        for bm, bn, w, s in CONFIGS:
            fns[f"triton {bm}x{bn}/{w}w/{s}s"] = (
                lambda q, k, v, c=(bm, bn, w, s): triton_attention.attention(q, k, v, causal, *c))
        fns["torch sdpa"] = lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        want = fns["torch sdpa"](q, k, v)
        good = {}
        for name, fn in fns.items():
            try:
                torch.testing.assert_close(fn(q, k, v), want, rtol=2e-2, atol=2e-2)
                good[name] = fn
            except Exception as e:  # noqa: BLE001
                print(f"causal={causal} {name}: {type(e).__name__}: {str(e)[:200]}", flush=True)
        steps = interleaved_launches(good, (q, k, v), launches=50)
        flops = 4 * SHAPE[0] * SHAPE[1] * SHAPE[2] * SHAPE[2] * SHAPE[3] / (2 if causal else 1)
        ms = {name: statistics.median(t[name] for t in steps) for name in good}
        best_triton = min((n for n in good if n.startswith("triton")), key=ms.get, default=None)
        for name in good:
            r = ratio_summary(steps, "torch sdpa", name)
            line = (f"causal={causal} {name}: {ms[name]:.3f} ms, {flops / ms[name] / 1e9:.0f} TFLOP/s, "
                    f"vs sdpa {r['median']:.3f}x ({r['low']:.3f}-{r['high']:.3f})")
            if best_triton and name.startswith("tile"):
                t = ratio_summary(steps, best_triton, name)
                line += f", vs Triton's best ({best_triton}) {t['median']:.3f}x ({t['low']:.3f}-{t['high']:.3f})"
            print(line, flush=True)


if __name__ == "__main__":
    main()
