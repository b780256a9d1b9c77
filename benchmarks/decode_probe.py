"""A probe: where the seed kernels that no issue sets a bar for stand on the H200, at
shapes of LLM decoding and prefill; every output checked against torch first.

- paged attention decode (examples/paged_attention.py), B=32 sequences of 4096 tokens,
  H=32, D=128, bf16 caches in 16-token pages scattered at random: GB/s of the caches
  read, against a 1 GiB copy measured in the same run, and against the same algorithm
  in Triton (`triton_attention.py`), in interleaved launches;
- weight-only FP8 and INT4 matmuls (examples/fp8_matmul.py, int4_matmul.py), N = K =
  8192, at M = 16 (decode: the weights' bytes dominate) and M = 4096 (prefill), against
  torch.matmul on the dequantized bf16 weights, in interleaved launches.

    python3 benchmarks/decode_probe.py --compile-only    # CPU machine, TILE_TARGET=sm_90a
    python3 benchmarks/decode_probe.py                   # the H200
    python3 benchmarks/decode_probe.py --paged-only      # the paged attention alone
    python3 benchmarks/decode_probe.py --paged-only --paged-shape 32,32,64,16,4096   # its sweep at D = 64
    python3 benchmarks/decode_probe.py --quantized-only  # the FP8 and INT4 matmuls alone (an A/B of two builds)
"""

from __future__ import annotations

import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from implementations import _examples  # noqa: E402
from matmul_rounds import interleaved_launches, ratio_summary  # noqa: E402
from probe_device import probe_device  # noqa: E402

PAGED = dict(B=32, H=32, D=128, PAGE=16, TOKENS=4096)
if "--paged-shape" in sys.argv:  # the sweep at another shape: --paged-shape B,H,D,PAGE,TOKENS
    PAGED = dict(zip(PAGED, map(int, sys.argv[sys.argv.index("--paged-shape") + 1].split(","))))
N = K = 8192
GROUP = 128  # int4 scales: one per 128 rows of K and column
# (BM, BN, BK, num_warps, num_stages) by M (128 x 128 x 64 at 8 warps failed to launch for FP8 on
# 2026-12-04 21:29, before the launcher's fix for more than 48 KB of shared memory; see results/README.md)
CONFIGS = {
    16: [(64, 64, 64, 4, 1), (64, 64, 64, 4, 2), (64, 64, 64, 4, 4), (16, 64, 128, 4, 4), (16, 32, 256, 4, 3),
         (16, 128, 64, 4, 4)],
    4096: [(64, 64, 64, 4, 1), (64, 64, 64, 4, 3), (128, 128, 64, 8, 1), (128, 128, 64, 8, 2), (128, 128, 64, 8, 3),
           (128, 128, 64, 8, 4), (128, 256, 64, 8, 2), (128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 256, 64, 8, 5),
           (256, 128, 64, 8, 2), (256, 128, 64, 8, 4),
           # (one-warpgroup tiles, two programs an SM, did no better: results 2026-12-05-1936); K steps of
           # 32, more stages ahead (compiled 2026-12-06, not yet timed):
           (256, 128, 32, 8, 6), (128, 256, 32, 8, 6), (128, 128, 32, 8, 8),
           # INT4 at 256x128x64/8/2 led on 2026-12-06 05:08 (425 TFLOP/s); the same rows at K steps of 32:
           (256, 128, 32, 8, 3), (256, 128, 32, 8, 4),
           # INT4 (all loads by TMA) led at 256x128x32/8/4 on 2026-12-06 05:29 (481-485); one stage more:
           (256, 128, 32, 8, 5), (256, 128, 64, 8, 3),
           # K steps of 128 (FP8 only: half the K steps, so half the barriers a tile):
           (256, 128, 128, 8, 2), (128, 256, 128, 8, 2), (128, 128, 128, 8, 3)]
}
# (tokens a step, num_warps, the token loop's pipelining depth, programs per (sequence, head)), tile and
# Triton alike
PAGED_CONFIGS = ((16, 4, 2, 1), (16, 4, 1, 4), (32, 4, 1, 4), (64, 4, 1, 1), (64, 4, 1, 2), (64, 4, 1, 4),
                 (64, 4, 2, 4), (64, 8, 1, 1), (64, 8, 1, 4), (64, 8, 2, 4), (128, 8, 1, 1), (128, 8, 1, 2),
                 (128, 8, 1, 4), (128, 16, 1, 4), (256, 16, 1, 1), (256, 16, 1, 2), (32, 4, 2, 4), (32, 4, 3, 4),
                 (64, 4, 3, 4), (64, 4, 2, 2), (128, 8, 2, 2))
# Other decode shapes (fewer or shorter sequences, fewer heads, D = 64): tile at the example's
# defaults against Triton at the best of these configs (the main shape's best few)
PAGED_SHAPES = (dict(B=8, H=32, D=128, PAGE=16, TOKENS=1024), dict(B=64, H=8, D=128, PAGE=16, TOKENS=8192),
                dict(B=32, H=32, D=64, PAGE=16, TOKENS=4096), dict(B=4, H=32, D=128, PAGE=16, TOKENS=16384))
TRITON_PAGED_BEST = ((64, 4, 2, 4), (64, 4, 1, 4), (32, 4, 1, 4), (64, 4, 2, 2), (128, 8, 1, 2))


def paged_case(dev, shape=PAGED):
    _examples()
    import paged_attention as pa

    B, H, D, PAGE, T = (shape[k] for k in ("B", "H", "D", "PAGE", "TOKENS"))
    pages = B * T // PAGE
    q = torch.randn(B, H, D, dtype=torch.bfloat16, device=dev)
    k_cache, v_cache = (torch.randn(pages, PAGE, H, D, dtype=torch.bfloat16, device=dev) for _ in range(2))
    tables = torch.randperm(pages, device=dev).view(B, T // PAGE).to(torch.int32)
    lens = torch.full((B,), T, dtype=torch.int32, device=dev)
    return pa, (q, k_cache, v_cache, tables, lens), 2 * k_cache.numel() * k_cache.element_size()


def quantized_cases(dev, m, config):
    _examples()
    import fp8_matmul as f8
    import int4_matmul as i4

    a = torch.randn(m, K, dtype=torch.bfloat16, device=dev)
    w8 = (torch.randn(K, N, device=dev) * 0.5).to(torch.float8_e4m3fn)
    s8 = (torch.rand(N, device=dev) + 0.5).to(torch.bfloat16)
    q4 = torch.randint(-8, 8, (K, N), dtype=torch.int8, device=dev)
    s4 = (torch.rand(K // GROUP, N, device=dev) * 0.1 + 0.01).to(torch.bfloat16)
    packed = i4.pack_int4(q4) if dev != "meta" else torch.empty(K // 2, N, dtype=torch.int8, device=dev)
    dense8 = (w8.float() * s8.float()).to(torch.bfloat16) if dev != "meta" else None
    dense4 = (q4.float() * s4.float().repeat_interleave(GROUP, dim=0)).to(torch.bfloat16) if dev != "meta" else None
    bm, bn, bk, warps, stages = config
    options = dict(num_warps=warps, num_stages=stages)
    return {
        "fp8": (lambda: f8.fp8_matmul(a, w8, s8, bm, bn, bk, **options), dense8, a, K * N),
        "int4": (lambda: i4.int4_matmul(a, packed, s4, GROUP, bm, bn, bk, **options), dense4, a, K * N // 2),
    }


def _configs():
    return [(m, c) for m, configs in CONFIGS.items() for c in configs]


def other_shape(pa, shape, dev, ceiling) -> None:
    """The example at its defaults against Triton at each of TRITON_PAGED_BEST, interleaved."""
    import triton_attention

    _, args, nbytes = paged_case(dev, shape)
    q, k_cache, v_cache, tables, lens = args
    want = pa.reference(q[:2], k_cache, v_cache, tables[:2], lens[:2])
    fns = {"tile": lambda: pa.paged_attention(*args)}
    for block_n, warps, stages, splits in TRITON_PAGED_BEST:
        fns[f"triton {block_n}/{warps}w/{stages}s/{splits}"] = (
            lambda c=(stages, splits, block_n, warps): triton_attention.paged_attention(*args, *c))
    for fn in fns.values():
        torch.testing.assert_close(fn()[:2], want, rtol=2e-2, atol=2e-2)
    steps = interleaved_launches(fns, (), launches=100)
    gbs = {name: nbytes / statistics.median(t[name] for t in steps) / 1e6 for name in fns}
    best = max((n for n in fns if n != "tile"), key=gbs.get)
    r = ratio_summary(steps, best, "tile")
    print(f"paged attention {shape}: tile at its defaults {gbs['tile']:.0f} GB/s ({gbs['tile'] / ceiling:.0%} of copy), "
          f"Triton's best ({best}) {gbs[best]:.0f} ({gbs[best] / ceiling:.0%}); tile vs Triton's best "
          f"{r['median']:.3f}x ({r['low']:.3f}-{r['high']:.3f})", flush=True)


def main() -> None:
    dev = probe_device()
    paged_only = "--paged-only" in sys.argv  # (the quantized matmuls left out)
    quantized_only = "--quantized-only" in sys.argv  # (the paged attention left out)
    paged_configs, paged_shapes = ((), ()) if quantized_only else (PAGED_CONFIGS, PAGED_SHAPES)
    pa, pargs, pbytes = paged_case(dev)
    if dev == "meta":
        for block_n, warps, stages, splits in paged_configs:
            pa.paged_attention(*pargs, stages, splits, block_n, warps)
        for shape in paged_shapes:
            pa.paged_attention(*paged_case(dev, shape)[1])
        for m, config in [] if paged_only else _configs():
            for name, (run, _, _, _) in quantized_cases(dev, m, config).items():
                try:
                    run()
                except Exception as e:  # (a config that does not compile is reported, the rest still built)
                    print(f"{name} M={m} {config}: {type(e).__name__}: {str(e).splitlines()[0]}", flush=True)
        return
    from timing import copy_ceiling_gbs

    ceiling = copy_ceiling_gbs()
    print(f"copy ceiling: {ceiling:.0f} GB/s", flush=True)
    q, k_cache, v_cache, tables, lens = pargs  # (the reference loops in Python: two sequences of it)
    want = pa.reference(q[:2], k_cache, v_cache, tables[:2], lens[:2])
    import triton_attention

    tokens, warps, stages = pa.default_config(PAGED["D"] * k_cache.element_size())
    splits = pa.default_splits(PAGED["B"] * PAGED["H"], tables.shape[1] * PAGED["PAGE"] // tokens)
    print(f"the example's default here: {tokens} tokens a step, {warps} warps, {stages} stages, {splits} splits")
    for block_n, warps, stages, splits in paged_configs:
        fns = {"tile": lambda: pa.paged_attention(*pargs, stages, splits, block_n, warps),
               "triton": lambda: triton_attention.paged_attention(*pargs, stages, splits, block_n, warps)}
        for fn in fns.values():
            torch.testing.assert_close(fn()[:2], want, rtol=2e-2, atol=2e-2)
        steps = interleaved_launches(fns, (), launches=100)
        gbs = {name: pbytes / (statistics.median(t[name] for t in steps) * 1e-3) / 1e9 for name in fns}
        r = ratio_summary(steps, "triton", "tile")
        print(f"paged attention {PAGED}, {block_n} tokens a step, {warps} warps, {stages} stages, {splits} splits: tile {gbs['tile']:.0f} GB/s of the caches "
              f"({gbs['tile'] / ceiling:.0%} of copy), Triton {gbs['triton']:.0f} ({gbs['triton'] / ceiling:.0%}); "
              f"tile vs Triton {r['median']:.3f}x ({r['low']:.3f}-{r['high']:.3f})", flush=True)
    for shape in paged_shapes:
        other_shape(pa, shape, dev, ceiling)
    for m, config in [] if paged_only else _configs():
        for name, (run, dense, a, wbytes) in quantized_cases(dev, m, config).items():
            want = (a.float() @ dense.float()).to(a.dtype)
            try:
                got = run()
            except Exception as e:
                print(f"{name} M={m} {config}: {type(e).__name__}: {str(e).splitlines()[0]}", flush=True)
                continue
            torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2 * K ** 0.5)
            steps = interleaved_launches({"tile": run, "torch": lambda: a @ dense}, (), launches=100)
            t_ms = statistics.median(t["tile"] for t in steps)
            r = ratio_summary(steps, "torch", "tile")
            flops = 2 * m * N * K
            print(f"{name} weight-only matmul M={m} N=K={N} {config}: {t_ms:.3f} ms, {flops / t_ms / 1e9:.0f} TFLOP/s, "
                  f"{wbytes / (t_ms * 1e-3) / 1e9:.0f} GB/s of weights; torch bf16 matmul of the dequantized "
                  f"weights / tile: {r['median']:.3f}x ({r['low']:.3f}-{r['high']:.3f})", flush=True)


if __name__ == "__main__":
    main()
