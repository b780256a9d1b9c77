"""The checks of a script that builds kernels on the CPU machine and runs them on the GPU
(`regressions_on_device.py`, `language_on_device.py`): `--compile-only` launches on meta
tensors and checks nothing, `--cpu` runs on the CPU target, else on cuda."""

from __future__ import annotations

import sys

import torch


class DeviceChecks:
    def __init__(self, argv=None):
        argv = sys.argv if argv is None else argv
        self.compile_only = "--compile-only" in argv
        self.device = "meta" if self.compile_only else ("cpu" if "--cpu" in argv else "cuda")
        self.failed: list[str] = []

    def check(self, name, got, want, **tol) -> None:
        """assert_close of got (on the device) and want, printed as a line; a failure is kept."""
        if self.compile_only:
            return
        try:
            torch.testing.assert_close(got.cpu(), want.cpu(), **tol)
            print(f"{name}: matches torch")
        except AssertionError as e:
            self.failed.append(name)
            print(f"{name}: FAIL {str(e)[:300]}")

    def finish(self, what: str) -> int:
        """The script's exit status, after its last line (`what`: "int8 dot kernels")."""
        if self.device == "cuda":
            torch.cuda.synchronize()
        if self.compile_only:
            print(f"{what} compiled")
            return 0
        print(f"FAILED: {', '.join(self.failed)}" if self.failed else f"every one of the {what} matches torch")
        return 1 if self.failed else 0


def script_args(launches: int):
    """The arguments of a timed device script (`--compile-only`, `--launches`, default
    `launches`); with `--compile-only` (the CPU machine) its launches build for sm_90a into the
    cache and run nothing. The examples' folder is put on the path."""
    import argparse
    import os

    ap = argparse.ArgumentParser()
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--launches", type=int, default=launches)
    args = ap.parse_args()
    if args.compile_only:
        os.environ.setdefault("TILE_TARGET", "sm_90a")
        os.environ["TILE_COMPILE_ONLY"] = "1"
    from implementations import _examples

    _examples()
    return args

