"""examples/cross_entropy.py and examples/rms_norm_backward.py (forward, backward with dW by partial rows
or by atomics, with and without a weight) compiled for sm_90a at the sizes
benchmarks/training_kernels_on_device.py times: nothing spilled, bf16 rows read in 16-byte
vectors. On the CPU: strided views, and the atomic dW kernel retuned (its `reset_to_zero`);
the examples' main() (tests/test_examples.py) checks the rest against torch."""

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


def test_rms_norm_atomic_dw_retuned_cpu(monkeypatch):
    """The autotuned atomic dW kernel timed afresh (no remembered choice): each config's trial
    launches add into dW, so only `reset_to_zero` keeps the answer right."""
    import rms_norm_backward as rn

    monkeypatch.setattr(rn.rms_norm_backward_atomic_kernel, "cache_results", False)
    monkeypatch.setattr(rn.rms_norm_backward_atomic_kernel, "cache", {})
    torch.manual_seed(1)
    rn._check(13, 300, torch.float32, True, True, "cpu")


@pytest.mark.parametrize("has_weight", [True, False])
@pytest.mark.parametrize("atomic_dw", [False, True])
def test_rms_norm_sm90(gpu_target, has_weight, atomic_dw):
    import rms_norm_backward as rn

    gpu_target()
    rows, cols, programs = 8192, 4096, 132
    block, warps = rn._block(cols)
    X, dY, dX, Y = (torch.empty(rows, cols, dtype=torch.bfloat16, device="meta") for _ in range(4))
    W = torch.empty(cols, dtype=torch.bfloat16, device="meta") if has_weight else None
    RSTD = torch.empty(rows, dtype=torch.float32, device="meta")
    dW = torch.empty((cols,) if atomic_dw else (programs, cols), dtype=torch.float32, device="meta")
    forward = rn.rms_norm_forward_kernel.compile(
        Y,
        Y.stride(0),
        X,
        X.stride(0),
        W,
        RSTD,
        cols,
        1e-6,
        HAS_WEIGHT=has_weight,
        casting_mode=rn._str_to_casting_mode["llama"],
        BLOCK_SIZE=block,
        num_warps=warps,
    )
    backward = rn.rms_norm_backward_kernel.compile(
        dY,
        dY.stride(0),
        dX,
        dX.stride(0),
        X,
        X.stride(0),
        W,
        RSTD,
        dW if has_weight else None,
        0 if atomic_dw else dW.stride(0),
        rows,
        cols,
        -(-rows // programs),
        HAS_WEIGHT=has_weight,
        ATOMIC_DW=atomic_dw,
        BLOCK_SIZE=block,
        num_warps=warps,
    )
    for launcher in (forward, backward):
        _no_spills(launcher)
    # bf16 rows in 16-byte vectors; where the backward also holds the f32 dW row, that row's
    # layout (4 f32, 16 bytes, a thread) is the whole kernel's, so its bf16 rows go 8 bytes at a time.
    width = "v2" if has_weight else "v4"
    for launcher, vec in ((forward, "v4"), (backward, width)):
        ptx = launcher.asm["ptx"]
        assert re.search(rf"ld\.global(\.\w+)*\.{vec}\.b32", ptx), ptx[-3000:]
        assert re.search(rf"st\.global(\.\w+)*\.{vec}\.b32", ptx), ptx[-3000:]
    # the dW row's runs of 4 f32 go into dW in one vector atom each
    atomics = re.findall(r"\b(?:atom|red)(?:\.\w+)*\.global\.add(\.v\d)?\.f32", backward.asm["ptx"])
    assert atomics == ([".v4"] * 2 if has_weight and atomic_dw else []), atomics


def test_cross_entropy_strided_cpu():
    """Logits a column slice of a wider buffer (row stride > V), the gradient into a buffer of
    another row stride, an odd vocabulary over several blocks."""
    import cross_entropy as ce

    torch.manual_seed(2)
    rows, vocab = 7, 4500
    logits = torch.randn(rows, vocab + 24)[:, 3:vocab + 3]
    grad = torch.zeros(rows, vocab + 40)[:, :vocab]
    target = torch.randint(0, vocab, (rows,))
    target[2] = -100
    ref = logits.clone().requires_grad_()
    want = torch.nn.functional.cross_entropy(ref, target, label_smoothing=0.2)
    want.backward()
    loss, got = ce.cross_entropy_forward_backward(logits, target, label_smoothing=0.2, grad=grad)
    assert got is grad
    torch.testing.assert_close(loss, want.detach())
    torch.testing.assert_close(grad, ref.grad)


def test_rms_norm_strided_cpu():
    """X a column slice of a wider buffer (its row stride not the row's length)."""
    import rms_norm_backward as rn

    torch.manual_seed(3)
    X = torch.randn(11, 200)[:, 5:182]
    W = torch.randn(177)
    dY = torch.randn(11, 177)
    Xr, Wr = X.clone().requires_grad_(), W.clone().requires_grad_()
    rn.reference(Xr, Wr).backward(dY)
    Y, RSTD = rn.rms_norm_forward(X, W)
    dX, dW = rn.rms_norm_backward(dY, X, W, RSTD, n_programs=3)
    torch.testing.assert_close(Y, rn.reference(X, W))
    torch.testing.assert_close(dX, Xr.grad)
    torch.testing.assert_close(dW, Wr.grad, rtol=1e-4, atol=1e-4)
