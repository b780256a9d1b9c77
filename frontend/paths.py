"""Where tile keeps what it caches on disk (compiled kernels, autotune choices, the parser's
tables and parse trees): `TILE_CACHE_DIR`, default `~/.cache/tile`. Imports nothing, so that
both the compiler and the runtime can ask."""

from __future__ import annotations

import os


def cache_dir() -> str:
    return os.environ.get("TILE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "tile")
