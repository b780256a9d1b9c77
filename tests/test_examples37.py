"""examples/cross_entropy.py and examples/rms_norm_backward.py compiled for sm_90a at the
sizes benchmarks/training_kernels_on_device.py times: nothing spilled, and bf16 rows read
in 16-byte vectors (ld.global.v4). Their CPU checks against torch are the examples' main()
(tests/test_examples.py)."""

import re

import pytest
import torch

import tile  # noqa: F401


def _no_spills(launcher):
    info = launcher.metadata["ptxas"]
    assert info["spill_stores"] == 0 and info["spill_loads"] == 0, info


@pytest.mark.parametrize("in_place", [True, False])
def test_cross_entropy_sm90(gpu_target, in_place):
    import cross_entropy as ce

    gpu_target()
    rows, vocab = 8192, 32000
    logits = torch.empty(rows, vocab, dtype=torch.bfloat16, device="meta")
    grad = logits if in_place else torch.empty_like(logits)
    target = torch.empty(rows, dtype=torch.int64, device="meta")
    loss = torch.empty(rows, dtype=torch.float32, device="meta")
    launcher = ce.cross_entropy_kernel.compile(
        logits,
        logits.stride(0),
        grad,
        grad.stride(0),
        target,
        loss,
        vocab,
        rows,
        -100,
        0.1,
        BLOCK_SIZE=ce.MAX_FUSED_SIZE,
        num_warps=16,
    )
    _no_spills(launcher)
    ptx = launcher.asm["ptx"]
    # Both passes read the row in 16-byte vectors, and the gradient goes out the same way.
    assert len(re.findall(r"ld\.global(\.\w+)*\.v4\.b32", ptx)) >= 2, ptx[-3000:]
    assert re.search(r"st\.global(\.\w+)*\.v4\.b32", ptx), ptx[-3000:]
