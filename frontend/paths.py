"""Where tile keeps what it caches on disk (compiled kernels, autotune choices, the parser's
tables and parse trees): `TILE_CACHE_DIR`, default `~/.cache/tile`. Imports nothing, so that
both the compiler and the runtime can ask."""

from __future__ import annotations

import os


def cache_dir() -> str:
    return os.environ.get("TILE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "tile")


def share(path: str) -> str:
    """Give a file or folder that `tempfile` made private (0600, 0700) the mode that open() and
    makedirs give (0644, 0755 under umask 022): in a cache shared by several users, the others
    missed every entry and compiled it again. Returns path."""
    os.chmod(path, (0o777 if os.path.isdir(path) else 0o666) & ~_umask())
    return path


def _umask() -> int:
    try:  # (read, not set: os.umask would change it for every thread a moment)
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def remove(path: str | None) -> None:
    """Delete a temporary file or folder a failed write left behind (a full disk), if any."""
    if path is None:
        return
    if os.path.isdir(path) and not os.path.islink(path):
        import shutil

        shutil.rmtree(path, ignore_errors=True)
        return
    try:
        os.unlink(path)
    except OSError:
        pass
