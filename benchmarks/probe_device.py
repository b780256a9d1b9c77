"""The command line every probe shares: `--compile-only` on the CPU machine (TILE_TARGET=sm_90a
TILE_COMPILE_ONLY=1: launches on 'meta' tensors compile into the cache), none on the H200."""

from __future__ import annotations

import argparse


def probe_device() -> str:
    """'meta' with --compile-only, else 'cuda'; torch seeded."""
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--compile-only", action="store_true")
    torch.manual_seed(0)
    return "meta" if ap.parse_known_args()[0].compile_only else "cuda"  # (a probe may read options of its own)
