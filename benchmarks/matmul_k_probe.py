"""Where a matmul's time goes: M = N fixed, K swept. The time's slope over K is the
main loop's cost per K step; its intercept, the fixed cost of the launch (prologue,
epilogue, wave tail), which the main loop does not hide.

Here (no GPU), into the device cache:   python benchmarks/matmul_k_probe.py --compile-only
On the GPU machine (cache carried):     python benchmarks/matmul_k_probe.py --out DIR

tile (one program per output tile, and persistent), Triton at its tutorial's
128x256x64/8w/3s (its fastest config at 4096^3 and 8192^3 on the H200) and
torch.matmul, plain bf16 GEMMs, each checked against torch and then timed in three
rounds that alternate the order. Unlike the harness, each event pair brackets a
batch of launches: at small K a launch takes about as long on a slow host as the
kernel on the GPU, and a host-bound time would pass for a fixed cost.
Prints a table and a least-squares line per implementation; writes DIR/k_probe.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

MN = 4096
KS = (512, 1024, 2048, 4096, 8192)
ROUNDS = 3
BATCH, REPS = 10, 15


def batch_us(fn) -> float:
    """Median microseconds per launch over REPS event-timed batches of BATCH back-to-back launches."""
    import torch

    fn()
    torch.cuda.synchronize()
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(REPS)]
    for start, end in pairs:
        start.record()
        for _ in range(BATCH):
            fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in pairs) * 1e3 / BATCH


def fit(xs, ys) -> tuple[float, float]:
    """Least squares y = slope * x + intercept."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return slope, my - slope * mx


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--out", default="k-probe-out")
    args = ap.parse_args()
    import torch

    import harness
    import implementations as impls

    device = "meta" if args.compile_only else "cuda"
    fns = {}
    for k in KS:
        shape = (MN, MN, k)
        for choice in (None, impls.PERSISTENT):
            fns[("tile" if choice is None else "tile persistent", k)] = impls.tile_impl("matmul", shape, choice)[0]
        if not args.compile_only:
            fns[("triton", k)] = impls.triton_impl("matmul", shape, 0)[0]
            fns[("torch", k)] = impls.torch_impl("matmul")
    names = list(dict.fromkeys(n for n, _ in fns))
    times = {key: [] for key in fns}
    for k in KS:
        a, b, bias = impls.make_inputs("matmul", (MN, MN, k), torch.bfloat16, device)
        if args.compile_only:
            for n in names:
                fns[(n, k)](a, b, bias)
            continue
        want = impls.reference("matmul", (a, b, bias))
        for n in names:
            torch.testing.assert_close(fns[(n, k)](a, b, bias), want, **harness.tolerance("matmul", "bfloat16"))
        for r in range(ROUNDS):
            for n in (names if r % 2 == 0 else names[::-1]):
                times[(n, k)].append(batch_us(lambda: fns[(n, k)](a, b, bias)))
    if args.compile_only:
        print(f"compiled {len(fns)} launches")
        return 0
    best = {key: min(v) for key, v in times.items()}
    print(f"M = N = {MN}; us (best of {ROUNDS} medians), TFLOP/s in parentheses")
    print("K      " + "".join(f"{n:>24}" for n in names))
    for k in KS:
        print(f"{k:<7}" + "".join(f"{best[(n, k)]:>14.1f} ({2 * MN * MN * k / best[(n, k)] / 1e6:5.0f})" for n in names))
    lines = {}
    for n in names:
        slope, intercept = fit(KS, [best[(n, k)] for k in KS])
        lines[n] = {"us_per_k64": slope * 64, "intercept_us": intercept}
        print(f"{n:>16}: {slope * 64:.3f} us per 64 of K, intercept {intercept:.1f} us")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "k_probe.json"), "w") as f:
        json.dump({"mn": MN, "ks": KS, "us": {f"{n} {k}": v for (n, k), v in times.items()}, "fit": lines}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
