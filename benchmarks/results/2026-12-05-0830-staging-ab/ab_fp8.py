import os, sys, statistics, torch
D = sys.argv[1]
sys.path.insert(0, f"{D}/src/tile/benchmarks")
import decode_probe as p
from matmul_rounds import interleaved_launches, ratio_summary
for cfg in [(128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (64, 64, 64, 4, 3)]:
    run, dense, a, _ = p.quantized_cases("cuda", 4096, cfg)["fp8"]
    torch.testing.assert_close(run(), (a.float() @ dense.float()).to(a.dtype), rtol=2e-2, atol=2e-2 * p.K ** 0.5)
    steps = interleaved_launches({"tile": run, "torch": lambda: a @ dense}, (), launches=100)
    t = statistics.median(s["tile"] for s in steps)
    r = ratio_summary(steps, "torch", "tile")
    print(f"{D} fp8 M=4096 {cfg}: {t:.3f} ms {2*4096*8192*8192/t/1e9:.0f} TFLOP/s, torch/tile {r['median']:.3f}x", flush=True)
