"""Run every example's main() on one device and report which match torch.

With --compile-only (and TILE_COMPILE_ONLY=1, TILE_TARGET=sm_90) it only fills
the cache: launches compile and return, so the examples' checks are skipped.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
import traceback



def main() -> int:
    import tile

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(tile.__file__)), "examples"))
    from seeds import SEEDS

    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--out", default=os.environ.get("OUT"), help="folder for examples-<device>.json")
    ap.add_argument("names", nargs="*", choices=[[], *SEEDS], help="examples to run (default: all)")
    args = ap.parse_args()
    if args.compile_only:
        import torch

        # Outputs are never written in a compile-only run: skip the checks so every kernel gets compiled.
        torch.testing.assert_close = lambda *a, **k: None

    results = []
    for name in args.names or SEEDS:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:  # a listed example that is not there is a failure, not a skip
            results.append({"example": name, "status": "FAIL", "detail": f"missing: {e}"})
            print(f"{name:22s} FAIL     missing: {e}", flush=True)
            continue
        t0 = time.perf_counter()
        try:
            mod.main(device=args.device)
            status, detail = "ok", ""
        except Exception as e:  # noqa: BLE001  (report every example, whatever fails)
            # Compile-only launches leave outputs unwritten, so only the torch check may fail.
            compiled = args.compile_only and isinstance(e, AssertionError)
            status = "compiled" if compiled else "FAIL"
            detail = "" if compiled else "".join(traceback.format_exception_only(type(e), e)).strip()[:2000]
        results.append({"example": name, "status": status, "seconds": round(time.perf_counter() - t0, 2), "detail": detail})
        print(f"{name:22s} {status:8s} {results[-1]['seconds']:7.2f}s {detail[:300]}", flush=True)
    if args.out:
        import datetime

        import torch

        device = torch.cuda.get_device_name() if args.device == "cuda" else args.device
        record = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "device": device, "torch": torch.__version__, "command": " ".join(sys.argv), "results": results}
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"examples-{args.device}.json"), "w") as f:
            json.dump(record, f, indent=1)
    return 0 if all(r["status"] in ("ok", "compiled") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
