import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
# One cache for the whole run, so that tests share compiled kernels.
os.environ.setdefault("TILE_CACHE_DIR", os.path.join(ROOT, ".cache", "kernels"))
os.environ.pop("TILE_TARGET", None)
