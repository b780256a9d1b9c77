import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
# One cache for the whole run, so that tests share compiled kernels.
os.environ.setdefault("TILE_CACHE_DIR", os.path.join(ROOT, ".cache", "kernels"))
os.environ.pop("TILE_TARGET", None)


@pytest.fixture
def gpu_target(monkeypatch):
    """Compile for a GPU target without running (meta tensors): `gpu_target("sm_80")`."""
    def use(target="sm_90a"):
        monkeypatch.setenv("TILE_TARGET", target)
        monkeypatch.setenv("TILE_COMPILE_ONLY", "1")

    return use
