"""FlashAttention backward (FA2's algorithm) and an autograd wrapper around the forward of
examples/flash_attention.py.

With P = softmax(S), S = Q K^T * sm_scale, and the forward's log-sum-exp per query row
(LSE), P is rebuilt block by block as exp2(S * log2(e) - LSE * log2(e)), and
    dV = P^T dO,  dP = dO V^T,  dS = P * (dP - delta),  delta = rowsum(dO * O),
    dQ = sm_scale * dS K,  dK = sm_scale * dS^T Q.
Three kernels: `bwd_preprocess` (delta, f32); `bwd_dkdv`, one program per BLOCK_N keys of
one (batch, KV head), looping over the query blocks of every query head that reads that KV
head (GQA: their dK, dV summed in f32 registers, written once); and the dQ side, either
`bwd_dq`, one program per BLOCK_M queries looping over key blocks (the default:
deterministic, no f32 buffer), or, with `dq_atomic=True`, `bwd_dkdv` adding each block's
dQ into an f32 buffer by `tile.atomic_add` (then cast). As in the forward, blocks that need
no mask (below the diagonal, inside n_ctx) run in loops of their own.
"""

import math
import os
import sys

import torch

import tile
from flash_attention import attention as attention_forward
from flash_attention import key_range

LOG2E = tile.constexpr(1.4426950408889634)  # exp(x) = exp2(x * log2(e))


@tile.kernel
def bwd_preprocess(o, do, delta, n_ctx, H, s_ob, s_oh, s_om, s_od, s_db, s_dh, s_dm, s_dd,
                   BLOCK_M: tile.constexpr, D: tile.constexpr):
    """delta = rowsum(dO * O) in f32, a (B, H, N) contiguous tensor."""
    bh = tile.program_id(1)
    b, h = bh // H, bh % H
    rm = tile.program_id(0) * BLOCK_M + tile.arange(0, BLOCK_M)
    rd = tile.arange(0, D)
    mask = rm[:, None] < n_ctx
    ot = tile.load(o + b * s_ob + h * s_oh + rm[:, None] * s_om + rd[None, :] * s_od, mask=mask, other=0.0)
    dot_ = tile.load(do + b * s_db + h * s_dh + rm[:, None] * s_dm + rd[None, :] * s_dd, mask=mask, other=0.0)
    tile.store(delta + bh * n_ctx + rm, tile.sum(ot.to(tile.float32) * dot_.to(tile.float32), axis=1), mask=rm < n_ctx)


@tile.func
def dkdv_blocks(dk, dv, kt, vt, qb, dob, dqb, lse_b, delta_b, rn, rd, lo, hi, n_ctx, qk_scale, sm_scale,
                s_qm, s_qd, s_dom, s_dod, s_dqm, s_dqd, BLOCK_M, MASKED, CAUSAL, DQ_ATOMIC):
    """Query blocks lo .. hi against this program's keys: dK, dV accumulated (transposed
    scores, keys along rows); MASKED: queries past n_ctx or (CAUSAL) keys after a query."""
    for start_m in range(lo, hi, BLOCK_M):
        rm = start_m + tile.arange(0, BLOCK_M)
        qt = tile.load(qb + rm[:, None] * s_qm + rd[None, :] * s_qd, mask=rm[:, None] < n_ctx, other=0.0)
        lse2 = tile.load(lse_b + rm, mask=rm < n_ctx, other=0.0) * LOG2E
        sT = tile.dot(kt, tile.trans(qt))
        pT = tile.exp2(sT * qk_scale - lse2[None, :])
        if MASKED:
            keep = rm[None, :] < n_ctx
            if CAUSAL:
                keep = keep & (rm[None, :] >= rn[:, None])
            pT = tile.where(keep, pT, 0.0)
        do_ = tile.load(dob + rm[:, None] * s_dom + rd[None, :] * s_dod, mask=rm[:, None] < n_ctx, other=0.0)
        dv = tile.dot(pT.to(do_.dtype), do_, dv)
        di = tile.load(delta_b + rm, mask=rm < n_ctx, other=0.0)
        dpT = tile.dot(vt, tile.trans(do_))
        dsT = (pT * (dpT - di[None, :])).to(qt.dtype)
        dk = tile.dot(dsT, qt, dk)
        if DQ_ATOMIC:
            dq = tile.dot(tile.trans(dsT), kt) * sm_scale
            # a sum: no ordering needed among the programs adding into it
            tile.atomic_add(dqb + rm[:, None] * s_dqm + rd[None, :] * s_dqd, dq, mask=rm[:, None] < n_ctx,
                            sem="relaxed")
    return dk, dv


@tile.kernel
def bwd_dkdv(q, k, v, do, dk, dv, dq, lse, delta, n_ctx, sm_scale, H, group,
             s_qb, s_qh, s_qm, s_qd, s_kb, s_kh, s_kn, s_kd, s_vb, s_vh, s_vn, s_vd,
             s_dob, s_doh, s_dom, s_dod, s_dkb, s_dkh, s_dkn, s_dkd, s_dvb, s_dvh, s_dvn, s_dvd,
             s_dqb, s_dqh, s_dqm, s_dqd,
             BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr, D: tile.constexpr, CAUSAL: tile.constexpr,
             DQ_ATOMIC: tile.constexpr):
    """dK, dV of BLOCK_N keys of one (batch, KV head), summed over the `group` query heads
    reading it; DQ_ATOMIC: each block's dQ also added into the f32 `dq`."""
    start_n = tile.program_id(0) * BLOCK_N
    bh = tile.program_id(1)
    Hkv = H // group
    b, hk = bh // Hkv, bh % Hkv
    rn = start_n + tile.arange(0, BLOCK_N)
    rd = tile.arange(0, D)
    mask = rn[:, None] < n_ctx
    kt = tile.load(k + b * s_kb + hk * s_kh + rn[:, None] * s_kn + rd[None, :] * s_kd, mask=mask, other=0.0)
    vt = tile.load(v + b * s_vb + hk * s_vh + rn[:, None] * s_vn + rd[None, :] * s_vd, mask=mask, other=0.0)
    dk_ = tile.zeros((BLOCK_N, D), tile.float32)
    dv_ = tile.zeros((BLOCK_N, D), tile.float32)
    qk_scale = sm_scale * LOG2E
    # Query blocks: (CAUSAL) those crossing the diagonal, masked; then whole ones below it;
    # then the part-filled last block, masked.
    lo = 0
    mid = 0
    if CAUSAL:
        lo = start_n // BLOCK_M * BLOCK_M
        mid = (start_n + BLOCK_N + BLOCK_M - 1) // BLOCK_M * BLOCK_M
    whole = tile.maximum(n_ctx // BLOCK_M * BLOCK_M, mid)
    for g in range(0, group):
        h = hk * group + g
        qb = q + b * s_qb + h * s_qh
        dob = do + b * s_dob + h * s_doh
        dqb = dq + b * s_dqb + h * s_dqh
        lse_b = lse + (b * H + h) * n_ctx
        delta_b = delta + (b * H + h) * n_ctx
        dk_, dv_ = dkdv_blocks(dk_, dv_, kt, vt, qb, dob, dqb, lse_b, delta_b, rn, rd, lo, mid, n_ctx, qk_scale,
                               sm_scale, s_qm, s_qd, s_dom, s_dod, s_dqm, s_dqd, BLOCK_M, True, CAUSAL, DQ_ATOMIC)
        dk_, dv_ = dkdv_blocks(dk_, dv_, kt, vt, qb, dob, dqb, lse_b, delta_b, rn, rd, mid, whole, n_ctx, qk_scale,
                               sm_scale, s_qm, s_qd, s_dom, s_dod, s_dqm, s_dqd, BLOCK_M, False, CAUSAL, DQ_ATOMIC)
        dk_, dv_ = dkdv_blocks(dk_, dv_, kt, vt, qb, dob, dqb, lse_b, delta_b, rn, rd, whole, n_ctx, n_ctx, qk_scale,
                               sm_scale, s_qm, s_qd, s_dom, s_dod, s_dqm, s_dqd, BLOCK_M, True, CAUSAL, DQ_ATOMIC)
    tile.store(dk + b * s_dkb + hk * s_dkh + rn[:, None] * s_dkn + rd[None, :] * s_dkd, dk_ * sm_scale, mask=mask)
    tile.store(dv + b * s_dvb + hk * s_dvh + rn[:, None] * s_dvn + rd[None, :] * s_dvd, dv_, mask=mask)


@tile.func
def dq_blocks(dq, qt, do_, lse2, di, kb, vb, rm, rd, lo, hi, n_ctx, qk_scale, s_kn, s_kd, s_vn, s_vd,
              BLOCK_N, MASKED, CAUSAL):
    """Key blocks lo .. hi against this program's queries: dQ accumulated (unscaled)."""
    for start_n in range(lo, hi, BLOCK_N):
        rn = start_n + tile.arange(0, BLOCK_N)
        kt = tile.load(kb + rn[:, None] * s_kn + rd[None, :] * s_kd, mask=rn[:, None] < n_ctx, other=0.0)
        vt = tile.load(vb + rn[:, None] * s_vn + rd[None, :] * s_vd, mask=rn[:, None] < n_ctx, other=0.0)
        p = tile.exp2(tile.dot(qt, tile.trans(kt)) * qk_scale - lse2[:, None])
        if MASKED:
            keep = rn[None, :] < n_ctx
            if CAUSAL:
                keep = keep & (rn[None, :] <= rm[:, None])
            p = tile.where(keep, p, 0.0)
        dp = tile.dot(do_, tile.trans(vt))
        ds = (p * (dp - di[:, None])).to(kt.dtype)
        dq = tile.dot(ds, kt, dq)
    return dq


@tile.kernel
def bwd_dq(q, k, v, do, dq, lse, delta, n_ctx, sm_scale, H, group,
           s_qb, s_qh, s_qm, s_qd, s_kb, s_kh, s_kn, s_kd, s_vb, s_vh, s_vn, s_vd,
           s_dob, s_doh, s_dom, s_dod, s_dqb, s_dqh, s_dqm, s_dqd,
           BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr, D: tile.constexpr, CAUSAL: tile.constexpr):
    """dQ of BLOCK_M queries of one (batch, head), over the keys they attend to."""
    start_m = tile.program_id(0)
    bh = tile.program_id(1)
    b, h = bh // H, bh % H
    rm = start_m * BLOCK_M + tile.arange(0, BLOCK_M)
    rd = tile.arange(0, D)
    mask = rm[:, None] < n_ctx
    qt = tile.load(q + b * s_qb + h * s_qh + rm[:, None] * s_qm + rd[None, :] * s_qd, mask=mask, other=0.0)
    do_ = tile.load(do + b * s_dob + h * s_doh + rm[:, None] * s_dom + rd[None, :] * s_dod, mask=mask, other=0.0)
    lse2 = tile.load(lse + bh * n_ctx + rm, mask=rm < n_ctx, other=0.0) * LOG2E
    di = tile.load(delta + bh * n_ctx + rm, mask=rm < n_ctx, other=0.0)
    dq_ = tile.zeros((BLOCK_M, D), tile.float32)
    qk_scale = sm_scale * LOG2E
    # As the forward: whole key blocks (below the diagonal, if CAUSAL) unmasked, the rest masked.
    whole, end = key_range(start_m, n_ctx, BLOCK_M, BLOCK_N, CAUSAL)
    kb = k + b * s_kb + h // group * s_kh
    vb = v + b * s_vb + h // group * s_vh
    dq_ = dq_blocks(dq_, qt, do_, lse2, di, kb, vb, rm, rd, 0, whole, n_ctx, qk_scale, s_kn, s_kd, s_vn, s_vd,
                    BLOCK_N, False, CAUSAL)
    dq_ = dq_blocks(dq_, qt, do_, lse2, di, kb, vb, rm, rd, whole, end, n_ctx, qk_scale, s_kn, s_kd, s_vn, s_vd,
                    BLOCK_N, True, CAUSAL)
    tile.store(dq + b * s_dqb + h * s_dqh + rm[:, None] * s_dqm + rd[None, :] * s_dqd, dq_ * sm_scale, mask=mask)


# (BLOCK_M, BLOCK_N, num_warps) of the dK/dV kernel (queries stream, 128 keys stay, their dK
# and dV in f32 registers) by head dim, and of the dQ kernel (keys stream): at these, sm_90a
# compiles of both use wgmma for every dot and do not spill (tests/test_flash_attention_bwd.py;
# 64 queries a step at D = 128 spill). Adding dQ by atomics wants 32 queries a step at D = 64
# (that dot, 32 rows, on mma.sync); at D = 128 its dQ tile and dS transposed beside dK and dV
# spill (about 700 bytes) at every block size tried.
DKDV_BLOCKS = {64: (64, 128, 8), 128: (32, 128, 8)}
DKDV_ATOMIC_BLOCKS = {64: (32, 128, 8), 128: (32, 128, 8)}
DQ_BLOCKS = (128, 64, 8)
# The forward's, as tests/test_attention_codegen.py compiles it (wgmma, no spills)
FORWARD = {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2}


def attention_backward(q, k, v, o, do, lse, causal=False, sm_scale=None, dq_atomic=False, dkdv_config=None,
                       dq_config=None, num_stages=None, kernels=None):
    """dQ, dK, dV of attention(q, k, v) given its output o, log-sum-exp lse and dO; `kernels`:
    where bwd_preprocess, bwd_dkdv and bwd_dq come from (this module's by default; a Triton
    twin of them: benchmarks/attention_bwd_on_device.py)."""
    kernels = kernels or sys.modules[__name__]
    B, H, N, D = q.shape
    Hkv = k.shape[1]
    group = H // Hkv
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    stages = {} if num_stages is None else {"num_stages": num_stages}
    delta = torch.empty(B, H, N, device=q.device, dtype=torch.float32)
    kernels.bwd_preprocess[(tile.cdiv(N, 64), B * H)](o, do, delta, N, H, *o.stride(), *do.stride(), BLOCK_M=64, D=D)
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    bm, bn, warps = dkdv_config or (DKDV_ATOMIC_BLOCKS if dq_atomic else DKDV_BLOCKS).get(D, (32, 64, 4))
    dq = torch.zeros(q.shape, device=q.device, dtype=torch.float32) if dq_atomic else torch.empty_like(q)
    kernels.bwd_dkdv[(tile.cdiv(N, bn), B * Hkv)](
        q, k, v, do, dk, dv, dq, lse, delta, N, scale, H, group, *q.stride(), *k.stride(), *v.stride(), *do.stride(),
        *dk.stride(), *dv.stride(), *dq.stride(), BLOCK_M=bm, BLOCK_N=bn, D=D, CAUSAL=causal, DQ_ATOMIC=dq_atomic,
        num_warps=warps, **stages)
    if dq_atomic:
        return dq.to(q.dtype), dk, dv
    bm, bn, warps = dq_config or DQ_BLOCKS
    kernels.bwd_dq[(tile.cdiv(N, bm), B * H)](
        q, k, v, do, dq, lse, delta, N, scale, H, group, *q.stride(), *k.stride(), *v.stride(), *do.stride(),
        *dq.stride(), BLOCK_M=bm, BLOCK_N=bn, D=D, CAUSAL=causal, num_warps=warps, **stages)
    return dq, dk, dv


class _Attention(torch.autograd.Function):
    """The forward saves its log-sum-exp for the backward, as FA2 does (not P)."""

    @staticmethod
    def forward(ctx, q, k, v, causal, sm_scale, dq_atomic):
        o, lse = attention_forward(q, k, v, causal, sm_scale=sm_scale, return_lse=True, **FORWARD)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal, ctx.sm_scale, ctx.dq_atomic = causal, sm_scale, dq_atomic
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = attention_backward(q, k, v, o, do, lse, ctx.causal, ctx.sm_scale, ctx.dq_atomic)
        return dq, dk, dv, None, None, None


def attention(q, k, v, causal=False, sm_scale=None, dq_atomic=False):
    """softmax(Q K^T * sm_scale) V with FlashAttention's forward and backward, (B, H, N, D)
    tensors, K and V with H or a divisor of H heads (GQA/MQA)."""
    return _Attention.apply(q, k, v, causal, sm_scale, dq_atomic)


@tile.torch.op("tile_examples::attention_backward", mutates_args=())
def _attention_backward_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, do: torch.Tensor,
                           lse: torch.Tensor, causal: bool, sm_scale: float) -> tuple[torch.Tensor, torch.Tensor,
                                                                                      torch.Tensor]:
    return attention_backward(q, k, v, o, do, lse, causal, sm_scale)


def _setup_attention(ctx, inputs, output):
    q, k, v, causal, sm_scale = inputs
    ctx.save_for_backward(q, k, v, *output)
    ctx.causal, ctx.sm_scale = causal, sm_scale


def _attention_gradients(ctx, do, dlse):
    q, k, v, o, lse = ctx.saved_tensors
    return (*_attention_backward_op(q, k, v, o, do, lse, ctx.causal, ctx.sm_scale), None, None)


@tile.torch.op("tile_examples::attention", mutates_args=(), backward=_attention_gradients, setup_context=_setup_attention)
def _attention_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                  sm_scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    return attention_forward(q, k, v, causal, sm_scale=sm_scale, return_lse=True, **FORWARD)


def attention_op(q, k, v, causal=False, sm_scale=None):
    """`attention` as two custom ops (`tile.torch.op`), forward and backward: what
    torch.compile(fullgraph=True) traces without a graph break."""
    return _attention_op(q, k, v, causal, 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else sm_scale)[0]


def reference(q, k, v, causal=False, sm_scale=None):
    """Attention in f32 by torch ops (autograd's reference), GQA heads repeated."""
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    s = q.float() @ k.float().transpose(-1, -2) * (sm_scale or 1.0 / math.sqrt(q.shape[-1]))
    if causal:
        n = q.shape[2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return (torch.softmax(s, dim=-1) @ v.float()).to(q.dtype)


class AttentionLayer(torch.nn.Module):
    """A transformer's attention layer: q/k/v/o projections around `attn` (GQA: kv_heads)."""

    def __init__(self, dim, heads, kv_heads, attn):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim, self.attn = heads, kv_heads, dim // heads, attn
        self.wq = torch.nn.Linear(dim, dim)
        self.wk = torch.nn.Linear(dim, kv_heads * self.head_dim)
        self.wv = torch.nn.Linear(dim, kv_heads * self.head_dim)
        self.wo = torch.nn.Linear(dim, dim)

    def forward(self, x, causal=True):
        B, N, _ = x.shape
        q = self.wq(x).view(B, N, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(B, N, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(B, N, self.kv_heads, self.head_dim).transpose(1, 2)
        return self.wo(self.attn(q, k, v, causal).transpose(1, 2).reshape(B, N, -1))


def check_gradients(B, H, Hkv, N, D, causal, device="cpu", dtype=torch.float16, dq_atomic=False, tol=2e-2):
    """attention's output and dQ, dK, dV against torch autograd of `reference` in f32."""
    q = torch.randn(B, H, N, D, device=device, dtype=dtype, requires_grad=True)
    k, v = (torch.randn(B, Hkv, N, D, device=device, dtype=dtype, requires_grad=True) for _ in range(2))
    do = torch.randn(B, H, N, D, device=device, dtype=dtype)
    out = attention(q, k, v, causal, None, dq_atomic)
    out.backward(do)
    got = (out, q.grad, k.grad, v.grad)
    q.grad = k.grad = v.grad = None
    qf, kf, vf = (t.detach().float().requires_grad_() for t in (q, k, v))
    want = reference(qf, kf, vf, causal)
    want.backward(do.float())
    for name, g, w in zip(("out", "dq", "dk", "dv"), got, (want, qf.grad, kf.grad, vf.grad)):
        torch.testing.assert_close(g.float(), w, rtol=tol, atol=tol, msg=lambda m, n=name: f"{n}: {m}")


def check_training_step(device="cpu"):
    """One forward and backward of an attention layer through `attention`: every parameter's
    gradient matches the same layer's through torch's reference attention (f32)."""
    torch.manual_seed(1)
    # f32 on the CPU; on a GPU the layer runs in f16, as attention does there (an f32 dot takes the
    # exact path, whose tiles do not fit a block's shared memory at these sizes)
    on_gpu = device != "cpu" or os.environ.get("TILE_TARGET", "cpu") != "cpu"  # (a build for one, too)
    dtype, tol = (torch.float16, dict(rtol=5e-2, atol=5e-3)) if on_gpu else (torch.float32, dict(rtol=1e-3, atol=1e-4))
    ours = AttentionLayer(128, 4, 2, attention).to(device, dtype)
    theirs = AttentionLayer(128, 4, 2, reference).to(device, dtype)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(2, 75, 128, device=device, dtype=dtype)
    target = torch.randn(2, 75, 128, device=device, dtype=dtype)
    for layer in (ours, theirs):
        torch.nn.functional.mse_loss(layer(x), target).backward()
    for (name, p), w in zip(ours.named_parameters(), theirs.parameters()):
        torch.testing.assert_close(p.grad, w.grad, **tol, msg=lambda m, n=name: f"{n}: {m}")


def check_compiled(device="cpu", backend="aot_eager", dtype=None):
    """A block of layer norm (examples/layer_norm_backward.py's op) and attention (`attention_op`)
    under torch.compile(fullgraph=True): no graph break, and its output and every gradient match
    the same block run eagerly through torch's own ops."""
    from layer_norm_backward import layer_norm_op

    torch.manual_seed(2)
    on_gpu = device != "cpu"
    half = (dtype or (torch.float16 if on_gpu else torch.float32)) == torch.float16
    dtype, tol = (torch.float16, dict(rtol=3e-2, atol=3e-2)) if half else (torch.float32, dict(rtol=1e-3, atol=1e-4))
    dim, heads, n = 64, 4, 70

    def block(x, w, b, attn, norm):
        h = norm(x, w, b)
        q, k, v = (h.view(x.shape[0], n, heads, dim // heads).transpose(1, 2) * s for s in (1.0, 0.5, 2.0))
        return x + attn(q, k, v, True).transpose(1, 2).reshape(x.shape)

    def torch_norm(x, w, b):
        return torch.nn.functional.layer_norm(x.float(), (dim,), w.float(), b.float(), 1e-5).to(x.dtype)

    def tile_norm(x, w, b):
        return layer_norm_op(x.view(-1, dim), w, b, 1e-5).view(x.shape)

    x = torch.randn(2, n, dim, device=device, dtype=dtype)
    params = [torch.randn(dim, device=device, dtype=dtype), torch.randn(dim, device=device, dtype=dtype)]
    explained = torch._dynamo.explain(lambda *a: block(*a, attention_op, tile_norm))(x, *params)
    assert explained.graph_break_count == 0, explained.break_reasons
    torch._dynamo.reset()
    compiled = torch.compile(lambda *a: block(*a, attention_op, tile_norm), backend=backend, fullgraph=True)
    got_in, want_in = ([t.clone().requires_grad_() for t in (x, *params)] for _ in range(2))
    got = compiled(*got_in)
    want = block(*want_in, reference, torch_norm)
    grad = torch.randn_like(got)
    got.backward(grad)
    want.backward(grad)
    torch.testing.assert_close(got, want, **tol)
    for name, g, w in zip(("dx", "dw", "db"), got_in, want_in):
        torch.testing.assert_close(g.grad, w.grad, **tol, msg=lambda m, n=name: f"{n}: {m}")


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    # N not a multiple of the blocks; causal and not; GQA (4 query heads on 2 and on 1 KV head, dQ by atomics)
    for B, H, Hkv, N, D, causal, dq_atomic in [(2, 2, 2, 100, 64, False, False), (1, 4, 2, 200, 64, True, False),
                                                (1, 4, 1, 130, 64, False, True)]:
        check_gradients(B, H, Hkv, N, D, causal, device, dq_atomic=dq_atomic)
    check_training_step(device)
    print(f"flash_attention_bwd: forward, dQ, dK, dV (causal and not, GQA, N = 100/130/200, dQ by atomics too) "
          f"and an attention layer's training step on {device} match torch autograd")


if __name__ == "__main__":
    main()
