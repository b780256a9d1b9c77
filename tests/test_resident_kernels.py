"""The launchers kept in memory are bounded (`TILE_MAX_KERNELS_IN_MEMORY`, least recently
looked up evicted first): an evicted specialization is freed, and comes back from the disk
cache on its next launch; a launcher's stage texts are read from the cache entry on demand."""

import gc

import pytest
import torch

import tile
from tile.runtime.cache import StageTexts
from tile.runtime.cpu_launcher import CpuLauncher


@tile.kernel
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tile.constexpr, FACTOR: tile.constexpr):
    offs = tile.arange(0, BLOCK)
    mask = offs < n
    tile.store(y_ptr + offs, tile.load(x_ptr + offs, mask=mask) * FACTOR, mask=mask)


def _live_cpu_launchers() -> int:
    gc.collect()
    return sum(type(o) is CpuLauncher for o in gc.get_objects())


def test_eviction_bounds_and_frees_launchers(monkeypatch):
    monkeypatch.setenv("TILE_MAX_KERNELS_IN_MEMORY", "3")
    x = torch.randn(37)
    y = torch.empty(37)
    for factor in range(8):  # eight specializations (FACTOR is a constexpr)
        scale_kernel[(1,)](x, y, 37, BLOCK=64, FACTOR=float(factor))
        torch.testing.assert_close(y, x * factor)
    assert len(scale_kernel._launchers) <= 3
    # Before the engine -> callback -> launcher cycle was broken, every evicted launcher stayed alive.
    assert _live_cpu_launchers() <= 3 + 2  # (+ launchers another test module still holds)
    scale_kernel[(1,)](x, y, 37, BLOCK=64, FACTOR=0.0)  # evicted long ago: back from the disk cache
    torch.testing.assert_close(y, x * 0.0)


def test_bad_bound_is_named(monkeypatch):
    monkeypatch.setenv("TILE_MAX_KERNELS_IN_MEMORY", "many")
    with pytest.raises(tile.TileError, match="TILE_MAX_KERNELS_IN_MEMORY"):
        scale_kernel[(1,)](torch.ones(4), torch.empty(4), 4, BLOCK=8, FACTOR=3.5)


def test_stage_texts_read_on_demand():
    launcher = scale_kernel.compile(torch.ones(4), torch.empty(4), 4, BLOCK=8, FACTOR=2.5)
    assert isinstance(launcher.asm, StageTexts)
    assert "tile.store" in launcher.asm["tile"]
    assert set(launcher.asm) >= {"tile"}
