"""Kernels whose tiles overflow the registers compile where Triton's do, spilling with a
warning that names the spill bytes, instead of being refused; and a gather of a large row's
weights per channel (GroupNorm) is not staged whole through shared memory."""

import pytest
import torch

import tile
from tile import SpillWarning


@tile.kernel
def jsd_kernel(x, y, out, n, BLOCK: tile.constexpr):
    """A Jensen-Shannon divergence of a row of log-probabilities, as a library writes it at 4 warps."""
    row = tile.program_id(0)
    offs = tile.arange(0, BLOCK)
    a = tile.load(x + row * n + offs, mask=offs < n, other=0.0)
    b = tile.load(y + row * n + offs, mask=offs < n, other=0.0)
    pa, pb = tile.exp(a), tile.exp(b)
    log_m = tile.log(0.5 * (pa + pb))
    tile.store(out + row * n + offs, 0.5 * (pa * (a - log_m) + pb * (b - log_m)), mask=offs < n)


def test_a_kernel_past_the_registers_compiles_with_a_spill_warning(gpu_target):
    gpu_target()
    x = torch.empty(4, 32000, device="meta")
    with pytest.warns(SpillWarning, match=r"jsd_kernel \(sm_90a, 4 warps\) spills: [1-9]\d* bytes of spill stores"):
        launcher = jsd_kernel.compile(x, x, x, 32000, BLOCK=32768, num_warps=4)
    assert launcher.metadata["ptxas"]["spill_stores"] > 0


def test_jsd_on_cpu():
    a = torch.log_softmax(torch.randn(3, 1000), dim=1)
    b = torch.log_softmax(torch.randn(3, 1000), dim=1)
    out = torch.empty(3, 1000)
    jsd_kernel[(3,)](a, b, out, 1000, BLOCK=1024)
    m = torch.log(0.5 * (a.exp() + b.exp()))
    torch.testing.assert_close(out, 0.5 * (a.exp() * (a - m) + b.exp() * (b - m)))


@tile.kernel
def group_norm_kernel(X, Y, W, B, hidden_per_channel, channels_per_group, n_groups, eps, BLOCK: tile.constexpr):
    batch = tile.program_id(0)
    group = tile.program_id(1)
    n = hidden_per_channel * channels_per_group
    base = (batch * n_groups + group) * n
    offs = tile.arange(0, BLOCK)
    mask = offs < n
    x = tile.load(X + base + offs, mask=mask, other=0.0)
    mean = tile.sum(x) / n
    centered = tile.where(mask, x - mean, 0.0)
    rstd = tile.rsqrt(tile.sum(centered * centered) / n + eps)
    channel = group * channels_per_group + offs // hidden_per_channel
    w = tile.load(W + channel, mask=mask)
    b = tile.load(B + channel, mask=mask)
    tile.store(Y + base + offs, centered * rstd * w + b, mask=mask)


def test_group_norm_65536_row_compiles_for_sm90a(gpu_target):
    """Its W and B, gathered per channel, were converted through 256 KiB of shared memory
    ('tile too large'): now read where they are used (each thread's elements share a channel)."""
    gpu_target()
    x = torch.empty(2, 32, 16, 4096, device="meta")
    w = torch.empty(32, device="meta")
    with pytest.warns(SpillWarning):
        launcher = group_norm_kernel.compile(x, x, w, w, 4096, 16, 2, 1e-5, BLOCK=65536, num_warps=32)
    assert launcher.metadata["shared_bytes"] <= 1024  # (the reductions' scratch, no staged row)


def test_group_norm_on_cpu():
    x = torch.randn(2, 6, 5, 7)  # 3 groups of 2 channels of 35
    w, b = torch.randn(6), torch.randn(6)
    y = torch.empty_like(x)
    group_norm_kernel[(2, 3)](x, y, w, b, 35, 2, 3, 1e-5, BLOCK=128)
    torch.testing.assert_close(y, torch.nn.functional.group_norm(x, 3, w, b, eps=1e-5), atol=1e-5, rtol=1e-5)
