"""Compile-only checks of examples/flash_attention.py on sm_90a (no GPU needed): Q, loaded
before the K loop, is copied into shared memory once (tile-pipeline's invariant operands);
K and V come through cp.async rings; P, the scores' softmax in the accumulator's layout,
goes to the second wgmma as its A registers; the scores' row max and row sum are reduced
in the accumulator's layout (registers, then two xor shuffles among the 4 lanes of a row),
not converted to a blocked layout through shared memory first, and the running row
statistics stay in the registers of those rows (`#tile.rows`); nothing spills."""

import math
import re

import torch

import tile  # noqa: F401


def _build(monkeypatch, block_m=128, block_n=64, warps=8, stages=2):
    import flash_attention

    monkeypatch.setenv("TILE_TARGET", "sm_90a")
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    kernel = flash_attention.attention_kernel
    kernel._launchers.clear()
    B, H, N, D = 2, 4, 1024, 128
    q, k, v, out = (torch.empty(B, H, N, D, dtype=torch.bfloat16) for _ in range(4))
    return kernel.compile(q, k, v, out, N, 1.0 / math.sqrt(D), H, *q.stride(), *k.stride(), *v.stride(),
                          *out.stride(), BLOCK_M=block_m, BLOCK_N=block_n, D=D, CAUSAL=False, num_warps=warps,
                          num_stages=stages)


def test_attention_wgmma_operands(monkeypatch):
    launcher = _build(monkeypatch)
    ptx = " ".join(launcher.asm["ptx"].split())
    # Two loops (whole key blocks, then the masked rest), each: S = Q K^T, m64n64k16 from
    # two descriptors, 8 K steps of D = 128 per 64-row block; O += P V, m64n128k16 with A
    # in registers ({four b32}), 4 K steps of BLOCK_N = 64.
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16") == 2 * 8
    rs = "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
    assert ptx.count(rs) == 2 * 4
    assert all(part.split("}", 1)[1].startswith(", {%r") for part in ptx.split(rs)[1:])
    # Q's copy runs once, before the loops (before the first wait), in Q's own blocked
    # layout (it only shares the accumulator's 128 x 128 shape): 16-byte cp.async, as the
    # loops' K and V copies; none narrower.
    assert "cp.async.cg.shared.global" in ptx.split("cp.async.wait_group 0")[0]
    assert "cp.async.ca" not in ptx
    # K, read transposed through its strides, fills a transposed slot along D by cp.async:
    # no element-by-element global loads.
    assert "ld.global" not in ptx
    assert launcher.metadata["ptxas"]["spill_stores"] == 0


def test_attention_rows_reduced_in_place(monkeypatch):
    ptx = _build(monkeypatch).asm["ptx"]
    # Two reductions a K step (max, sum), each of the 2 rows a thread holds of its warp's
    # 16: shuffles by 1 and 2 lanes; no other shuffle (no blocked-layout reduction); two loops.
    assert ptx.count("shfl.sync.bfly.b32") == 2 * 8
    assert len(re.findall(r"shfl\.sync\.bfly\.b32\s+%r\d+, %r\d+, [12], 31, -1;", ptx)) == 2 * 8


def test_attention_row_statistics_in_registers(monkeypatch):
    ptx = _build(monkeypatch).asm["ptx"]
    # Between a K step's first wgmma (the scores) and its last (P V): the softmax, the
    # running max and sum, the rescale, all in registers: no barrier, no shared memory.
    first = ptx.index("m64n64k16")
    step = ptx[first:ptx.index("m64n128k16", first)]
    assert "bar.sync" not in step and "st.shared" not in step and "ld.shared" not in step
    # exp2 is one SFU instruction, as Triton's (32 scores and 2 rescale factors a thread):
    # no range reduction around it; the scale is folded into its argument's fma. The loop
    # over whole key blocks has no mask: no select.
    assert step.count("ex2.approx.ftz.f32") == 34 and "cvt.sat" not in step
    assert step.count("fma.rn.f32") == 34 and "selp" not in step
