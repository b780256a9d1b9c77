"""Triton tutorial 06, fused attention (FlashAttention-2, forward and backward), as tile code.

After python/tutorials/06-fused-attention.py of triton-lang/triton (MIT license, in LICENSE here; Copyright
2018-2020 Philippe Tillet, 2020-2022 OpenAI; the kernels credited there to the OpenAI kernel
team, after Tri Dao's FlashAttention-2): the forward reads Q, K, V and writes O through tensor
descriptors (made on the host, or in the kernel from pointers), autotuned with a pre-hook that
sets the descriptors' block shapes and a pruning of configs too tall for N_CTX; the backward
is a preprocessing kernel and one kernel for dK/dV and dQ, over pointers. The kernels are
Triton code with `tl.` spelled `tile.`, `@triton.jit` spelled `@tile.jit` and
`triton.autotune` / `triton.Config` / `TensorDescriptor` spelled `tile.autotune` /
`tile.Config` / `tile.TensorDescriptor`. Differs from the tutorial: host descriptors are
used on every device (the tutorial makes them in the kernel, after `triton.set_allocator`,
where the GPU is older than Hopper: tile has no allocator hook), the Blackwell-only and AMD
host branches are left out, the CPU gets one autotune config (as the tutorial under pytest),
and main() checks the forward and dQ, dK, dV against torch autograd at a small size (causal
and not, fp16) instead of the tutorial's pytest and benchmarks.
"""

import os

import torch

import tile
from tile import TensorDescriptor


def is_cuda():
    return torch.cuda.is_available()


def is_hopper():
    return is_cuda() and torch.cuda.get_device_capability()[0] == 9


@tile.jit
def _attn_fwd_inner(acc, l_i, m_i, q,  #
                    desc_k, desc_v,  #
                    offset_y, dtype: tile.constexpr, start_m, qk_scale,  #
                    BLOCK_M: tile.constexpr, HEAD_DIM: tile.constexpr, BLOCK_N: tile.constexpr,  #
                    STAGE: tile.constexpr, offs_m: tile.constexpr, offs_n: tile.constexpr,  #
                    N_CTX: tile.constexpr, warp_specialize: tile.constexpr, IS_HOPPER: tile.constexpr):
    # the key blocks this stage takes: left of the diagonal (1), on it (2), or all (3)
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tile.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, N_CTX
    offsetk_y = offset_y + lo
    if dtype == tile.float8e5:
        offsetv_y = offset_y * HEAD_DIM + lo
    else:
        offsetv_y = offset_y + lo
    for start_n in tile.range(lo, hi, BLOCK_N, warp_specialize=warp_specialize):
        start_n = tile.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([offsetk_y, 0]).T
        qk = tile.dot(q, k)
        if STAGE == 2:
            mask = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tile.where(mask, 0, -1.0e6)
            m_ij = tile.maximum(m_i, tile.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tile.maximum(m_i, tile.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tile.math.exp2(qk)
        alpha = tile.math.exp2(m_i - m_ij)
        l_ij = tile.sum(p, 1)
        if not IS_HOPPER and warp_specialize and BLOCK_M == 128 and HEAD_DIM == 128:
            BM: tile.constexpr = acc.shape[0]
            BN: tile.constexpr = acc.shape[1]
            acc0, acc1 = acc.reshape([BM, 2, BN // 2]).permute(0, 2, 1).split()
            acc0 = acc0 * alpha[:, None]
            acc1 = acc1 * alpha[:, None]
            acc = tile.join(acc0, acc1).permute(0, 2, 1).reshape([BM, BN])
        else:
            acc = acc * alpha[:, None]
        if dtype == tile.float8e5:
            v = desc_v.load([0, offsetv_y]).T
        else:
            v = desc_v.load([offsetv_y, 0])
        p = p.to(dtype)
        acc = tile.dot(p, v, acc)
        l_i = l_i * alpha + l_ij
        m_i = m_ij
        offsetk_y += BLOCK_N
        offsetv_y += BLOCK_N
    return acc, l_i, m_i


def _host_descriptor_pre_hook(nargs):
    BLOCK_M = nargs["BLOCK_M"]
    BLOCK_N = nargs["BLOCK_N"]
    HEAD_DIM = nargs["HEAD_DIM"]
    if not isinstance(nargs["desc_q"], TensorDescriptor):
        return
    nargs["desc_q"].block_shape = [BLOCK_M, HEAD_DIM]
    if nargs["FP8_OUTPUT"]:
        nargs["desc_v"].block_shape = [HEAD_DIM, BLOCK_N]
    else:
        nargs["desc_v"].block_shape = [BLOCK_N, HEAD_DIM]
    nargs["desc_k"].block_shape = [BLOCK_N, HEAD_DIM]
    nargs["desc_o"].block_shape = [BLOCK_M, HEAD_DIM]


NUM_STAGES_OPTIONS = [2, 3, 4]

configs = [
    tile.Config({'BLOCK_M': BM, 'BLOCK_N': BN}, num_stages=s, num_warps=w, pre_hook=_host_descriptor_pre_hook) \
    for BM in [64, 128]\
    for BN in [32, 64, 128]\
    for s in NUM_STAGES_OPTIONS \
    for w in [4, 8]\
]
if "PYTEST_VERSION" in os.environ or not is_cuda():
    # one config: tuning on the CPU (or in a test) measures nothing worth its compiles
    configs = [
        tile.Config(dict(BLOCK_M=128, BLOCK_N=64), num_stages=2, num_warps=4, pre_hook=_host_descriptor_pre_hook),
    ]


def keep(conf):
    BLOCK_M = conf.kwargs["BLOCK_M"]
    BLOCK_N = conf.kwargs["BLOCK_N"]
    return not (is_cuda() and torch.cuda.get_device_capability()[0] == 9 and BLOCK_M * BLOCK_N < 128 * 128
                and conf.num_warps == 8)


def prune_invalid_configs(configs, named_args, **kwargs):
    N_CTX = kwargs["N_CTX"]
    return [conf for conf in configs if conf.kwargs.get("BLOCK_M", 0) <= N_CTX]


@tile.jit
def _maybe_make_tensor_desc(desc_or_ptr, shape, strides, block_shape):
    if isinstance(desc_or_ptr, tile.tensor_descriptor):
        return desc_or_ptr
    else:
        return tile.make_tensor_descriptor(desc_or_ptr, shape, strides, block_shape)


@tile.autotune(configs=list(filter(keep, configs)), key=["N_CTX", "HEAD_DIM", "FP8_OUTPUT", "warp_specialize"],
               prune_configs_by={'early_config_prune': prune_invalid_configs})
@tile.jit
def _attn_fwd(sm_scale, M,  #
              Z, H, desc_q, desc_k, desc_v, desc_o, N_CTX,  #
              HEAD_DIM: tile.constexpr,  #
              BLOCK_M: tile.constexpr,  #
              BLOCK_N: tile.constexpr,  #
              FP8_OUTPUT: tile.constexpr,  #
              STAGE: tile.constexpr,  #
              warp_specialize: tile.constexpr,  #
              IS_HOPPER: tile.constexpr,  #
              ):
    dtype = tile.float8e5 if FP8_OUTPUT else tile.float16
    tile.static_assert(BLOCK_N <= HEAD_DIM)
    start_m = tile.program_id(0)
    off_hz = tile.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H

    y_dim = Z * H * N_CTX
    desc_q = _maybe_make_tensor_desc(desc_q, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                     block_shape=[BLOCK_M, HEAD_DIM])
    if FP8_OUTPUT:
        desc_v = _maybe_make_tensor_desc(desc_v, shape=[HEAD_DIM, y_dim], strides=[N_CTX, 1],
                                         block_shape=[HEAD_DIM, BLOCK_N])
    else:
        desc_v = _maybe_make_tensor_desc(desc_v, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                         block_shape=[BLOCK_N, HEAD_DIM])
    desc_k = _maybe_make_tensor_desc(desc_k, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                     block_shape=[BLOCK_N, HEAD_DIM])
    desc_o = _maybe_make_tensor_desc(desc_o, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                     block_shape=[BLOCK_M, HEAD_DIM])

    offset_y = off_z * (N_CTX * H) + off_h * N_CTX
    qo_offset_y = offset_y + start_m * BLOCK_M
    offs_m = start_m * BLOCK_M + tile.arange(0, BLOCK_M)
    offs_n = tile.arange(0, BLOCK_N)
    # running max and sum of the softmax, and the output, per query row
    m_i = tile.zeros([BLOCK_M], dtype=tile.float32) - float("inf")
    l_i = tile.zeros([BLOCK_M], dtype=tile.float32) + 1.0
    acc = tile.zeros([BLOCK_M, HEAD_DIM], dtype=tile.float32)
    qk_scale = sm_scale
    qk_scale *= 1.44269504  # 1/log(2): the kernel takes exp2
    q = desc_q.load([qo_offset_y, 0])
    # causal: STAGE 3, the blocks left of the diagonal then those on it; else STAGE 1, all blocks
    if STAGE & 1:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q,  #
                                        desc_k, desc_v,  #
                                        offset_y, dtype, start_m, qk_scale,  #
                                        BLOCK_M, HEAD_DIM, BLOCK_N,  #
                                        4 - STAGE, offs_m, offs_n, N_CTX,  #
                                        warp_specialize, IS_HOPPER)
    if STAGE & 2:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q,  #
                                        desc_k, desc_v,  #
                                        offset_y, dtype, start_m, qk_scale,  #
                                        BLOCK_M, HEAD_DIM, BLOCK_N,  #
                                        2, offs_m, offs_n, N_CTX,  #
                                        warp_specialize, IS_HOPPER)
    m_i += tile.math.log2(l_i)
    acc = acc / l_i[:, None]
    m_ptrs = M + off_hz * N_CTX + offs_m
    tile.store(m_ptrs, m_i)
    desc_o.store([qo_offset_y, 0], acc.to(dtype))


@tile.jit
def _attn_bwd_preprocess(O, DO,  #
                         Delta,  #
                         Z, H, N_CTX,  #
                         BLOCK_M: tile.constexpr, HEAD_DIM: tile.constexpr  #
                         ):
    off_m = tile.program_id(0) * BLOCK_M + tile.arange(0, BLOCK_M)
    off_hz = tile.program_id(1)
    off_n = tile.arange(0, HEAD_DIM)
    o = tile.load(O + off_hz * HEAD_DIM * N_CTX + off_m[:, None] * HEAD_DIM + off_n[None, :])
    do = tile.load(DO + off_hz * HEAD_DIM * N_CTX + off_m[:, None] * HEAD_DIM + off_n[None, :]).to(tile.float32)
    delta = tile.sum(o * do, axis=1)
    tile.store(Delta + off_hz * N_CTX + off_m, delta)


@tile.jit
def _attn_bwd_dkdv(dk, dv,  #
                   Q, k, v, sm_scale,  #
                   DO,  #
                   M, D,  #
                   stride_tok, stride_d,  #
                   H, N_CTX, BLOCK_M1: tile.constexpr,  #
                   BLOCK_N1: tile.constexpr,  #
                   HEAD_DIM: tile.constexpr,  #
                   start_n, start_m, num_steps,  #
                   MASK: tile.constexpr):
    """dK and dV of one block of keys, over num_steps blocks of queries from start_m."""
    offs_m = start_m + tile.arange(0, BLOCK_M1)
    offs_n = start_n + tile.arange(0, BLOCK_N1)
    offs_k = tile.arange(0, HEAD_DIM)
    qT_ptrs = Q + offs_m[None, :] * stride_tok + offs_k[:, None] * stride_d
    do_ptrs = DO + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d
    tile.static_assert(BLOCK_N1 % BLOCK_M1 == 0)
    curr_m = start_m
    step_m = BLOCK_M1
    for blk_idx in range(num_steps):
        qT = tile.load(qT_ptrs)
        offs_m = curr_m + tile.arange(0, BLOCK_M1)
        m = tile.load(M + offs_m)
        qkT = tile.dot(k, qT)
        pT = tile.math.exp2(qkT - m[None, :])
        if MASK:
            mask = (offs_m[None, :] >= offs_n[:, None])
            pT = tile.where(mask, pT, 0.0)
        do = tile.load(do_ptrs)
        ppT = pT
        ppT = ppT.to(tile.float16)
        dv += tile.dot(ppT, do)
        Di = tile.load(D + offs_m)
        dpT = tile.dot(v, tile.trans(do)).to(tile.float32)
        dsT = pT * (dpT - Di[None, :])
        dsT = dsT.to(tile.float16)
        dk += tile.dot(dsT, tile.trans(qT))
        curr_m += step_m
        qT_ptrs += step_m * stride_tok
        do_ptrs += step_m * stride_tok
    return dk, dv


@tile.jit
def _attn_bwd_dq(dq, q, K, V,  #
                 do, m, D,
                 stride_tok, stride_d,  #
                 H, N_CTX,  #
                 BLOCK_M2: tile.constexpr,  #
                 BLOCK_N2: tile.constexpr,  #
                 HEAD_DIM: tile.constexpr,
                 start_m, start_n, num_steps,  #
                 MASK: tile.constexpr):
    """dQ of one block of queries, over num_steps blocks of keys from start_n."""
    offs_m = start_m + tile.arange(0, BLOCK_M2)
    offs_n = start_n + tile.arange(0, BLOCK_N2)
    offs_k = tile.arange(0, HEAD_DIM)
    kT_ptrs = K + offs_n[None, :] * stride_tok + offs_k[:, None] * stride_d
    vT_ptrs = V + offs_n[None, :] * stride_tok + offs_k[:, None] * stride_d
    Di = tile.load(D + offs_m)
    tile.static_assert(BLOCK_M2 % BLOCK_N2 == 0)
    curr_n = start_n
    step_n = BLOCK_N2
    for blk_idx in range(num_steps):
        kT = tile.load(kT_ptrs)
        vT = tile.load(vT_ptrs)
        qk = tile.dot(q, kT)
        p = tile.math.exp2(qk - m)
        if MASK:
            offs_n = curr_n + tile.arange(0, BLOCK_N2)
            mask = (offs_m[:, None] >= offs_n[None, :])
            p = tile.where(mask, p, 0.0)
        dp = tile.dot(do, vT).to(tile.float32)
        ds = p * (dp - Di[:, None])
        ds = ds.to(tile.float16)
        dq += tile.dot(ds, tile.trans(kT))
        curr_n += step_n
        kT_ptrs += step_n * stride_tok
        vT_ptrs += step_n * stride_tok
    return dq


@tile.jit
def _attn_bwd(Q, K, V, sm_scale,  #
              DO,  #
              DQ, DK, DV,  #
              M, D,
              stride_z, stride_h, stride_tok, stride_d,  #
              H, N_CTX,  #
              BLOCK_M1: tile.constexpr,  #
              BLOCK_N1: tile.constexpr,  #
              BLOCK_M2: tile.constexpr,  #
              BLOCK_N2: tile.constexpr,  #
              BLK_SLICE_FACTOR: tile.constexpr,  #
              HEAD_DIM: tile.constexpr,  #
              CAUSAL: tile.constexpr):
    LN2: tile.constexpr = 0.6931471824645996  # ln(2)

    bhid = tile.program_id(2)
    off_chz = (bhid * N_CTX).to(tile.int64)
    adj = (stride_h * (bhid % H) + stride_z * (bhid // H)).to(tile.int64)
    pid = tile.program_id(0)

    Q += adj
    K += adj
    V += adj
    DO += adj
    DQ += adj
    DK += adj
    DV += adj
    M += off_chz
    D += off_chz

    offs_k = tile.arange(0, HEAD_DIM)

    # dK and dV of this program's block of keys: the diagonal blocks (masked, in thinner steps) first
    start_n = pid * BLOCK_N1
    start_m = 0

    MASK_BLOCK_M1: tile.constexpr = BLOCK_M1 // BLK_SLICE_FACTOR
    offs_n = start_n + tile.arange(0, BLOCK_N1)

    dv = tile.zeros([BLOCK_N1, HEAD_DIM], dtype=tile.float32)
    dk = tile.zeros([BLOCK_N1, HEAD_DIM], dtype=tile.float32)

    k = tile.load(K + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d)
    v = tile.load(V + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d)

    if CAUSAL:
        start_m = start_n
        num_steps = BLOCK_N1 // MASK_BLOCK_M1
        dk, dv = _attn_bwd_dkdv(dk, dv,  #
                                Q, k, v, sm_scale,  #
                                DO,  #
                                M, D,  #
                                stride_tok, stride_d,  #
                                H, N_CTX,  #
                                MASK_BLOCK_M1, BLOCK_N1, HEAD_DIM,  #
                                start_n, start_m, num_steps,  #
                                MASK=True,  #
                                )
        start_m += num_steps * MASK_BLOCK_M1

    num_steps = (N_CTX - start_m) // BLOCK_M1
    dk, dv = _attn_bwd_dkdv(  #
        dk, dv,  #
        Q, k, v, sm_scale,  #
        DO,  #
        M, D,  #
        stride_tok, stride_d,  #
        H, N_CTX,  #
        BLOCK_M1, BLOCK_N1, HEAD_DIM,  #
        start_n, start_m, num_steps,  #
        MASK=False,  #
    )

    dv_ptrs = DV + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d
    tile.store(dv_ptrs, dv)
    dk *= sm_scale
    dk_ptrs = DK + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d
    tile.store(dk_ptrs, dk)

    # dQ of this program's block of queries: the diagonal blocks first, then right to left
    start_m = pid * BLOCK_M2
    start_n = 0
    num_steps = N_CTX // BLOCK_N2

    MASK_BLOCK_N2: tile.constexpr = BLOCK_N2 // BLK_SLICE_FACTOR
    offs_m = start_m + tile.arange(0, BLOCK_M2)

    q = tile.load(Q + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d)
    dq = tile.zeros([BLOCK_M2, HEAD_DIM], dtype=tile.float32)
    do = tile.load(DO + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d)

    m = tile.load(M + offs_m)
    m = m[:, None]

    if CAUSAL:
        end_n = start_m + BLOCK_M2
        num_steps = BLOCK_M2 // MASK_BLOCK_N2
        dq = _attn_bwd_dq(dq, q, K, V,  #
                          do, m, D,  #
                          stride_tok, stride_d,  #
                          H, N_CTX,  #
                          BLOCK_M2, MASK_BLOCK_N2, HEAD_DIM,  #
                          start_m, end_n - num_steps * MASK_BLOCK_N2, num_steps,  #
                          MASK=True,  #
                          )
        end_n -= num_steps * MASK_BLOCK_N2
        num_steps = end_n // BLOCK_N2
        start_n = end_n - num_steps * BLOCK_N2

    dq = _attn_bwd_dq(dq, q, K, V,  #
                      do, m, D,  #
                      stride_tok, stride_d,  #
                      H, N_CTX,  #
                      BLOCK_M2, BLOCK_N2, HEAD_DIM,  #
                      start_m, start_n, num_steps,  #
                      MASK=False,  #
                      )
    dq_ptrs = DQ + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d
    dq *= LN2
    tile.store(dq_ptrs, dq)


class _attention(torch.autograd.Function):

    @staticmethod
    def forward(ctx, q, k, v, causal, sm_scale, warp_specialize=True):
        HEAD_DIM_Q, HEAD_DIM_K = q.shape[-1], k.shape[-1]
        HEAD_DIM_V = v.shape[-1]
        assert HEAD_DIM_Q == HEAD_DIM_K and HEAD_DIM_K == HEAD_DIM_V
        assert HEAD_DIM_K in {16, 32, 64, 128, 256}
        o = torch.empty_like(q)
        stage = 3 if causal else 1
        M = torch.empty((q.shape[0], q.shape[1], q.shape[2]), device=q.device, dtype=torch.float32)
        y_dim = q.shape[0] * q.shape[1] * q.shape[2]
        dummy_block = [1, 1]
        desc_q = TensorDescriptor(q, shape=[y_dim, HEAD_DIM_K], strides=[HEAD_DIM_K, 1], block_shape=dummy_block)
        if q.dtype == torch.float8_e5m2:
            desc_v = TensorDescriptor(v, shape=[HEAD_DIM_K, y_dim], strides=[q.shape[2], 1], block_shape=dummy_block)
        else:
            desc_v = TensorDescriptor(v, shape=[y_dim, HEAD_DIM_K], strides=[HEAD_DIM_K, 1], block_shape=dummy_block)
        desc_k = TensorDescriptor(k, shape=[y_dim, HEAD_DIM_K], strides=[HEAD_DIM_K, 1], block_shape=dummy_block)
        desc_o = TensorDescriptor(o, shape=[y_dim, HEAD_DIM_K], strides=[HEAD_DIM_K, 1], block_shape=dummy_block)

        def grid(META):
            return (tile.cdiv(q.shape[2], META["BLOCK_M"]), q.shape[0] * q.shape[1], 1)

        ctx.grid = grid
        _attn_fwd[grid](
            sm_scale, M,  #
            q.shape[0], q.shape[1],  #
            desc_q, desc_k, desc_v, desc_o,  #
            N_CTX=q.shape[2],  #
            HEAD_DIM=HEAD_DIM_K,  #
            FP8_OUTPUT=q.dtype == torch.float8_e5m2,  #
            STAGE=stage,  #
            warp_specialize=warp_specialize,  #
            IS_HOPPER=is_hopper())

        ctx.save_for_backward(q, k, v, o, M)
        ctx.sm_scale = sm_scale
        ctx.HEAD_DIM = HEAD_DIM_K
        ctx.causal = causal
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, M = ctx.saved_tensors
        assert do.is_contiguous()
        assert q.stride() == k.stride() == v.stride() == o.stride() == do.stride()
        dq = torch.empty_like(q)
        dk = torch.empty_like(k)
        dv = torch.empty_like(v)
        BATCH, N_HEAD, N_CTX = q.shape[:3]
        PRE_BLOCK = 128
        NUM_WARPS, NUM_STAGES = 4, 5
        BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2 = 32, 128, 128, 32
        BLK_SLICE_FACTOR = 2
        RCP_LN2 = 1.4426950408889634  # 1/ln(2)
        arg_k = k
        arg_k = arg_k * (ctx.sm_scale * RCP_LN2)
        assert N_CTX % PRE_BLOCK == 0
        pre_grid = (N_CTX // PRE_BLOCK, BATCH * N_HEAD)
        delta = torch.empty_like(M)
        _attn_bwd_preprocess[pre_grid](
            o, do,  #
            delta,  #
            BATCH, N_HEAD, N_CTX,  #
            BLOCK_M=PRE_BLOCK, HEAD_DIM=ctx.HEAD_DIM  #
        )
        grid = (N_CTX // BLOCK_N1, 1, BATCH * N_HEAD)
        _attn_bwd[grid](
            q, arg_k, v, ctx.sm_scale, do, dq, dk, dv,  #
            M, delta,  #
            q.stride(0), q.stride(1), q.stride(2), q.stride(3),  #
            N_HEAD, N_CTX,  #
            BLOCK_M1=BLOCK_M1, BLOCK_N1=BLOCK_N1,  #
            BLOCK_M2=BLOCK_M2, BLOCK_N2=BLOCK_N2,  #
            BLK_SLICE_FACTOR=BLK_SLICE_FACTOR,  #
            HEAD_DIM=ctx.HEAD_DIM,  #
            num_warps=NUM_WARPS,  #
            num_stages=NUM_STAGES,  #
            CAUSAL=ctx.causal,  #
        )

        return dq, dk, dv, None, None, None, None


attention = _attention.apply


def check_attention(Z, H, N_CTX, HEAD_DIM, causal, mode, warp_specialize=True, dtype=torch.float16):
    """The tutorial's test_op, on the CPU: against a float32 reference and its autograd."""
    torch.manual_seed(20)
    q = (torch.empty((Z, H, N_CTX, HEAD_DIM), dtype=dtype).normal_(mean=0.0, std=0.5).requires_grad_())
    k = (torch.empty((Z, H, N_CTX, HEAD_DIM), dtype=dtype).normal_(mean=0.0, std=0.5).requires_grad_())
    v = (torch.empty((Z, H, N_CTX, HEAD_DIM), dtype=dtype).normal_(mean=0.0, std=0.5).requires_grad_())
    sm_scale = 0.5
    dout = torch.randn_like(q)
    M = torch.tril(torch.ones((N_CTX, N_CTX)))
    p = torch.matmul(q.float(), k.float().transpose(2, 3)) * sm_scale
    if causal:
        p[:, :, M == 0] = float("-inf")
    p = torch.softmax(p, dim=-1)
    ref_out = torch.matmul(p, v.float()).to(dtype)
    if mode == "bwd":
        ref_out.backward(dout)
        ref_dv, v.grad = v.grad.clone(), None
        ref_dk, k.grad = k.grad.clone(), None
        ref_dq, q.grad = q.grad.clone(), None
    tri_out = attention(q, k, v, causal, sm_scale, warp_specialize).to(dtype)
    torch.testing.assert_close(tri_out, ref_out, atol=1e-2, rtol=0)
    if mode == "fwd":
        return
    tri_out.backward(dout)
    tri_dv, v.grad = v.grad.clone(), None
    tri_dk, k.grad = k.grad.clone(), None
    tri_dq, q.grad = q.grad.clone(), None
    torch.testing.assert_close(tri_dv, ref_dv, atol=1e-2, rtol=0)
    torch.testing.assert_close(tri_dk, ref_dk, atol=1e-2, rtol=0)
    torch.testing.assert_close(tri_dq, ref_dq, atol=1e-2, rtol=0)


def benchmark_launches(causal=(False, True)):
    """The tutorial benchmark's fp16 HEAD_DIM=128 point at N_CTX=4096 (BATCH=4, H=32), forward at the
    CPU/pytest config and backward at its fixed one, as meta tensors."""
    Z, H, N_CTX, D = 4, 32, 4096, 128
    q, k, v, o, do, dq, dk, dv = (torch.empty(Z, H, N_CTX, D, dtype=torch.float16, device="meta") for _ in range(8))
    M, delta = (torch.empty(Z, H, N_CTX, device="meta") for _ in range(2))
    config = configs[-1] if len(configs) == 1 else configs[0]
    descs = [TensorDescriptor(t, shape=[Z * H * N_CTX, D], strides=[D, 1], block_shape=[1, 1]) for t in (q, k, v, o)]
    nargs = dict(desc_q=descs[0], desc_k=descs[1], desc_v=descs[2], desc_o=descs[3], HEAD_DIM=D, FP8_OUTPUT=False,
                 **config.kwargs)
    _host_descriptor_pre_hook(nargs)
    launches = []
    for c in causal:
        launches.append((_attn_fwd, (0.5, M, Z, H, *descs, N_CTX),
                         dict(config.kwargs, HEAD_DIM=D, FP8_OUTPUT=False, STAGE=3 if c else 1, warp_specialize=False,
                              IS_HOPPER=True, num_warps=config.num_warps, num_stages=config.num_stages)))
        launches.append((_attn_bwd, (q, k, v, 0.5, do, dq, dk, dv, M, delta, *q.stride(), H, N_CTX),
                         dict(BLOCK_M1=32, BLOCK_N1=128, BLOCK_M2=128, BLOCK_N2=32, BLK_SLICE_FACTOR=2, HEAD_DIM=D,
                              CAUSAL=c, num_warps=4, num_stages=5)))
    launches.append((_attn_bwd_preprocess, (o, do, delta, Z, H, N_CTX), dict(BLOCK_M=128, HEAD_DIM=D)))
    return launches


def check_backward_only():
    """The backward kernels alone, from the forward's outputs computed by torch (M: the log2 of the row sums)."""
    torch.manual_seed(20)
    Z, H, N_CTX, D, sm_scale = 1, 2, 128, 64, 0.5
    for causal in (False, True):
        q, k, v = (torch.empty((Z, H, N_CTX, D), dtype=torch.float16).normal_(0, 0.5).requires_grad_() for _ in range(3))
        s = torch.matmul(q.float(), k.float().transpose(2, 3)) * sm_scale
        if causal:
            s[:, :, torch.tril(torch.ones(N_CTX, N_CTX)) == 0] = float("-inf")
        ref = torch.matmul(torch.softmax(s, dim=-1), v.float())
        dout = torch.randn_like(q)
        ref.backward(dout.float())
        ctx = type("ctx", (), {})()
        ctx.saved_tensors = (q.detach(), k.detach(), v.detach(), ref.detach().half(),
                             (torch.logsumexp(s, dim=-1) / 0.6931471805599453).float().contiguous())
        ctx.sm_scale, ctx.HEAD_DIM, ctx.causal = sm_scale, D, causal
        dq, dk, dv = _attention.backward(ctx, dout)[:3]
        torch.testing.assert_close(dv, v.grad, atol=1e-2, rtol=0)
        torch.testing.assert_close(dk, k.grad, atol=1e-2, rtol=0)
        torch.testing.assert_close(dq, q.grad, atol=1e-2, rtol=0)


def main():
    for causal in (False, True):
        check_attention(1, 2, 128, 64, causal, "bwd")
    print("t06_fused_attention: matches torch autograd")


if __name__ == "__main__":
    main()
