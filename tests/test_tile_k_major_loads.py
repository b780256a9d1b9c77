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


# Attention's backward as Triton's tutorial 06 writes it: qT (and dQ's kT, vT) loaded with the
# head dim contiguous down the rows, unmasked, through 64-bit pointers advanced each step;
# qT also read transposed by a second dot. Each is a column-major block that tile-pipeline
# copies transposed (16-byte cp.async), the advance cloned per copy. They went element by
# element (320 ld.global.b16 in the tutorial's kernel, 2764 bytes of spills; Triton 2004).


@tile.kernel
def dkdv_pointers(Q, K, V, DO, M, Di, DK, DV, stride_tok, stride_d, N_CTX,
                  BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr, HEAD_DIM: tile.constexpr):
    bh = tile.program_id(1)
    adj = (bh * N_CTX * stride_tok).to(tile.int64)
    Q += adj
    K += adj
    V += adj
    DO += adj
    DK += adj
    DV += adj
    M += bh * N_CTX
    Di += bh * N_CTX
    offs_n = tile.program_id(0) * BLOCK_N + tile.arange(0, BLOCK_N)
    offs_k = tile.arange(0, HEAD_DIM)
    k = tile.load(K + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d)
    v = tile.load(V + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d)
    offs_m = tile.arange(0, BLOCK_M)
    qT_ptrs = Q + offs_m[None, :] * stride_tok + offs_k[:, None] * stride_d
    do_ptrs = DO + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d
    dk = tile.zeros([BLOCK_N, HEAD_DIM], dtype=tile.float32)
    dv = tile.zeros([BLOCK_N, HEAD_DIM], dtype=tile.float32)
    curr_m = 0
    for _ in range(N_CTX // BLOCK_M):
        qT = tile.load(qT_ptrs)
        offs_m = curr_m + tile.arange(0, BLOCK_M)
        m = tile.load(M + offs_m)
        pT = tile.math.exp2(tile.dot(k, qT) - m[None, :])
        do = tile.load(do_ptrs)
        dv += tile.dot(pT.to(tile.float16), do)
        d = tile.load(Di + offs_m)
        dpT = tile.dot(v, tile.trans(do))
        dsT = (pT * (dpT - d[None, :])).to(tile.float16)
        dk += tile.dot(dsT, tile.trans(qT))
        curr_m += BLOCK_M
        qT_ptrs += BLOCK_M * stride_tok
        do_ptrs += BLOCK_M * stride_tok
    out = offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d
    tile.store(DK + out, dk.to(tile.float16))
    tile.store(DV + out, dv.to(tile.float16))


@tile.kernel
def dq_pointers(Q, K, V, DO, M, Di, DQ, stride_tok, stride_d, N_CTX,
                BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr, HEAD_DIM: tile.constexpr):
    bh = tile.program_id(1)
    adj = (bh * N_CTX * stride_tok).to(tile.int64)
    offs_m = tile.program_id(0) * BLOCK_M + tile.arange(0, BLOCK_M)
    offs_k = tile.arange(0, HEAD_DIM)
    rows = adj + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d
    q = tile.load(Q + rows)
    do = tile.load(DO + rows)
    m = tile.load(M + bh * N_CTX + offs_m)[:, None]
    d = tile.load(Di + bh * N_CTX + offs_m)
    offs_n = tile.arange(0, BLOCK_N)
    kT_ptrs = K + adj + offs_n[None, :] * stride_tok + offs_k[:, None] * stride_d
    vT_ptrs = V + adj + offs_n[None, :] * stride_tok + offs_k[:, None] * stride_d
    dq = tile.zeros([BLOCK_M, HEAD_DIM], dtype=tile.float32)
    for _ in range(N_CTX // BLOCK_N):
        kT = tile.load(kT_ptrs)
        vT = tile.load(vT_ptrs)
        p = tile.math.exp2(tile.dot(q, kT) - m)
        dp = tile.dot(do, vT)
        ds = (p * (dp - d[:, None])).to(tile.float16)
        dq += tile.dot(ds, tile.trans(kT))
        kT_ptrs += BLOCK_N * stride_tok
        vT_ptrs += BLOCK_N * stride_tok
    tile.store(DQ + rows, dq.to(tile.float16))


def _attention_grads(q, k, v, do):
    """(M, Di, dq, dk, dv) of softmax2(q @ k.T) @ v: M the rows' log2 sum of exp2, Di = rowsum(o * do)."""
    q, k, v, do = (x.double() for x in (q, k, v, do))
    s = q @ k.transpose(-1, -2)
    m = torch.logsumexp(s * 0.6931471805599453, -1) / 0.6931471805599453
    p = torch.exp2(s - m[..., None])
    o = p @ v
    di = (o * do).sum(-1)
    ds = p * (do @ v.transpose(-1, -2) - di[..., None])
    return m.float(), di.float(), ds @ k, ds.transpose(-1, -2) @ q, p.transpose(-1, -2) @ do


@pytest.mark.parametrize("strided", [False, True])
def test_attention_backward_pointer_style_cpu(strided):
    torch.manual_seed(0)
    BH, N, D = 2, 64, 32
    if strided:  # (a view of a wider buffer: the token stride is not the head dim)
        q, k, v, do = (torch.randn(BH, N, 2 * D, dtype=torch.float16)[..., :D] * 0.5 for _ in range(4))
    else:
        q, k, v, do = (torch.randn(BH, N, D, dtype=torch.float16) * 0.5 for _ in range(4))
    m, di, rq, rk, rv = _attention_grads(q, k, v, do)
    dq, dk, dv = (torch.empty_like(q) for _ in range(3))
    dkdv_pointers[(N // 32, BH)](q, k, v, do, m, di, dk, dv, q.stride(1), q.stride(2), N,
                                 BLOCK_M=16, BLOCK_N=32, HEAD_DIM=D)
    dq_pointers[(N // 32, BH)](q, k, v, do, m, di, dq, q.stride(1), q.stride(2), N,
                               BLOCK_M=32, BLOCK_N=16, HEAD_DIM=D)
    for got, ref in ((dq, rq), (dk, rk), (dv, rv)):
        torch.testing.assert_close(got.float(), ref.float(), atol=2e-2, rtol=2e-2)


def _compile_attention_backward(kernel, block):
    BH, N, D = 8, 1024, 64
    e = lambda *s: torch.empty(s, dtype=torch.float16, device="meta")  # noqa: E731
    f = lambda *s: torch.empty(s, dtype=torch.float32, device="meta")  # noqa: E731
    outs = (e(BH, N, D),) * (2 if kernel is dkdv_pointers else 1)
    return kernel.compile(e(BH, N, D), e(BH, N, D), e(BH, N, D), e(BH, N, D), f(BH, N), f(BH, N), *outs,
                          D, 1, N, BLOCK_M=block[0], BLOCK_N=block[1], HEAD_DIM=D, num_warps=4, num_stages=3)


@pytest.mark.parametrize("kernel,block", [(dkdv_pointers, (32, 64)), (dq_pointers, (64, 32))],
                         ids=["dkdv", "dq"])
def test_attention_backward_pointer_style_copies(gpu_target, kernel, block):
    gpu_target("sm_90a")
    launcher = _compile_attention_backward(kernel, block)
    ptx = launcher.asm["ptx"]
    assert "wgmma.mma_async" in ptx
    assert not re.search(r"ld\.global(\.nc)?\.b16", ptx)  # (no element-by-element copies)
    copies = re.findall(r"cp\.async\.cg\.shared\.global \[[^\]]+\], \[[^\]]+\], 16", ptx)
    # the two tiles loaded a step, at three places (two stages ahead before the loop, one in it):
    # a 32 x 64 fp16 tile is 2 16-byte copies a thread of 128
    assert len(copies) >= 3 * 2 * 2
    assert launcher.metadata["ptxas"]["spill_stores"] == 0


@tile.kernel
def chunk_state_like(x_ptr, b_ptr, out_ptr, hdim, dstate, chunk, seqlen, stride_x_t, stride_b_t,
                     BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr, BLOCK_K: tile.constexpr):
    """mamba2's chunk state, reduced: out = x[c]^T @ b[c] over chunk c's steps, x (T, hdim)
    read as its column-major transpose, the steps bounded by a limit the body subtracts k from
    (`offs_k < chunk_limit - k`: a bound the loop computes, for the copies ahead)."""
    c = tile.program_id(0)
    offs_m = tile.arange(0, BLOCK_M)
    offs_n = tile.arange(0, BLOCK_N)
    offs_k = tile.arange(0, BLOCK_K)
    x_ptrs = x_ptr + c * chunk * stride_x_t + offs_m[:, None] + offs_k[None, :] * stride_x_t
    b_ptrs = b_ptr + c * chunk * stride_b_t + offs_k[:, None] * stride_b_t + offs_n[None, :]
    chunk_limit = min(chunk, seqlen - c * chunk)
    acc = tile.zeros((BLOCK_M, BLOCK_N), dtype=tile.float32)
    for k in range(0, chunk_limit, BLOCK_K):
        x = tile.load(x_ptrs, mask=(offs_m[:, None] < hdim) & (offs_k[None, :] < chunk_limit - k), other=0.0)
        b = tile.load(b_ptrs, mask=(offs_k[:, None] < chunk_limit - k) & (offs_n[None, :] < dstate), other=0.0)
        acc += tile.dot(x, b)
        x_ptrs += BLOCK_K * stride_x_t
        b_ptrs += BLOCK_K * stride_b_t
    tile.store(out_ptr + c * hdim * dstate + offs_m[:, None] * dstate + offs_n[None, :], acc,
               mask=(offs_m[:, None] < hdim) & (offs_n[None, :] < dstate))


def test_column_major_block_bounded_by_a_loop_value(gpu_target):
    """On the CPU against torch (100 steps in chunks of 32: the last one 4); for sm_90a the
    column-major x copied transposed ahead (it was a verifier error, 'operand #0 does not
    dominate this use': the copies ahead read `chunk_limit - k` from inside the body's fusion group)."""
    torch.manual_seed(0)
    T, hdim, dstate, chunk = 100, 24, 20, 32
    x, b = torch.randn(T, hdim, dtype=torch.float16), torch.randn(T, dstate, dtype=torch.float16)
    n = tile.cdiv(T, chunk)
    out = torch.empty(n, hdim, dstate)
    chunk_state_like[(n,)](x, b, out, hdim, dstate, chunk, T, hdim, dstate, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16)
    pad = lambda t: torch.nn.functional.pad(t.float(), (0, 0, 0, n * chunk - T)).reshape(n, chunk, -1)  # noqa: E731
    torch.testing.assert_close(out, pad(x).transpose(1, 2) @ pad(b), rtol=1e-3, atol=1e-3)
    gpu_target("sm_90a")
    e = lambda *s: torch.empty(s, dtype=torch.float16, device="meta")  # noqa: E731
    launcher = chunk_state_like.compile(e(4096, 64), e(4096, 128), torch.empty(16, 64, 128, device="meta"),
                                        64, 128, 256, 4096, 64, 128,
                                        BLOCK_M=64, BLOCK_N=128, BLOCK_K=32, num_stages=3)
    ptx = launcher.asm["ptx"]
    assert "wgmma.mma_async" in ptx and "cp.async.cg.shared.global" in ptx and "ld.global" not in ptx
