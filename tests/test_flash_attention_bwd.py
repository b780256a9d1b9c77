"""examples/flash_attention_bwd.py: the backward's kernels compiled for sm_90a at B=4, H=32,
N=4096, bf16 (the shape benchmarks/attention_bwd_on_device.py times), D = 128 and 64, at the
block sizes `attention_backward` picks: every dot a wgmma (no mma.sync), nothing spilled,
K/V (dK/dV kernel) and Q, dO (streamed) copied by cp.async, not element by element; the
forward with its log-sum-exp and GQA likewise. The CPU checks against torch autograd are
the example's main() (tests/test_examples.py); here the GQA and dQ-by-atomics variants
once more on odd sizes with strided inputs."""

import math
import os
import re
import sys

import pytest
import torch

import tile  # noqa: F401

# (the Triton twin's benchmark: attention_bwd_on_device.fab_twin)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

B, H, N = 4, 32, 4096


def _tensors(D, *shapes_dtypes):
    return [torch.empty(*shape, dtype=dtype, device="meta") for shape, dtype in shapes_dtypes]


def _dkdv_args(D, causal, dq_atomic=False):
    """bwd_dkdv's arguments and options as attention_backward gives them at (B, H, N, D)."""
    import flash_attention_bwd as fab

    bm, bn, warps = (fab.DKDV_ATOMIC_BLOCKS if dq_atomic else fab.DKDV_BLOCKS)[D]
    q, k, v, do, dk, dv = _tensors(D, *[((B, H, N, D), torch.bfloat16)] * 6)
    dq, lse, delta = _tensors(D, ((B, H, N, D), torch.float32 if dq_atomic else torch.bfloat16),
                              ((B, H, N), torch.float32), ((B, H, N), torch.float32))
    return ((q, k, v, do, dk, dv, dq, lse, delta, N, 1 / math.sqrt(D), H, 1, *q.stride(), *k.stride(), *v.stride(),
             *do.stride(), *dk.stride(), *dv.stride(), *dq.stride()),
            dict(BLOCK_M=bm, BLOCK_N=bn, D=D, CAUSAL=causal, DQ_ATOMIC=dq_atomic, num_warps=warps))


def _dq_args(D, causal):
    """bwd_dq's arguments and options as attention_backward gives them at (B, H, N, D)."""
    import flash_attention_bwd as fab

    bm, bn, warps = fab.DQ_BLOCKS
    q, k, v, do, dq = _tensors(D, *[((B, H, N, D), torch.bfloat16)] * 5)
    lse, delta = _tensors(D, ((B, H, N), torch.float32), ((B, H, N), torch.float32))
    return ((q, k, v, do, dq, lse, delta, N, 1 / math.sqrt(D), H, 1,
             *q.stride(), *k.stride(), *v.stride(), *do.stride(), *dq.stride()),
            dict(BLOCK_M=bm, BLOCK_N=bn, D=D, CAUSAL=causal, num_warps=warps))


def _compile_dkdv(D, causal, dq_atomic=False):
    import flash_attention_bwd as fab

    args, meta = _dkdv_args(D, causal, dq_atomic)
    return fab.bwd_dkdv.compile(*args, **meta)


def _compile_dq(D, causal):
    import flash_attention_bwd as fab

    args, meta = _dq_args(D, causal)
    return fab.bwd_dq.compile(*args, **meta)


def _check(launcher, wgmma_shapes):
    ptx = launcher.asm["ptx"]
    assert launcher.metadata["ptxas"]["spill_stores"] == 0, launcher.metadata["ptxas"]
    assert launcher.metadata["ptxas"]["spill_loads"] == 0, launcher.metadata["ptxas"]
    assert "mma.sync" not in ptx
    for shape in wgmma_shapes:
        assert f"wgmma.mma_async.sync.aligned.{shape}.f32.bf16.bf16" in ptx
    # The 16-bit tiles come by cp.async; only the f32 rows (LSE, delta) by plain loads.
    assert "cp.async.cg.shared.global" in ptx and "ld.global.b16" not in ptx
    return ptx


@pytest.mark.parametrize("D, causal", [(128, False), (128, True), (64, False)])
def test_dkdv_kernel_wgmma_no_spills(gpu_target, D, causal):
    gpu_target()
    launcher = _compile_dkdv(D, causal)
    # 128 keys a program over 2 warpgroups: S^T = K Q^T, dP^T = V dO^T (m64 x BLOCK_M queries),
    # dV += P^T dO and dK += dS^T Q (m64 x D, P^T and dS^T as A registers).
    bm = 32 if D == 128 else 64
    ptx = _check(launcher, [f"m64n{bm}k16", f"m64n{D}k16"])
    # In each loop over query blocks (2, or 3 when causal), dV and dK take BLOCK_M / 16 K steps
    # each with A (P^T, dS^T) in registers ({four b32}); S^T, dP^T read both operands from shared.
    rs = f"wgmma.mma_async.sync.aligned.m64n{D}k16.f32.bf16.bf16 {{"
    in_registers = [part.split("}", 1)[1].startswith(", {%r") for part in " ".join(ptx.split()).split(rs)[1:]]
    assert sum(in_registers) == (3 if causal else 2) * 2 * (bm // 16)
    assert launcher.metadata["ptxas"]["registers"] <= 255


def test_dkdv_kernel_dq_atomics(gpu_target):
    gpu_target()
    launcher = _compile_dkdv(64, True, dq_atomic=True)
    assert launcher.metadata["ptxas"]["spill_stores"] == 0, launcher.metadata["ptxas"]
    ptx = launcher.asm["ptx"]
    # dQ's blocks are added relaxed (a sum needs no ordering): no acq_rel atomics or fences;
    # each thread's runs of 4 consecutive f32 in one vector atom (sm_90)
    assert re.search(r"\.relaxed\.gpu\.global\.add\.v4\.f32", ptx) and "acq_rel" not in ptx and "fence.acq_rel" not in ptx
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16" in ptx


@pytest.mark.parametrize("D, causal", [(128, False), (128, True), (64, False)])
def test_dq_kernel_wgmma_no_spills(gpu_target, D, causal):
    gpu_target()
    # 128 queries a program: S = Q K^T, dP = dO V^T (m64n64), dQ += dS K (m64 x D)
    _check(_compile_dq(D, causal), ["m64n64k16", f"m64n{D}k16"])


def test_preprocess_and_forward_with_lse_and_gqa(gpu_target):
    import flash_attention
    import flash_attention_bwd as fab

    gpu_target()
    D = 128
    o, do = _tensors(D, *[((B, H, N, D), torch.bfloat16)] * 2)
    (delta,) = _tensors(D, ((B, H, N), torch.float32))
    pre = fab.bwd_preprocess.compile(o, do, delta, N, H, *o.stride(), *do.stride(), BLOCK_M=64, D=D)
    assert pre.metadata["ptxas"]["spill_stores"] == 0
    # The forward at the codegen test's config, 8 KV heads, writing the LSE: still wgmma, no spills.
    q, out = _tensors(D, *[((B, H, N, D), torch.bfloat16)] * 2)
    k, v = _tensors(D, *[((B, H // 4, N, D), torch.bfloat16)] * 2)
    fwd = flash_attention.attention_kernel.compile(
        q, k, v, out, N, 1 / math.sqrt(D), H, *q.stride(), *k.stride(), *v.stride(), *out.stride(),
        BLOCK_M=128, BLOCK_N=64, D=D, CAUSAL=True, lse=delta, group=4, num_warps=8, num_stages=2)
    assert fwd.metadata["ptxas"]["spill_stores"] == 0
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16" in fwd.asm["ptx"]
    # The LSE, (m + log2 l) * ln 2, stored as f32 once per row.
    assert "0f3F317218" in fwd.asm["ptx"] and "st.global.b32" in fwd.asm["ptx"]


@pytest.mark.parametrize("dq_atomic", [False, True])
def test_gradients_gqa_strided(dq_atomic):
    import flash_attention_bwd as fab

    torch.manual_seed(2)
    # MQA (3 query heads, 1 KV head), 77 queries, Q as a (B, N, H, D) view, bf16, causal
    q = torch.randn(1, 77, 3, 64, dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
    k, v = (torch.randn(1, 1, 77, 64, dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
    do = torch.randn(1, 3, 77, 64, dtype=torch.bfloat16)
    fab.attention(q, k, v, True, 0.1, dq_atomic).backward(do)
    got = (q.grad, k.grad, v.grad)
    qf, kf, vf = (t.detach().float().requires_grad_() for t in (q, k, v))
    fab.reference(qf, kf, vf, True, 0.1).backward(do.float())
    for g, w in zip(got, (qf.grad, kf.grad, vf.grad)):
        torch.testing.assert_close(g.float(), w, rtol=3e-2, atol=3e-2)


def test_forward_head_dim_256(gpu_target):
    """D = 256: the forward (with its LSE) matches torch on the CPU and compiles for sm_90a at
    64 x 64 blocks, 4 warps, without spills (the backward's kernels at D = 256 spill at every
    block size tried)."""
    import flash_attention

    torch.manual_seed(3)
    q, k, v = (torch.randn(1, 2, 40, 256, dtype=torch.float16) for _ in range(3))
    out, lse = flash_attention.attention(q, k, v, False, return_lse=True)
    torch.testing.assert_close(out, flash_attention.reference(q, k, v), rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(lse, flash_attention.reference_lse(q, k, v), rtol=1e-3, atol=1e-3)
    gpu_target()
    q, k, v, out = _tensors(256, *[((B, H, N, 256), torch.bfloat16)] * 4)
    (lse,) = _tensors(256, ((B, H, N), torch.float32))
    fwd = flash_attention.attention_kernel.compile(
        q, k, v, out, N, 1 / 16, H, *q.stride(), *k.stride(), *v.stride(), *out.stride(),
        BLOCK_M=64, BLOCK_N=64, D=256, CAUSAL=False, lse=lse, num_warps=4, num_stages=2)
    assert fwd.metadata["ptxas"]["spill_stores"] == 0
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in fwd.asm["ptx"]


TWIN_SCRIPT = """
sys.path.insert(0, os.path.join(os.path.dirname(sys.argv[1]), "examples"))
import flash_attention_bwd as fab
from attention_bwd_on_device import fab_twin
twin = fab_twin()
torch.manual_seed(4)
# GQA (4 query heads on 2), 50 queries (not a multiple of any block), K and V strided views
q = torch.randn(1, 4, 50, 16)
k, v = (torch.randn(1, 50, 2, 16).transpose(1, 2) for _ in range(2))
do = torch.randn(1, 4, 50, 16)
for causal in (False, True):
    qf, kf, vf = (t.clone().requires_grad_() for t in (q, k, v))
    o = fab.reference(qf, kf, vf, causal)
    o.backward(do)
    s = (q @ k.repeat_interleave(2, 1).transpose(-1, -2)) * 0.25
    if causal:
        s = s.masked_fill(torch.ones(50, 50, dtype=torch.bool).triu(1), float("-inf"))
    lse = torch.logsumexp(s, -1).contiguous()
    # (not bf16: the interpreter's tl.dot multiplies bf16 bit patterns, triton-lang/triton#11584)
    for dtype, tol in ((torch.float32, 1e-4), (torch.float16, 2e-2)):
        for dq_atomic in (False, True):
            got = fab.attention_backward(*(t.to(dtype) for t in (q, k, v, o.detach(), do)), lse, causal,
                                         dq_atomic=dq_atomic, dkdv_config=(16, 32, 4), dq_config=(32, 16, 4),
                                         kernels=twin)
            for name, g, w in zip(("dq", "dk", "dv"), got, (qf.grad, kf.grad, vf.grad)):
                assert g.dtype == dtype
                torch.testing.assert_close(g.float(), w, rtol=tol, atol=tol,
                                           msg=lambda m: f"{causal} {dtype} {dq_atomic} {name}: {m}")
print("same")
"""


def test_triton_twin_matches_torch_in_the_interpreter():
    """The backward's kernels renamed to Triton (what benchmarks/attention_bwd_on_device.py times
    beside tile's, with LOG2E and key_range carried along) run by Triton's interpreter through
    `attention_backward(kernels=...)`: dQ, dK, dV match torch autograd, causal and not, both dQ ways."""
    pytest.importorskip("triton")
    from as_triton import run_in_triton

    run = run_in_triton(TWIN_SCRIPT)
    assert run.returncode == 0 and "same" in run.stdout, run.stderr[-2000:]


@pytest.mark.parametrize("kernel, make_args", [("bwd_dkdv", _dkdv_args), ("bwd_dq", _dq_args)])
def test_triton_twin_compiles_for_sm90(kernel, make_args):
    """The twin as the GPU benchmark runs it (JIT-compiled there), compiled here by Triton for
    sm_90a at D = 128 at the same blocks and num_stages: every dot a wgmma, nothing spilled (so
    a gap between the two is not the twin's register pressure)."""
    pytest.importorskip("triton")
    from as_triton import triton_sm90
    from attention_bwd_on_device import STAGES, fab_twin

    args, meta = make_args(128, False)
    got = triton_sm90(getattr(fab_twin(), kernel), args, meta, num_stages=STAGES)
    assert got["spill_stores"] == 0 and got["spill_loads"] == 0, got
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16" in got["ptx"] and "mma.sync" not in got["ptx"]
