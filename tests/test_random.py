"""`randint`, `rand`, `randn` against a Philox 4x32-10 written here with numpy, on the CPU
target, and compiled for the GPU targets; a dropout kernel's mask from them."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import tile


def philox_reference(seed: int, offsets: np.ndarray, rounds: int = 10):
    """Philox 4x32 (Salmon et al.) on counters (offset, 0, 0, 0), key (seed lo, seed hi)."""
    c = [offsets.astype(np.uint64) & 0xFFFFFFFF] + [np.zeros_like(offsets, dtype=np.uint64)] * 3
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)
    mask = np.uint64(0xFFFFFFFF)
    for _ in range(rounds):
        p0, p1 = np.uint64(0xD2511F53) * c[0], np.uint64(0xCD9E8D57) * c[2]
        c = [((p1 >> np.uint64(32)) ^ c[1] ^ k0) & mask, p1 & mask, ((p0 >> np.uint64(32)) ^ c[3] ^ k1) & mask, p0 & mask]
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & mask, (k1 + np.uint64(0xBB67AE85)) & mask
    return [x.astype(np.uint32).view(np.int32) for x in c]


def uniform_reference(i: np.ndarray) -> np.ndarray:
    folded = np.where(i < 0, -(i.astype(np.int64)) - 1, i.astype(np.int64))
    return folded.astype(np.float32) * np.float32(4.6566127342e-10)


@tile.kernel
def random_kernel(seed, ints, uniform, normal, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    tile.store(ints + offs, tile.randint(seed, offs))
    tile.store(uniform + offs, tile.rand(seed, offs))
    tile.store(normal + offs, tile.randn(seed, offs))


@tile.kernel
def dropout_kernel(x, out, n, p, seed, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    v = tile.load(x + offs, mask=offs < n)
    keep = tile.rand(seed, offs) > p
    tile.store(out + offs, tile.where(keep, v / (1 - p), 0.0), mask=offs < n)


@pytest.mark.parametrize("seed", [0, 42, 2**40 + 7])
def test_random_matches_philox(seed):
    n = 1024
    ints, uniform, normal = torch.empty(n, dtype=torch.int32), torch.empty(n), torch.empty(n)
    random_kernel[(n // 256,)](seed, ints, uniform, normal, BLOCK=256)
    i0, i1, _, _ = philox_reference(seed, np.arange(n))
    assert np.array_equal(ints.numpy(), i0)
    u0, u1 = uniform_reference(i0), uniform_reference(i1)
    assert np.array_equal(uniform.numpy(), u0)
    want = np.sqrt(-2 * np.log(np.maximum(u0, 1e-7))) * np.cos(2 * np.pi * u1)
    np.testing.assert_allclose(normal.numpy(), want, rtol=1e-4, atol=1e-4)
    assert 0 <= uniform.min() and uniform.max() < 1 and abs(uniform.mean() - 0.5) < 0.05
    assert abs(normal.mean()) < 0.1 and abs(normal.std() - 1) < 0.1


def test_dropout():
    x = torch.randn(1000)
    out = torch.empty_like(x)
    dropout_kernel[(4,)](x, out, 1000, 0.25, 7, BLOCK=256)
    keep = uniform_reference(philox_reference(7, np.arange(1000))[0]) > 0.25
    torch.testing.assert_close(out, torch.where(torch.from_numpy(keep), x / 0.75, 0.0))


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_random_compiles_for_the_gpu(target, monkeypatch):
    monkeypatch.setenv("TILE_TARGET", target)
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    meta = [torch.empty(1024, dtype=dt, device="meta") for dt in (torch.int32, torch.float32, torch.float32)]
    random_kernel[(4,)](42, *meta, BLOCK=256)


TRITON_SCRIPT = """
import sys, torch, triton, triton.language as tl
sys.path.insert(0, sys.argv[1])
from test_random import random_kernel

@triton.jit
def triton_random(seed, ints, uniform, normal, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(ints + offs, tl.randint(seed, offs))
    tl.store(uniform + offs, tl.rand(seed, offs))
    tl.store(normal + offs, tl.randn(seed, offs))

seed = 2**40 + 7
ours = [torch.empty(512, dtype=torch.int32), torch.empty(512), torch.empty(512)]
theirs = [torch.empty_like(t) for t in ours]
random_kernel[(2,)](seed, *ours, BLOCK=256)
triton_random[(2,)](seed, *theirs, BLOCK=256)
assert torch.equal(ours[0], theirs[0]) and torch.equal(ours[1], theirs[1])
torch.testing.assert_close(ours[2], theirs[2], rtol=1e-5, atol=1e-5)
print("same")
"""


def test_same_numbers_as_triton():
    """Triton's own tl.randint/rand/randn, run by its interpreter on the CPU (in a process of
    its own: TRITON_INTERPRET is read when triton.language is imported), draw the same."""
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    run = subprocess.run([sys.executable, "-c", TRITON_SCRIPT, os.path.dirname(__file__)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "same" in run.stdout, run.stderr[-2000:]
