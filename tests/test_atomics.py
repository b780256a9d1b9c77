"""`tile.atomic_add` / `atomic_max` / `atomic_min`: old values, scalar atomics, bad dtypes,
and, on a GPU target, one update per element where threads hold copies of it. (The
examples split_k_matmul and histogram check tile and vector atomics against torch.)"""

import importlib
import re

import pytest
import torch

import tile


@tile.kernel
def ticket_kernel(counter, tickets, extremes, x, BLOCK: tile.constexpr):
    pid = tile.program_id(0)
    tile.store(tickets + pid, tile.atomic_add(counter + 0, 1))
    v = tile.load(x + pid * BLOCK + tile.arange(0, BLOCK))
    tile.atomic_max(extremes + 0, tile.max(v, axis=0))
    tile.atomic_min(extremes + 1, tile.min(v, axis=0))


@tile.kernel
def half_add_kernel(y, v, BLOCK: tile.constexpr):
    tile.atomic_add(y + tile.arange(0, BLOCK), v)


@tile.kernel
def float_max_kernel(y, BLOCK: tile.constexpr):
    tile.atomic_max(y + tile.arange(0, BLOCK), 1.0)


def test_scalar_atomics_return_old_values():
    """Each program takes a ticket from one counter: the tickets are 0 .. programs - 1, each once."""
    x = torch.randint(-1000, 1000, (37 * 32,), dtype=torch.int32)
    counter = torch.zeros(1, dtype=torch.int32)
    tickets = torch.full((37,), -1, dtype=torch.int32)
    extremes = torch.tensor([-(2**31), 2**31 - 1], dtype=torch.int32)
    ticket_kernel[(37,)](counter, tickets, extremes, x, BLOCK=32)
    assert counter.item() == 37
    assert sorted(tickets.tolist()) == list(range(37))
    assert extremes.tolist() == [x.max().item(), x.min().item()]


def test_atomic_dtypes_are_checked():
    with pytest.raises(tile.CompilationError, match="atomic_add takes float32 or int32 tensors, but 'y' is float16") as e:
        half_add_kernel[(1,)](torch.zeros(16, dtype=torch.float16), 1.0, BLOCK=16)
    assert "tile.atomic_add(y + tile.arange(0, BLOCK), v)" in str(e.value)
    with pytest.raises(tile.CompilationError, match="atomic_max takes int32 tensors, but 'y' is float32"):
        float_max_kernel[(1,)](torch.zeros(16), BLOCK=16)


def test_copies_of_an_element_add_it_once(monkeypatch):
    """The histogram's 64-element block in 4 warps (128 threads): the layout's 128 threads wrap
    around the 64 elements, so each atomic also asks whether its thread's coordinate, before
    it wraps, is inside the tile. Without that, each count would double on a GPU."""
    example = importlib.import_module("histogram")
    monkeypatch.setenv("TILE_TARGET", "sm_90a")
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    example.histogram_kernel._launchers.clear()
    example.histogram(torch.zeros(1000, dtype=torch.int32), 64, BLOCK=64, num_warps=4)
    (launcher,) = example.histogram_kernel._launchers.values()
    assert "tensor<64xi32, #tile.blocked<[1], [32], [4], [0]>>" in launcher.asm["tile-opt"]
    gpu = launcher.asm["gpu"]
    guard = re.search(r"(%\w+) = arith.cmpi ult, %\w+, %c64_i32 : i32\n(.*\n){0,3}?.*arith.andi %\w+, \1", gpu)
    assert guard and "memref.atomic_rmw addi" in gpu[guard.end():], gpu
    ptx = launcher.asm["ptx"]
    assert ptx.count("atom.global.add.u32") == 1
    # The ranks (old values) reach the copies from the first copy, through shared memory:
    # each copy's store of its rank then writes the same value.
    assert re.search(r"st\.shared\.b32.*\n(.*\n)*.*bar\.sync.*\n(.*\n)*.*ld\.shared\.b32", ptx), ptx
