"""The GPU half of tests/test_reliability.py's TILE_DEBUG check: with TILE_DEBUG=1 an unmasked
load past its tensor stops the kernel on the GPU with a message naming the tensor, the offset
and the kernel's source line. Built on the CPU machine for sm_90a, run on the GPU.

    TILE_TARGET=sm_90a TILE_COMPILE_ONLY=1 python3 benchmarks/debug_bounds_on_device.py --compile-only
    python3 benchmarks/debug_bounds_on_device.py        # on the GPU, with that cache

A device-side assert leaves the CUDA context unusable, so the launch that trips it runs in a
child process; the parent checks that the child failed and what it printed. Run from the
repository root (the kernel is imported from tests/).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

os.environ["TILE_DEBUG"] = "1"  # (part of the cache key: set before anything compiles)
sys.path.insert(0, os.path.join(os.getcwd(), "tests"))

import torch  # noqa: E402

from test_reliability import bounds_kernel  # noqa: E402


def launch(device: str, B: int) -> torch.Tensor:
    x = torch.arange(20, dtype=torch.float32, device=device)[::2]  # (10 elements of stride 2: offsets 0 to 18)
    out = torch.zeros(20, device=device)
    bounds_kernel[(1,)](x, out, 8, B=B)
    if device == "cuda":
        torch.cuda.synchronize()
    return out


def main() -> int:
    if "--compile-only" in sys.argv:
        for B in (8, 16):
            launch("meta", B)
        print("debug bounds kernels compiled")
        return 0
    if "--child" in sys.argv:
        out = launch("cuda", 8)  # in bounds: runs
        assert out[:8].tolist() == [float(2 * i) for i in range(8)], out
        print("in bounds: ok", flush=True)
        launch("cuda", 16)  # offsets up to 30 of 18: the assert
        print("out of bounds: no error", flush=True)
        return 0
    child = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, timeout=120)
    text = child.stdout + child.stderr
    found = {
        "in-bounds launch ran": "in bounds: ok" in text,
        "out-of-bounds launch failed": child.returncode != 0 and "out of bounds: no error" not in text,
        "message names the tensor and offset": "load of tensor argument 'x' out of bounds at offset 30" in text,
        "message names the source line": "test_reliability.py:" in text,
    }
    for k, v in found.items():
        print(f"{k}: {'yes' if v else 'NO'}")
    print(text[-1500:])
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "debug_bounds.json"), "w") as f:
            json.dump({"checks": found, "child_rc": child.returncode, "output_tail": text[-3000:]}, f, indent=1)
    return 0 if all(found.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
