"""A second round of kernels written the way training libraries write Triton (Liger-Kernel,
apex, flash-linear-attention, mamba, FlagGems), written here in that style: a cross-entropy
whose one kernel computes the loss (online logsumexp, label smoothing, z-loss, `reduction`) and
writes the logits' gradient over them; a layer-norm backward whose programs add their partial
dW, dB into GROUP_SIZE_M slots under a spin lock, summed by a second kernel; a chunked simple
gated linear attention (block pointers advanced through the chunks, in-chunk cumulative gates,
a causal mask from `arange`, `tile.heuristics`); a causal depthwise conv1d with SiLU and an
optional bias; FlagGems' row reductions (a p-norm through libdevice, `keep_dims`) and an argmax
over blocks with index tracking. Each runs on the CPU against torch at odd sizes and on strided
views, its own source renamed to Triton runs under Triton's interpreter against the same
reference, and it compiles for sm_90a at a model's sizes beside Triton's compile of the twin."""

import functools

import pytest
import torch

import tile
from as_triton import memory_forms, meta, module_twin, run_in_triton, triton_sm90


@tile.jit
def _cross_entropy_kernel(
    X_ptr, X_stride,
    Y_ptr, Y_stride,
    loss_ptr, z_loss_ptr, loss_stride,
    n_cols, n_non_ignore,
    ignore_index, lse_square_scale, label_smoothing,
    RETURN_Z_LOSS: tile.constexpr,
    BLOCK_SIZE: tile.constexpr,
    reduction: tile.constexpr = "mean",
):
    """One row of logits a program: the loss (cross-entropy with label smoothing, plus the
    z-loss lse_square_scale * lse^2) into loss_ptr, and the logits' gradient over X."""
    program_id = tile.program_id(0).to(tile.int64)
    Y_ptr += program_id * Y_stride
    y = tile.load(Y_ptr)
    X_ptr += program_id * X_stride
    if y == ignore_index:
        for i in range(0, n_cols, BLOCK_SIZE):
            X_offsets = i + tile.arange(0, BLOCK_SIZE)
            tile.store(X_ptr + X_offsets, 0.0, mask=X_offsets < n_cols)
        return
    loss_ptr += program_id * loss_stride
    z_loss_ptr += program_id * loss_stride

    # first pass: the row's max and sum of exponentials, online
    m = float("-inf")
    d = 0.0
    ori_X_y = tile.load(X_ptr + y).cast(tile.float32)
    scaled_x_sum = 0.0
    eps = label_smoothing / n_cols
    for i in range(0, n_cols, BLOCK_SIZE):
        X_offsets = i + tile.arange(0, BLOCK_SIZE)
        X_block = tile.load(X_ptr + X_offsets, mask=X_offsets < n_cols, other=float("-inf")).cast(tile.float32)
        block_max = tile.max(X_block)
        if label_smoothing > 0:
            scaled_x_sum += tile.sum(tile.where(X_offsets < n_cols, -eps * X_block, 0.0))
        m_new = tile.maximum(m, block_max)
        d = d * tile.exp(m - m_new) + tile.sum(tile.exp(X_block - m_new))
        m = m_new
    lse = m + tile.log(d)

    # second pass: softmax(x) * (1 + 2 * lse_square_scale * lse) - (1 - ls) * onehot(y) - eps
    for i in range(0, n_cols, BLOCK_SIZE):
        X_offsets = i + tile.arange(0, BLOCK_SIZE)
        X_block = tile.load(X_ptr + X_offsets, mask=X_offsets < n_cols, other=float("-inf")).cast(tile.float32)
        X_block = tile.exp(X_block - m) / d
        X_block += 2 * lse_square_scale * lse * X_block
        X_block += -eps
        X_block = tile.where(X_offsets != y, X_block, X_block - (1 - label_smoothing))
        if reduction == "mean":
            X_block = X_block / n_non_ignore
        tile.store(X_ptr + X_offsets, X_block, mask=X_offsets < n_cols)
    tile.debug_barrier()

    loss = lse - ori_X_y
    if label_smoothing > 0:
        smooth_loss = scaled_x_sum + label_smoothing * lse
        loss = loss * (1 - label_smoothing) + smooth_loss
    z_loss = lse_square_scale * lse * lse
    loss += z_loss
    if reduction == "mean":
        z_loss = z_loss / n_non_ignore
        loss = loss / n_non_ignore
    tile.store(loss_ptr, loss)
    if RETURN_Z_LOSS:
        tile.store(z_loss_ptr, z_loss)


@tile.jit
def _layer_norm_backward_kernel(
    X_ptr, X_row_stride,
    W_ptr,
    Mean_ptr, RSTD_ptr,
    DY_ptr, DY_row_stride,
    DX_ptr, DX_row_stride,
    DW_ptr, DB_ptr, partial_stride,
    Lock_ptr,
    n_rows, n_cols, rows_per_program,
    GROUP_SIZE_M: tile.constexpr,
    BLOCK_SIZE: tile.constexpr,
):
    """dX of rows_per_program rows a program; the program's dW, dB added into slot
    pid % GROUP_SIZE_M of the partial buffers under that slot's lock (Lock_ptr[0:G] the locks,
    Lock_ptr[G:2G] whether the slot holds a sum yet)."""
    pid = tile.program_id(0)
    row_start = pid * rows_per_program
    row_end = min((pid + 1) * rows_per_program, n_rows)
    cols = tile.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    w = tile.load(W_ptr + cols, mask=mask, other=0.0).to(tile.float32)
    dw = tile.zeros((BLOCK_SIZE,), dtype=tile.float32)
    db = tile.zeros((BLOCK_SIZE,), dtype=tile.float32)
    X_ptr += row_start * X_row_stride
    DY_ptr += row_start * DY_row_stride
    DX_ptr += row_start * DX_row_stride
    for row in range(row_start, row_end):
        x = tile.load(X_ptr + cols, mask=mask, other=0.0).to(tile.float32)
        dy = tile.load(DY_ptr + cols, mask=mask, other=0.0).to(tile.float32)
        mean = tile.load(Mean_ptr + row)
        rstd = tile.load(RSTD_ptr + row)
        x_hat = tile.where(mask, (x - mean) * rstd, 0.0)
        wdy = w * dy
        c1 = tile.sum(x_hat * wdy, axis=0) / n_cols
        c2 = tile.sum(wdy, axis=0) / n_cols
        dx = (wdy - (x_hat * c1 + c2)) * rstd
        tile.store(DX_ptr + cols, dx.to(DX_ptr.dtype.element_ty), mask=mask)
        dw += dy * x_hat
        db += dy
        X_ptr += X_row_stride
        DY_ptr += DY_row_stride
        DX_ptr += DX_row_stride
    group = pid % GROUP_SIZE_M
    Lock_ptr += group
    Count_ptr = Lock_ptr + GROUP_SIZE_M
    DW_ptr += group * partial_stride + cols
    DB_ptr += group * partial_stride + cols
    while tile.atomic_cas(Lock_ptr, 0, 1) == 1:
        pass
    count = tile.load(Count_ptr)
    if count == 0:
        tile.atomic_xchg(Count_ptr, 1)
    else:
        dw += tile.load(DW_ptr, mask=mask)
        db += tile.load(DB_ptr, mask=mask)
    tile.store(DW_ptr, dw, mask=mask)
    tile.store(DB_ptr, db, mask=mask)
    tile.debug_barrier()
    tile.atomic_xchg(Lock_ptr, 0)


@tile.jit
def _layer_norm_dwdb_kernel(
    DW_ptr, DB_ptr, FINAL_DW_ptr, FINAL_DB_ptr,
    M, N,
    BLOCK_SIZE_M: tile.constexpr,
    BLOCK_SIZE_N: tile.constexpr,
):
    """The M partial rows of dW and dB summed, BLOCK_SIZE_N columns a program."""
    pid = tile.program_id(0)
    cols = pid * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N)
    dw = tile.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tile.float32)
    db = tile.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tile.float32)
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tile.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tile.load(DW_ptr + offs, mask=mask, other=0.0)
        db += tile.load(DB_ptr + offs, mask=mask, other=0.0)
    sum_dw = tile.sum(dw, axis=0)
    sum_db = tile.sum(db, axis=0)
    tile.store(FINAL_DW_ptr + cols, sum_dw.to(FINAL_DW_ptr.dtype.element_ty), mask=cols < N)
    tile.store(FINAL_DB_ptr + cols, sum_db.to(FINAL_DB_ptr.dtype.element_ty), mask=cols < N)


@tile.heuristics({
    "USE_INITIAL_STATE": lambda args: args["h0"] is not None,
    "STORE_FINAL_STATE": lambda args: args["ht"] is not None,
})
@tile.jit
def _chunk_simple_gla_fwd_h_kernel(
    k, v, g, h, h0, ht,
    T, H,
    K: tile.constexpr,
    V: tile.constexpr,
    BT: tile.constexpr,
    BK: tile.constexpr,
    BV: tile.constexpr,
    NT: tile.constexpr,
    USE_INITIAL_STATE: tile.constexpr,
    STORE_FINAL_STATE: tile.constexpr,
):
    """The [BK, BV] block of each chunk's initial state, h[b, i_t, h] (k, v: [B, T, H, K|V],
    g: [B, T, H] log decays); after a chunk of BT steps the state is exp(G_last) * h +
    sum_j exp(G_last - G_j) k_j^T v_j, G the gates' cumulative sum over the chunk."""
    i_k, i_v, i_bh = tile.program_id(0), tile.program_id(1), tile.program_id(2)
    i_b, i_h = i_bh // H, i_bh % H
    b_h = tile.zeros([BK, BV], dtype=tile.float32)
    if USE_INITIAL_STATE:
        p_h0 = tile.make_block_ptr(h0 + i_bh * K * V, (K, V), (V, 1), (i_k * BK, i_v * BV), (BK, BV), (1, 0))
        b_h += tile.load(p_h0, boundary_check=(0, 1)).to(tile.float32)
    p_k = tile.make_block_ptr(k + (i_b * T * H + i_h) * K, (K, T), (1, H * K), (i_k * BK, 0), (BK, BT), (0, 1))
    p_v = tile.make_block_ptr(v + (i_b * T * H + i_h) * V, (T, V), (H * V, 1), (0, i_v * BV), (BT, BV), (1, 0))
    p_g = tile.make_block_ptr(g + i_b * T * H + i_h, (T,), (H,), (0,), (BT,), (0,))
    for i_t in range(NT):
        p_h = tile.make_block_ptr(h + ((i_b * NT + i_t) * H + i_h) * K * V, (K, V), (V, 1), (i_k * BK, i_v * BV),
                                  (BK, BV), (1, 0))
        tile.store(p_h, b_h.to(p_h.dtype.element_ty), boundary_check=(0, 1))
        b_k = tile.load(p_k, boundary_check=(0, 1))
        b_v = tile.load(p_v, boundary_check=(0, 1))
        b_gate = tile.load(p_g, boundary_check=(0,)).to(tile.float32)
        b_g = tile.cumsum(b_gate, axis=0)
        b_g_last = tile.sum(b_gate, axis=0)
        b_h *= tile.exp(b_g_last)
        b_k = (b_k * tile.exp(b_g_last - b_g)[None, :]).to(b_k.dtype)
        b_h += tile.dot(b_k, b_v, allow_tf32=False)
        p_k = tile.advance(p_k, (0, BT))
        p_v = tile.advance(p_v, (BT, 0))
        p_g = tile.advance(p_g, (BT,))
    if STORE_FINAL_STATE:
        p_ht = tile.make_block_ptr(ht + i_bh * K * V, (K, V), (V, 1), (i_k * BK, i_v * BV), (BK, BV), (1, 0))
        tile.store(p_ht, b_h.to(p_ht.dtype.element_ty), boundary_check=(0, 1))


@tile.jit
def _chunk_simple_gla_fwd_o_kernel(
    q, k, v, h, g, o,
    scale,
    T, H,
    K: tile.constexpr,
    V: tile.constexpr,
    BT: tile.constexpr,
    BK: tile.constexpr,
    BV: tile.constexpr,
    NT: tile.constexpr,
):
    """o of chunk i_t: ((exp(G) * q) @ h + (causal exp(G_i - G_j) * q k^T) @ v) * scale."""
    i_v, i_t, i_bh = tile.program_id(0), tile.program_id(1), tile.program_id(2)
    i_b, i_h = i_bh // H, i_bh % H
    o_i = tile.arange(0, BT)
    m_s = o_i[:, None] >= o_i[None, :]
    b_o = tile.zeros([BT, BV], dtype=tile.float32)
    b_A = tile.zeros([BT, BT], dtype=tile.float32)
    for i_k in tile.static_range(tile.cdiv(K, BK)):
        p_q = tile.make_block_ptr(q + (i_b * T * H + i_h) * K, (T, K), (H * K, 1), (i_t * BT, i_k * BK), (BT, BK), (1, 0))
        p_k = tile.make_block_ptr(k + (i_b * T * H + i_h) * K, (K, T), (1, H * K), (i_k * BK, i_t * BT), (BK, BT), (0, 1))
        p_h = tile.make_block_ptr(h + ((i_b * NT + i_t) * H + i_h) * K * V, (K, V), (V, 1), (i_k * BK, i_v * BV),
                                  (BK, BV), (1, 0))
        b_q = tile.load(p_q, boundary_check=(0, 1))
        b_k = tile.load(p_k, boundary_check=(0, 1))
        b_h = tile.load(p_h, boundary_check=(0, 1))
        b_o += tile.dot(b_q, b_h.to(b_q.dtype), allow_tf32=False)
        b_A += tile.dot(b_q, b_k, allow_tf32=False)
    p_g = tile.make_block_ptr(g + i_b * T * H + i_h, (T,), (H,), (i_t * BT,), (BT,), (0,))
    b_g = tile.cumsum(tile.load(p_g, boundary_check=(0,)).to(tile.float32), axis=0)
    b_o = b_o * tile.exp(b_g)[:, None]
    b_A = b_A * tile.exp(b_g[:, None] - b_g[None, :])
    b_A = tile.where(m_s, b_A, 0.0)
    p_v = tile.make_block_ptr(v + (i_b * T * H + i_h) * V, (T, V), (H * V, 1), (i_t * BT, i_v * BV), (BT, BV), (1, 0))
    p_o = tile.make_block_ptr(o + (i_b * T * H + i_h) * V, (T, V), (H * V, 1), (i_t * BT, i_v * BV), (BT, BV), (1, 0))
    b_v = tile.load(p_v, boundary_check=(0, 1))
    b_o = (b_o + tile.dot(b_A.to(b_v.dtype), b_v, allow_tf32=False)) * scale
    tile.store(p_o, b_o.to(p_o.dtype.element_ty), boundary_check=(0, 1))


@tile.jit
def _causal_conv1d_fwd_kernel(
    x_ptr, w_ptr, bias_ptr, out_ptr,
    seqlen,
    stride_x_batch, stride_x_dim, stride_x_seq,
    stride_w_dim, stride_w_width,
    stride_o_batch, stride_o_dim, stride_o_seq,
    WIDTH: tile.constexpr,
    BLOCK_L: tile.constexpr,
    HAS_BIAS: tile.constexpr,
    SILU_ACTIVATION: tile.constexpr,
):
    """out[b, d, t] = act(bias[d] + sum_i w[d, i] * x[b, d, t - (WIDTH - 1) + i]), x zero
    before t = 0; one (batch, channel) a program, BLOCK_L steps at a time."""
    pid_b = tile.program_id(0).to(tile.int64)
    pid_d = tile.program_id(1).to(tile.int64)
    x_ptr += pid_b * stride_x_batch + pid_d * stride_x_dim
    out_ptr += pid_b * stride_o_batch + pid_d * stride_o_dim
    w_ptr += pid_d * stride_w_dim
    if HAS_BIAS:
        bias = tile.load(bias_ptr + pid_d).to(tile.float32)
    else:
        bias = 0.0
    weights = ()
    for i in tile.static_range(WIDTH):
        weights += (tile.load(w_ptr + i * stride_w_width).to(tile.float32),)
    for l0 in range(0, seqlen, BLOCK_L):
        offs = l0 + tile.arange(0, BLOCK_L)
        acc = tile.zeros((BLOCK_L,), dtype=tile.float32) + bias
        for i in tile.static_range(WIDTH):
            src = offs - (WIDTH - 1 - i)
            x = tile.load(x_ptr + src * stride_x_seq, mask=(src >= 0) & (src < seqlen), other=0.0)
            acc += weights[i] * x.to(tile.float32)
        if SILU_ACTIVATION:
            acc = acc / (1 + tile.exp(-acc))
        tile.store(out_ptr + offs * stride_o_seq, acc.to(out_ptr.dtype.element_ty), mask=offs < seqlen)


@tile.jit
def _vector_norm_kernel(
    X, Out, M, N, ord,
    BLOCK_M: tile.constexpr,
    BLOCK_N: tile.constexpr,
):
    """(sum_j |x_ij|^ord)^(1/ord) of BLOCK_M rows of a flattened (M, N) a program."""
    pid = tile.program_id(0).to(tile.int64) * BLOCK_M + tile.arange(0, BLOCK_M)[:, None]
    X = X + pid * N
    Out = Out + pid
    row_mask = pid < M
    acc = tile.zeros([BLOCK_M, BLOCK_N], dtype=tile.float32)
    for off in range(0, N, BLOCK_N):
        cols = off + tile.arange(0, BLOCK_N)[None, :]
        col_mask = cols < N
        mask = row_mask and col_mask
        a = tile.load(X + cols, mask, other=0.0).to(tile.float32)
        acc += tile.extra.cuda.libdevice.pow(tile.abs(a), ord)
    total = tile.sum(acc, axis=1, keep_dims=True)
    out = tile.extra.cuda.libdevice.pow(total, 1 / ord)
    tile.store(Out, out.to(Out.dtype.element_ty), row_mask)


@tile.jit
def _argmax_kernel(
    X, Out_value, Out_index,
    M, N, K,
    BLOCK_M: tile.constexpr,
    BLOCK_N: tile.constexpr,
):
    """The max and its first index along dim 1 of an (M, N, K) tensor, BLOCK_M rows and one
    k a program, N in blocks of BLOCK_N."""
    pid_m = tile.program_id(0)
    pid_k = tile.program_id(1)
    m_offset = pid_m * BLOCK_M + tile.arange(0, BLOCK_M)
    max_values = tile.full([BLOCK_M], dtype=tile.float32, value=float("-inf"))
    argmax_values = tile.full([BLOCK_M], dtype=tile.int64, value=0)
    for start_n in range(0, N, BLOCK_N):
        n_offset = start_n + tile.arange(0, BLOCK_N)
        offset = m_offset[:, None] * N * K + n_offset[None, :] * K + pid_k
        mask = m_offset[:, None] < M and n_offset[None, :] < N
        inp_vals = tile.load(X + offset, mask=mask, other=-float("inf")).to(tile.float32)
        local_argmax = tile.argmax(inp_vals, axis=1, tie_break_left=True)
        local_max = tile.max(inp_vals, axis=1)
        update = local_max > max_values
        max_values = tile.where(update, local_max, max_values)
        argmax_values = tile.where(update, start_n + local_argmax, argmax_values)
    out_offset = m_offset * K + pid_k
    tile.store(Out_value + out_offset, max_values.to(Out_value.dtype.element_ty), mask=m_offset < M)
    tile.store(Out_index + out_offset, argmax_values, mask=m_offset < M)


@tile.jit
def _max_with_indices_kernel(
    X, Out_value, Out_index,
    M, N,
    BLOCK_M: tile.constexpr,
    BLOCK_N: tile.constexpr,
):
    """FlagGems' argmax spelled with `tile.max(..., return_indices=True)` (one reduction
    returning the values and the first indices)."""
    pid_m = tile.program_id(0)
    m_offset = pid_m * BLOCK_M + tile.arange(0, BLOCK_M)
    max_values = tile.full([BLOCK_M], dtype=tile.float32, value=float("-inf"))
    argmax_values = tile.full([BLOCK_M], dtype=tile.int64, value=0)
    for start_n in range(0, N, BLOCK_N):
        n_offset = start_n + tile.arange(0, BLOCK_N)
        mask = (m_offset[:, None] < M) & (n_offset[None, :] < N)
        vals = tile.load(X + m_offset[:, None] * N + n_offset[None, :], mask=mask, other=-float("inf"))
        local_max, local_argmax = tile.max(vals, 1, return_indices=True, return_indices_tie_break_left=True)
        update = local_max > max_values
        max_values = tile.where(update, local_max, max_values)
        argmax_values = tile.where(update, start_n + local_argmax, argmax_values)
    tile.store(Out_value + m_offset, max_values, mask=m_offset < M)
    tile.store(Out_index + m_offset, argmax_values, mask=m_offset < M)



@tile.jit
def _k_major_load_kernel(
    k, out,
    T, K, HK,
    BK: tile.constexpr,
    BT: tile.constexpr,
):
    """k^T's [BK, BT] block read as fla reads it without block pointers: contiguous along dim 0
    (K), HK apart along dim 1 (T), then scaled and stored row-major."""
    i_t = tile.program_id(0)
    o_k = tile.arange(0, BK)
    o_t = i_t * BT + tile.arange(0, BT)
    mask = (o_k[:, None] < K) & (o_t[None, :] < T)
    b_k = tile.load(k + o_k[:, None] + o_t[None, :] * HK, mask=mask, other=0.0)
    tile.store(out + o_k[:, None] * T + o_t[None, :], b_k * 2, mask=mask)

# The checks take the kernels to launch, so that the Triton script runs its twins through them.

TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float16: dict(rtol=2e-3, atol=2e-3),
       torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2)}


def close(got, want, dtype, scale=1.0):
    """got (a dtype tensor) against want (f32, f64) rounded to dtype, to dtype's rounding."""
    tol = TOL[dtype]
    torch.testing.assert_close(got.float(), want.to(dtype).float(), rtol=tol["rtol"], atol=tol["atol"] * scale)


def check_cross_entropy(kernel, dtype, reduction, label_smoothing, z_scale):
    """7 rows of a 1000-word vocabulary in blocks of 256, the logits a strided view (rows of a
    wider buffer) and the labels every other one of a tensor; rows 2 and 5 ignored."""
    torch.manual_seed(0)
    rows, vocab, ignore_index = 7, 1000, -100
    buffer = torch.randn(rows, vocab + 40, dtype=dtype) * 3
    X = buffer[:, 20:20 + vocab]
    margins = buffer[:, :20].clone(), buffer[:, 20 + vocab:].clone()
    x = X.double().requires_grad_()
    target = torch.randint(0, vocab, (rows, 2))
    target[2, 0] = target[5, 0] = ignore_index
    Y = target[:, 0]
    keep = Y != ignore_index
    n_non_ignore = int(keep.sum())
    loss = torch.full((rows,), float("nan"))
    z_loss = torch.full((rows,), float("nan"))
    kernel[(rows,)](
        X, X.stride(0),
        Y, Y.stride(0),
        loss, z_loss, loss.stride(0),
        vocab, n_non_ignore,
        ignore_index, z_scale, label_smoothing,
        RETURN_Z_LOSS=True, BLOCK_SIZE=256, reduction=reduction,
    )
    lse = torch.logsumexp(x, -1)
    z_want = torch.where(keep, z_scale * lse * lse, 0.0)
    ce = torch.nn.functional.cross_entropy(x, Y, ignore_index=ignore_index, label_smoothing=label_smoothing,
                                           reduction="none")
    per_row = ce + z_want
    if reduction == "mean":
        per_row, z_want = per_row / n_non_ignore, z_want / n_non_ignore
    per_row.sum().backward()
    torch.testing.assert_close(loss[keep], per_row[keep].float(), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(z_loss[keep], z_want[keep].float(), rtol=1e-4, atol=1e-6)
    assert bool(loss[~keep].isnan().all())  # (an ignored row's loss is left as it was)
    close(X, x.grad, dtype, scale=1e-2 if reduction == "mean" else 1)
    assert bool((X[~keep] == 0).all())
    assert torch.equal(buffer[:, :20], margins[0]) and torch.equal(buffer[:, 20 + vocab:], margins[1])


def check_layer_norm_backward(kernel, dwdb_kernel, dtype):
    """37 rows of 300 columns (blocks of 512), 3 rows a program into 4 locked slots; x a
    strided view; dW, dB summed by the second kernel in blocks of 8 x 64."""
    torch.manual_seed(0)
    rows, n, eps, group, rows_per_program = 37, 300, 1e-5, 4, 3
    x = torch.randn(rows, n + 12, dtype=dtype)[:, 6:6 + n]
    w, b = torch.randn(n, dtype=dtype), torch.randn(n, dtype=dtype)
    dy = torch.randn(rows, n, dtype=dtype)
    x64, w64, b64 = (t.double().requires_grad_() for t in (x, w, b))
    torch.nn.functional.layer_norm(x64, (n,), w64, b64, eps).backward(dy.double())
    mean = x.float().mean(-1)
    rstd = torch.rsqrt(x.float().var(-1, unbiased=False) + eps)
    dx = torch.empty(rows, n, dtype=dtype)
    dw_partial, db_partial = torch.full((group, n), float("nan")), torch.full((group, n), float("nan"))
    lock = torch.zeros(2 * group, dtype=torch.int32)
    kernel[(tile.cdiv(rows, rows_per_program),)](
        x, x.stride(0),
        w,
        mean, rstd,
        dy, dy.stride(0),
        dx, dx.stride(0),
        dw_partial, db_partial, dw_partial.stride(0),
        lock,
        rows, n, rows_per_program,
        GROUP_SIZE_M=group, BLOCK_SIZE=512,
    )
    assert lock.tolist() == [0] * group + [1] * group
    close(dx, x64.grad, dtype, scale=4)
    dw, db = torch.empty(n, dtype=dtype), torch.empty(n, dtype=dtype)
    dwdb_kernel[(tile.cdiv(n, 64),)](dw_partial, db_partial, dw, db, group, n, BLOCK_SIZE_M=8, BLOCK_SIZE_N=64)
    close(dw, w64.grad, dtype, scale=8)
    close(db, b64.grad, dtype, scale=8)


def simple_gla_reference(q, k, v, g, scale, h0):
    """The recurrence S_t = exp(g_t) S_{t-1} + k_t^T v_t, o_t = scale * q_t S_t, in float64,
    over [B, T, H, K|V] (g: [B, T, H]); the outputs and the final state [B, H, K, V]."""
    q, k, v, g = (t.double() for t in (q, k, v, g))
    B, T, H, K = q.shape
    S = h0.double().clone() if h0 is not None else torch.zeros(B, H, K, v.shape[-1], dtype=torch.float64)
    o = torch.empty(B, T, H, v.shape[-1], dtype=torch.float64)
    for t in range(T):
        S = S * g[:, t].exp()[..., None, None] + k[:, t, :, :, None] * v[:, t, :, None, :]
        o[:, t] = scale * torch.einsum("bhk,bhkv->bhv", q[:, t], S)
    return o, S


def check_chunk_simple_gla(h_kernel, o_kernel, dtype, use_h0):
    """B 2, T 45 (chunks of 16), H 3, K 40 (blocks of 32), V 24 (blocks of 16): every dim
    ragged; the state carried through the chunks, an initial one or none."""
    torch.manual_seed(0)
    B, T, H, K, V, BT, BK, BV = 2, 45, 3, 40, 24, 16, 32, 16
    NT = tile.cdiv(T, BT)
    q, k, v = (torch.randn(B, T, H, d, dtype=dtype) / d ** 0.25 for d in (K, K, V))
    g = -torch.rand(B, T, H) * 0.3
    h0 = torch.randn(B, H, K, V) if use_h0 else None
    h = torch.full((B, NT, H, K, V), float("nan"))
    ht = torch.full((B, H, K, V), float("nan"))
    o = torch.empty(B, T, H, V, dtype=dtype)
    h_kernel[(tile.cdiv(K, BK), tile.cdiv(V, BV), B * H)](k, v, g, h, h0, ht, T, H, K=K, V=V, BT=BT, BK=BK, BV=BV, NT=NT)
    scale = K ** -0.5
    o_kernel[(tile.cdiv(V, BV), NT, B * H)](q, k, v, h, g, o, scale, T, H, K=K, V=V, BT=BT, BK=BK, BV=BV, NT=NT)
    want_o, want_ht = simple_gla_reference(q, k, v, g, scale, h0)
    close(o, want_o, dtype, scale=4 if dtype == torch.float32 else 2)
    torch.testing.assert_close(ht, want_ht.float(), rtol=1e-4, atol=1e-4 if dtype == torch.float32 else 2e-2)


def check_causal_conv1d(kernel, dtype, has_bias, channel_last):
    """(3, 37, 50) in blocks of 16 steps, width 4, SiLU; x channel-last (a (batch, seqlen,
    dim) tensor transposed, as mamba passes it) or contiguous; bias or None."""
    torch.manual_seed(0)
    batch, dim, seqlen, width = 3, 37, 50, 4
    x = torch.randn(batch, seqlen, dim, dtype=dtype).transpose(1, 2) if channel_last else torch.randn(batch, dim, seqlen, dtype=dtype)
    weight = torch.randn(dim, width, dtype=dtype)
    bias = torch.randn(dim, dtype=dtype) if has_bias else None
    out = torch.empty(batch, dim, seqlen, dtype=dtype)
    kernel[(batch, dim)](
        x, weight, bias, out,
        seqlen,
        x.stride(0), x.stride(1), x.stride(2),
        weight.stride(0), weight.stride(1),
        out.stride(0), out.stride(1), out.stride(2),
        WIDTH=width, BLOCK_L=16, HAS_BIAS=has_bias, SILU_ACTIVATION=True,
    )
    want = torch.nn.functional.conv1d(x.double(), weight.double()[:, None, :], bias.double() if has_bias else None,
                                      padding=width - 1, groups=dim)[..., :seqlen]
    close(out, torch.nn.functional.silu(want), dtype, scale=2)


def check_vector_norm(kernel, dtype, ord):
    """A (6, 5, 70) tensor's 30 rows of 70 (blocks of 4 x 32)."""
    torch.manual_seed(0)
    x = torch.randn(6, 5, 70, dtype=dtype)
    out = torch.empty(6, 5, 1, dtype=dtype)
    M, N = 30, 70
    kernel[(tile.cdiv(M, 4),)](x, out, M, N, ord, BLOCK_M=4, BLOCK_N=32)
    close(out, torch.linalg.vector_norm(x.double(), ord, dim=-1, keepdim=True), dtype, scale=4)


def check_argmax(kernel, dtype):
    """argmax along dim 1 of an (11, 300, 3) tensor (blocks of 4 x 64: elements 3 apart), of
    small integers so that every row has ties, which go to the first."""
    torch.manual_seed(0)
    M, N, K = 11, 300, 3
    x = torch.randint(-20, 20, (M, N, K)).to(dtype)
    value, index = torch.empty(M, K, dtype=dtype), torch.empty(M, K, dtype=torch.int64)
    kernel[(tile.cdiv(M, 4), K)](x, value, index, M, N, K, BLOCK_M=4, BLOCK_N=64)
    assert torch.equal(value, x.amax(1))
    assert torch.equal(index, x.argmax(1))


def check_k_major_load(kernel):
    """k of one head of a [T 45, H 3, K 40] tensor, transposed, in blocks of 64 x 16."""
    torch.manual_seed(0)
    T, H, K = 45, 3, 40
    k = torch.randn(T, H, K)
    out = torch.empty(K, T)
    kernel[(tile.cdiv(T, 16),)](k[:, 1], out, T, K, H * K, BK=64, BT=16)
    assert torch.equal(out, k[:, 1].T * 2)


def check_max_with_indices(kernel):
    """tile.max(..., return_indices=True) over 9 rows of 200 with ties."""
    torch.manual_seed(0)
    x = torch.randint(-9, 9, (9, 200)).float()
    value, index = torch.empty(9), torch.empty(9, dtype=torch.int64)
    kernel[(tile.cdiv(9, 4),)](x, value, index, 9, 200, BLOCK_M=4, BLOCK_N=64)
    assert torch.equal(value, x.amax(1))
    assert torch.equal(index, x.argmax(1))


CE_CASES = [(torch.float32, "mean", 0.1, 1e-4), (torch.bfloat16, "sum", 0.0, 0.0), (torch.float32, "none", 0.0, 1e-3)]


@pytest.mark.parametrize("dtype,reduction,label_smoothing,z_scale", CE_CASES)
def test_cross_entropy(dtype, reduction, label_smoothing, z_scale):
    check_cross_entropy(_cross_entropy_kernel, dtype, reduction, label_smoothing, z_scale)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_layer_norm_backward(dtype):
    check_layer_norm_backward(_layer_norm_backward_kernel, _layer_norm_dwdb_kernel, dtype)


@pytest.mark.parametrize("dtype,use_h0", [(torch.float32, True), (torch.bfloat16, False)])
def test_chunk_simple_gla(dtype, use_h0):
    check_chunk_simple_gla(_chunk_simple_gla_fwd_h_kernel, _chunk_simple_gla_fwd_o_kernel, dtype, use_h0)


@pytest.mark.parametrize("dtype,has_bias,channel_last", [(torch.float32, True, True), (torch.bfloat16, False, False)])
def test_causal_conv1d(dtype, has_bias, channel_last):
    check_causal_conv1d(_causal_conv1d_fwd_kernel, dtype, has_bias, channel_last)


@pytest.mark.parametrize("dtype,ord", [(torch.float32, 3.0), (torch.float16, 1.5)])
def test_vector_norm(dtype, ord):
    check_vector_norm(_vector_norm_kernel, dtype, ord)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_argmax(dtype):
    check_argmax(_argmax_kernel, dtype)


def test_k_major_load():
    check_k_major_load(_k_major_load_kernel)


def test_max_with_indices():
    check_max_with_indices(_max_with_indices_kernel)


@tile.jit
def _reduction_spellings_kernel(X, Out, Index, N: tile.constexpr):
    """Triton's signatures of sum, max and min: `dtype=`, and `return_indices` (third
    positionally) with its tie break, along an axis and over the whole tile."""
    rows = tile.arange(0, 4)
    cols = tile.arange(0, N)
    x = tile.load(X + rows[:, None] * N + cols[None, :])
    tile.store(Out + rows, tile.sum(x, axis=1, dtype=tile.float32))
    v, i = tile.max(x, 1, True)
    tile.store(Out + 4 + rows, v.to(tile.float32))
    tile.store(Index + rows, i)
    v, i = tile.min(x, axis=1, return_indices=True, return_indices_tie_break_left=False, keep_dims=True)
    tile.store(Out + 8 + rows[:, None], v.to(tile.float32))
    tile.store(Index + 4 + rows[:, None], i)
    v, i = tile.max(x, return_indices=True)
    tile.store(Out + 12, v.to(tile.float32))
    tile.store(Index + 8, i)
    tile.store(Out + 13, x.sum(0, False, tile.float32).max())


def test_reduction_spellings():
    """f16 values whose f16 sums would round (2049 is no f16), with ties of both extrema."""
    x = torch.tensor([[2048, 1, 3, 3], [-5, 7, -5, 7], [1, 1, 1, 1], [0, -2, 9, -2]], dtype=torch.float16)
    out, index = torch.empty(14), torch.empty(9, dtype=torch.int32)
    _reduction_spellings_kernel[(1,)](x, out, index, N=4)
    assert out[:4].tolist() == x.double().sum(1).tolist() and out[0] == 2055
    assert out[4:8].tolist() == x.float().amax(1).tolist() and index[:4].tolist() == [0, 1, 0, 2]
    assert out[8:12].tolist() == x.float().amin(1).tolist() and index[4:8].tolist() == [1, 2, 3, 3]
    assert out[12] == 2048 and index[8] == 0
    assert out[13] == x.float().sum(0).max()


# What the Triton twin holds: every kernel but the two on block pointers, which Triton 3.9 has
# removed ("Block pointers have been removed in favor of the tensor descriptor API", from its
# interpreter and its compiler alike; fla's kernels still run on the Triton 3.6 of the GPU machine).
TWIN_NAMES = ["_cross_entropy_kernel", "_layer_norm_backward_kernel", "_layer_norm_dwdb_kernel", "_causal_conv1d_fwd_kernel",
              "_vector_norm_kernel", "_argmax_kernel", "_max_with_indices_kernel", "_reduction_spellings_kernel",
              "_k_major_load_kernel"]

TRITON_SCRIPT = """
import triton.language.extra.cuda.libdevice  # (tl.extra.cuda.libdevice, as a Triton user's module imports it)
import test_training_library_style2 as t


@triton.jit
def _pow(x, y):
    return tl.exp2(y * tl.log2(x))


# Triton 3.9's interpreter leaves libdevice's functions as stubs (pow gives None): one it runs
# for the non-negative bases the norm raises (test_compiles_for_sm90a compiles the twin with libdevice's)
triton.language.extra.cuda.libdevice.pow = _pow

twin = triton_twin(t, t.TWIN_NAMES)
for case in t.CE_CASES:
    t.check_cross_entropy(twin._cross_entropy_kernel, *case)
t.check_layer_norm_backward(twin._layer_norm_backward_kernel, twin._layer_norm_dwdb_kernel, torch.float32)
t.check_causal_conv1d(twin._causal_conv1d_fwd_kernel, torch.float32, True, True)
t.check_causal_conv1d(twin._causal_conv1d_fwd_kernel, torch.float16, False, False)
t.check_vector_norm(twin._vector_norm_kernel, torch.float32, 3.0)
t.check_argmax(twin._argmax_kernel, torch.float32)
t.check_max_with_indices(twin._max_with_indices_kernel)
t.check_k_major_load(twin._k_major_load_kernel)
print("same")
"""


def test_same_source_in_tritons_interpreter():
    """Every kernel's own source renamed to Triton passes the same checks under Triton's
    interpreter: these are Triton kernels, and tile runs them as Triton does."""
    pytest.importorskip("triton")
    run = run_in_triton(TRITON_SCRIPT)
    assert run.returncode == 0 and "same" in run.stdout, run.stderr[-3000:]


@functools.cache
def _twin():
    """The kernels renamed to Triton (not its interpreter: this process's Triton compiles)."""
    return module_twin(__name__, TWIN_NAMES)


_meta = meta


def sm90_cases():
    """{name: (kernel, args, meta)} at a model's sizes: Llama 3's 128256-word vocabulary (Liger's
    block of 32768 on 32 warps), hidden 4096, mamba's 5120 inner channels of 2048 steps, a
    32000-word argmax."""
    tokens, vocab = 64, 128256
    logits = _meta(tokens, vocab)
    ce = (logits, vocab, _meta(tokens, dtype=torch.int64), 1, _meta(tokens, dtype=torch.float32),
          _meta(tokens, dtype=torch.float32), 1, vocab, tokens, -100, 1e-4, 0.1)
    rows, n, group = 4096, 4096, 64
    x = _meta(rows, n)
    ln = (x, n, _meta(n), _meta(rows, dtype=torch.float32), _meta(rows, dtype=torch.float32), x, n, x, n,
          _meta(group, n, dtype=torch.float32), _meta(group, n, dtype=torch.float32), n, _meta(2 * group, dtype=torch.int32),
          rows, n, 16)
    partial = _meta(group, n, dtype=torch.float32)
    dwdb = (partial, partial, _meta(n), _meta(n), group, n)
    batch, dim, seqlen = 2, 5120, 2048
    conv_x, conv_w, conv_b = _meta(batch, dim, seqlen), _meta(dim, 4), _meta(dim)
    conv_last = _meta(batch, seqlen, dim).transpose(1, 2)

    def conv(x, bias):
        return (x, conv_w, bias, _meta(batch, dim, seqlen), seqlen, *x.stride(), 4, 1, dim * seqlen, seqlen, 1)

    conv_meta = dict(WIDTH=4, BLOCK_L=512, SILU_ACTIVATION=True, num_warps=4)
    norm = (_meta(4096, 4096), _meta(4096, 1), 4096, 4096, 2.0)
    am_rows, am_vocab = 4096, 32000
    argmax = (_meta(am_rows, am_vocab, 1, dtype=torch.float32), _meta(am_rows, 1, dtype=torch.float32),
              _meta(am_rows, 1, dtype=torch.int64), am_rows, am_vocab, 1)
    return {
        "cross_entropy_mean": (_cross_entropy_kernel, ce, dict(RETURN_Z_LOSS=True, BLOCK_SIZE=32768, reduction="mean",
                                                               num_warps=32)),
        "cross_entropy_none": (_cross_entropy_kernel, ce, dict(RETURN_Z_LOSS=False, BLOCK_SIZE=32768, reduction="none",
                                                               num_warps=32)),
        "layer_norm_backward": (_layer_norm_backward_kernel, ln, dict(GROUP_SIZE_M=group, BLOCK_SIZE=4096, num_warps=8)),
        "layer_norm_dwdb": (_layer_norm_dwdb_kernel, dwdb, dict(BLOCK_SIZE_M=32, BLOCK_SIZE_N=128, num_warps=4)),
        "causal_conv1d_bias": (_causal_conv1d_fwd_kernel, conv(conv_x, conv_b), dict(HAS_BIAS=True, **conv_meta)),
        "causal_conv1d_channel_last": (_causal_conv1d_fwd_kernel, conv(conv_last, None), dict(HAS_BIAS=False, **conv_meta)),
        "vector_norm": (_vector_norm_kernel, norm, dict(BLOCK_M=4, BLOCK_N=1024, num_warps=4)),
        "argmax": (_argmax_kernel, argmax, dict(BLOCK_M=4, BLOCK_N=1024, num_warps=4)),
        "max_with_indices": (_max_with_indices_kernel, argmax[:1] + argmax[1:3] + argmax[3:5],
                             dict(BLOCK_M=4, BLOCK_N=1024, num_warps=4)),
    }


ONE_LAYOUT_A_SHAPE = pytest.mark.xfail(strict=True, reason=(
    "the bf16 rows (x, dy, dx) load and store 8 bytes at a time (`ld.global.v2.b32`) where Triton's "
    "compile loads 16: tile-assign-layouts gives all tiles of one shape one blocked layout, sized by the "
    "widest element any memory op of that shape moves (`layouts_by_shape`: here the f32 partial dW rows, "
    "4 a thread), where Triton's coalesce pass sizes each load's layout by its own element (8 bf16) and "
    "converts layouts through shared memory"))

# Where tile's instruction differs from Triton's and is as wide or wider: an int64 a thread stored as
# one 8-byte vector of its halves; the summed dW row stored 4 bf16 a thread where Triton's layout
# after the reduction holds one.
SAME_OR_WIDER = {
    "argmax": {"st.global.b64": "st.global.v2.b32"},
    "max_with_indices": {"st.global.b64": "st.global.v2.b32"},
    "layer_norm_dwdb": {"st.global.b16": "st.global.v2.b32"},
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=ONE_LAYOUT_A_SHAPE) if n == "layer_norm_backward" else n
                                  for n in sm90_cases()])
def test_compiles_for_sm90a(name, gpu_target):
    """No spills, and the same global load and store instructions as Triton's own compile of the
    twin (its JIT's specialization), but where SAME_OR_WIDER says tile's are as wide or wider."""
    gpu_target("sm_90a")
    kernel, args, meta = sm90_cases()[name]
    launcher = kernel.compile(*args, **meta)
    info = launcher.metadata["ptxas"]
    assert info["stack_frame"] == info["spill_stores"] == info["spill_loads"] == 0, info
    ptx = launcher.asm["ptx"]
    forms = memory_forms(ptx)
    if name == "layer_norm_backward":
        assert "atom.acq_rel.gpu.global.cas.b32" in ptx and "atom.acq_rel.gpu.global.exch.b32" in ptx
    pytest.importorskip("triton")
    theirs = triton_sm90(getattr(_twin(), kernel.name), list(args), meta, num_stages=1)
    assert theirs["spill_stores"] == 0
    want = {SAME_OR_WIDER.get(name, {}).get(f, f) for f in memory_forms(theirs["ptx"])}
    assert forms == want, (forms, memory_forms(theirs["ptx"]))


def _simple_gla_sm90(kernel_name, use_h0=True):
    """A chunked simple GLA at fla's sizes (T 4096, 16 heads of 128, chunks of 64) for sm_90a."""
    B, T, H, K, V, BT, BK, BV = 2, 4096, 16, 128, 128, 64, 64, 64
    NT = T // BT
    q, g = _meta(B, T, H, K), _meta(B, T, H, dtype=torch.float32)
    h, state = _meta(B, NT, H, K, V, dtype=torch.float32), _meta(B, H, K, V, dtype=torch.float32)
    if kernel_name == "fwd_h":
        kernel, args = _chunk_simple_gla_fwd_h_kernel, (q, q, g, h, *((state, state) if use_h0 else (None, None)), T, H)
    else:
        kernel, args = _chunk_simple_gla_fwd_o_kernel, (q, q, q, h, g, q, K ** -0.5, T, H)
    return kernel.compile(*args, K=K, V=V, BT=BT, BK=BK, BV=BV, NT=NT, num_warps=4)


@pytest.mark.parametrize("kernel_name,use_h0", [("fwd_h", True), ("fwd_h", False), ("fwd_o", True)])
def test_chunk_simple_gla_compiles_for_sm90a(kernel_name, use_h0, gpu_target):
    """Both kernels compile without spills, their dots on wgmma (no Triton to compare with here:
    its 3.9 has no block pointers)."""
    gpu_target("sm_90a")
    launcher = _simple_gla_sm90(kernel_name, use_h0)
    info = launcher.metadata["ptxas"]
    assert info["stack_frame"] == info["spill_stores"] == info["spill_loads"] == 0, info
    assert "wgmma.mma_async" in launcher.asm["ptx"]


def test_k_major_loads_vectorized_as_tritons(gpu_target):
    """k^T's block, contiguous down dim 0, loads 16 bytes at a time as Triton's compile of the twin
    does (`tile-column-loads`: it went one 16-bit element per load, 32 a thread), its store too."""
    gpu_target("sm_90a")
    k, out = _meta(4096, 16, 128), _meta(128, 4096)
    args, meta = (k, out, 4096, 128, 16 * 128), dict(BK=64, BT=64, num_warps=4)
    forms = memory_forms(_k_major_load_kernel.compile(*args, **meta).asm["ptx"])
    pytest.importorskip("triton")
    theirs = memory_forms(triton_sm90(_twin()._k_major_load_kernel, list(args), meta, num_stages=1)["ptx"])
    assert "ld.global.v4.b32" in theirs
    assert forms == theirs, (forms, theirs)


def test_chunk_simple_gla_k_major_block_loads_vectorized(gpu_target):
    """The same in fla's kernel, through its block pointers of order (0, 1) (Triton 3.9 has none
    to compare): no 16-bit element loaded on its own."""
    gpu_target("sm_90a")
    assert "ld.global.b16" not in memory_forms(_simple_gla_sm90("fwd_o").asm["ptx"])
