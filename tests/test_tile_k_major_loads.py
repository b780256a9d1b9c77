"""`tile-k-major-loads` (passes/tile_k_major_loads.py): a dot's B = W.T written the way Triton
code writes it (tutorial 03 with a column-major B, vLLM's fused MoE over [E, N, K] expert
weights): columns wrapped by `% N`, pointers advanced along K, 64-bit offsets. On the CPU
against torch; for sm_90a and sm_80 the B copies are 16-byte cp.async into ring slots (no
element-by-element ld.global, no spills), and the PTX is the column-major block's save the
`% N` itself."""

import re
from collections import Counter

import pytest
import torch

import tile


@tile.kernel
def matmul_w_t(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr, BLOCK_K: tile.constexpr,
    WRAP: tile.constexpr, POINTERS: tile.constexpr,
):
    pid_m = tile.program_id(0)
    pid_n = tile.program_id(1)
    offs_am = (pid_m * BLOCK_M + tile.arange(0, BLOCK_M)) % M
    if WRAP:
        offs_bn = (pid_n * BLOCK_N + tile.arange(0, BLOCK_N)) % N
    else:
        offs_bn = pid_n * BLOCK_N + tile.arange(0, BLOCK_N)
    offs_k = tile.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tile.zeros((BLOCK_M, BLOCK_N), dtype=tile.float32)
    for k in range(0, tile.cdiv(K, BLOCK_K)):
        if POINTERS:
            a = tile.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
            b = tile.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        else:
            kk = k * BLOCK_K + offs_k
            a = tile.load(a_ptr + offs_am[:, None] * stride_am + kk[None, :] * stride_ak, mask=kk[None, :] < K, other=0.0)
            b = tile.load(b_ptr + kk[:, None] * stride_bk + offs_bn[None, :] * stride_bn, mask=kk[:, None] < K, other=0.0)
        acc = tile.dot(a, b, acc)
    offs_cm = pid_m * BLOCK_M + tile.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tile.arange(0, BLOCK_N)
    tile.store(c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn, acc.to(tile.float16),
               mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def run(a, w, block=(32, 32, 32), wrap=True, pointers=True, **options):
    """a @ w.T, w an N x K weight."""
    M, K = a.shape
    N = w.shape[0]
    b = w.T
    c = torch.empty(M, N, dtype=a.dtype, device=a.device)
    BM, BN, BK = block
    matmul_w_t[(tile.cdiv(M, BM), tile.cdiv(N, BN))](
        a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(),
        BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, WRAP=wrap, POINTERS=pointers, **options,
    )
    return c


@pytest.mark.parametrize("wrap,pointers", [(True, True), (True, False), (False, True)])
def test_w_transposed_cpu(wrap, pointers):
    torch.manual_seed(0)
    a, w = torch.randn(50, 72, dtype=torch.float16), torch.randn(40, 72, dtype=torch.float16)
    torch.testing.assert_close(run(a, w, wrap=wrap, pointers=pointers).float(), a.float() @ w.float().T,
                               rtol=1e-2, atol=1e-2)


def _compile(target, wrap, pointers, block=(128, 128, 64), num_warps=4, num_stages=3):
    M = N = K = 4096
    e = lambda *s: torch.empty(s, dtype=torch.float16, device="meta")  # noqa: E731
    BM, BN, BK = block
    return matmul_w_t.compile(e(M, K), e(N, K).T, e(M, N), M, N, K, K, 1, 1, K, N, 1, BLOCK_M=BM, BLOCK_N=BN,
                              BLOCK_K=BK, WRAP=wrap, POINTERS=pointers, num_warps=num_warps, num_stages=num_stages)


def _normal(ptx: str) -> list[str]:
    """The PTX with register numbers and labels erased, without declarations."""
    text = re.sub(r"%(r|rd|p|f|rs|h|hh)\d+", r"%\1", re.sub(r"\$L__BB\d+_\d+", "L", ptx))
    return [line for line in text.splitlines() if not line.strip().startswith(".reg")]


@pytest.mark.parametrize("target,mma", [("sm_90a", "wgmma.mma_async"), ("sm_80", "mma.sync")])
@pytest.mark.parametrize("pointers", [True, False])
def test_w_transposed_copies_16_bytes_at_a_time(gpu_target, target, mma, pointers):
    gpu_target(target)
    launcher = _compile(target, True, pointers)
    ptx = launcher.asm["ptx"]
    assert mma in ptx and "cp.async.cg.shared.global" in ptx
    assert "ld.global" not in ptx  # (B went element by element, not pipelined: 192 ld.global.b16)
    assert launcher.metadata["ptxas"]["spill_stores"] == 0


def test_wrapped_columns_cost_only_the_wrap(gpu_target):
    """The `% N` form and the column-major block (copied transposed by tile-pipeline itself)
    differ only in the remainders."""
    gpu_target("sm_90a")
    wrapped, block = (_normal(_compile("sm_90a", w, False).asm["ptx"]) for w in (True, False))
    import difflib

    diff = [d for d in difflib.unified_diff(block, wrapped, n=0, lineterm="")
            if d[:1] in "+-" and not d.startswith(("+++", "---"))]
    added, removed = Counter(d[1:] for d in diff if d[0] == "+"), Counter(d[1:] for d in diff if d[0] == "-")
    moved = added & removed  # (a line only moved: the same instruction, scheduled elsewhere)
    changed = [line.split()[0] for line in (added - moved) + (removed - moved)]
    assert changed and set(changed) <= {"rem.s32", "add.s32", "setp.lt.u32", "selp.b32"}, changed
