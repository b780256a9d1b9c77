"""Bool tensors in global memory (torch's bools are bytes): a tile of them loaded and stored
on the CPU against torch (a ragged tail, a view at an odd offset, `other=True`), and on sm_90a in
whole words, 4 bytes a run where the layout holds 4 a thread, as tile moves int8 tiles and Triton's
compile moves bools (flash-attn's dropout mask went as one `st.global.b8` per element)."""

import re
from collections import Counter

import pytest
import torch

import tile


@tile.jit
def threshold_kernel(x, keep, out, n, p, BLOCK: tile.constexpr):
    """keep = x > p."""
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    v = tile.load(x + offs, mask=mask, other=0.0)
    tile.store(keep + offs, v > p, mask=mask)


@tile.jit
def select_kernel(keep, x, out, n, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    k = tile.load(keep + offs, mask=mask, other=True)
    v = tile.load(x + offs, mask=mask, other=0.0)
    tile.store(out + offs, tile.where(k, v, -1.0), mask=mask)


def test_cpu_against_torch():
    torch.manual_seed(0)
    n = 1000
    x = torch.randn(n)
    buffer = torch.ones(n + 8, dtype=torch.bool)
    keep = buffer[3:3 + n]  # (at an odd offset: its neighbours stay True)
    threshold_kernel[(tile.cdiv(n, 256),)](x, keep, None, n, 0.25, BLOCK=256)
    assert torch.equal(keep, x > 0.25) and bool(buffer[:3].all()) and bool(buffer[3 + n:].all())
    out = torch.empty(n)
    select_kernel[(tile.cdiv(n, 256),)](keep, x, out, n, BLOCK=256)
    assert torch.equal(out, torch.where(x > 0.25, x, -1.0))


def _forms(ptx):
    return Counter(re.findall(r"\b(?:ld|st)\.global[\w.:]*", ptx))


@pytest.mark.parametrize("block,warps", [(1024, 4), (4096, 8)])
def test_sm90a_moves_whole_words(block, warps, gpu_target):
    """The f32 data's layout holds runs of 4 a thread: the bools go 4 bytes at a time."""
    want = "b32"
    gpu_target("sm_90a")
    m = lambda *s, dtype=torch.float32: torch.empty(s, dtype=dtype, device="meta")  # noqa: E731
    stored = _forms(threshold_kernel.compile(m(8192), m(8192, dtype=torch.bool), None, 8192, 0.5,
                                             BLOCK=block, num_warps=warps).asm["ptx"])
    assert "st.global.b8" not in stored and f"st.global.{want}" in stored, stored
    loaded = _forms(select_kernel.compile(m(8192, dtype=torch.bool), m(8192), m(8192), 8192,
                                          BLOCK=block, num_warps=warps).asm["ptx"])
    assert "ld.global.b8" not in loaded and f"ld.global.{want}" in loaded, loaded
