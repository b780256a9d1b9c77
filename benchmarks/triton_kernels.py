"""Triton reference kernels for the seed benchmarks, written in the style of the
Triton tutorials, so the harness can put tile next to what a Triton user would
write by hand for the same job.

This module imports triton at the top, so the harness imports it only in the
GPU pass (the compile-only pass on the CPU machine never touches Triton). Each
kernel has a host wrapper with the same calling convention as the matching
example in examples/; block sizes and warp counts follow the tutorials'
heuristics, chosen here and returned by `config_for` so the harness can record
them.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# The longest row a softmax program holds in registers at once, as for tile,
# so both run the same algorithm (one read per element, or two when chunked).
SOFTMAX_MAX_SINGLE = 32768
SOFTMAX_CHUNK = 4096
LAYER_NORM_MAX_BLOCK, LAYER_NORM_CHUNK = 16384, 8192  # as implementations.py's
# The first of the tutorial's configs (benchmarks/implementations.py: TRITON_TUTORIAL_MATMUL_CONFIGS,
# which the harness times in turn): a 128x256 f32 accumulator over 8 warps, 64-deep K steps, 3
# stages of A and B tiles in shared memory (3 * (128*64 + 64*256) * 2 B = 144 KiB).
MATMUL_CONFIG = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3}


def _warps(block: int) -> int:
    """More warps for longer rows, so each thread holds a few 16-byte vectors."""
    return min(max(block // 512, 4), 16)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def softmax_row_kernel(out_ptr, x_ptr, x_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(v - tl.max(v, axis=0))
    tl.store(out_ptr + row * out_row_stride + cols, num / tl.sum(num, axis=0), mask=mask)


@triton.jit
def softmax_looped_kernel(out_ptr, x_ptr, x_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    """Online softmax: a running max and a rescaled running sum per lane, then a second pass to write."""
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    cols = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    s = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        v = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, v)
        scale = tl.where(m_new == -float("inf"), 0.0, tl.exp(m - m_new))
        s = s * scale + tl.where(mask, tl.exp(v - m_new), 0.0)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        v = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + start + cols, tl.exp(v - row_max) / row_sum, mask=mask)


@triton.jit
def layer_norm_fwd_kernel(x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps,
                          BLOCK: tl.constexpr, ONE_BLOCK: tl.constexpr):
    """f32 statistics whatever the storage dtype. A row that fits one block stays in
    registers (variance from centred values); a longer one is read twice."""
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    cols = tl.arange(0, BLOCK)
    if ONE_BLOCK:
        mask = cols < n_cols
        v = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(v, axis=0) / n_cols
        centred = tl.where(mask, v - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / n_cols + eps)
        w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask).to(tl.float32)
        tl.store(out_row + cols, (centred * rstd * w + b).to(out_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros((BLOCK,), tl.float32)
        acc_sq = tl.zeros((BLOCK,), tl.float32)
        for start in range(0, n_cols, BLOCK):
            v = tl.load(x_row + start + cols, mask=start + cols < n_cols, other=0.0).to(tl.float32)
            acc += v
            acc_sq += v * v
        mean = tl.sum(acc, axis=0) / n_cols
        var = tl.maximum(tl.sum(acc_sq, axis=0) / n_cols - mean * mean, 0.0)
        rstd = 1.0 / tl.sqrt(var + eps)
        for start in range(0, n_cols, BLOCK):
            mask = start + cols < n_cols
            v = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + start + cols, mask=mask).to(tl.float32)
            b = tl.load(b_ptr + start + cols, mask=mask).to(tl.float32)
            tl.store(out_row + start + cols, ((v - mean) * rstd * w + b).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def add_relu_layernorm_kernel(x_ptr, r_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    offs = row * n_cols + cols
    h = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32) + tl.load(r_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    h = tl.maximum(h, 0.0)
    mean = tl.sum(h, axis=0) / n_cols
    centred = tl.where(mask, h - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (centred * rstd * w + b).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def patch_gather_kernel(video_ptr, out_ptr, n_t, n_h, n_w, n_k, s_b, s_t, s_c, s_h, s_w, ST: tl.constexpr,
                        PT: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr, BLOCK: tl.constexpr):
    """One program per patch, numbered in the output's order (x fastest); k indexes
    (c, dt, dy, dx) of the flattened patch."""
    patch = tl.program_id(0)
    px = patch % n_w
    py = patch // n_w % n_h
    clip = patch // (n_w * n_h)
    b = clip // n_t
    i = clip % n_t
    k = tl.arange(0, BLOCK)
    c = k // (PT * PH * PW)
    dt = (k // (PH * PW)) % PT
    dy = (k // PW) % PH
    dx = k % PW
    src = b * s_b + (i * ST + dt) * s_t + c * s_c + (py * PH + dy) * s_h + (px * PW + dx) * s_w
    mask = k < n_k
    tl.store(out_ptr + patch * n_k + k, tl.load(video_ptr + src, mask=mask), mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  HAS_BIAS: tl.constexpr, GELU: tl.constexpr):
    """C = act(A @ B [+ bias]) with f32 accumulation, one BLOCK_M x BLOCK_N tile of C per program.
    Programs walk C in bands of GROUP_M tile rows, column by column within a band, so the
    programs resident at one time share their A and B tiles in L2."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    band_size = GROUP_M * tiles_n
    band = pid // band_size
    row0 = band * GROUP_M
    band_rows = min(tiles_m - row0, GROUP_M)
    tile_m = row0 + (pid % band_size) % band_rows
    tile_n = (pid % band_size) // band_rows

    # Rows and columns past the edge wrap around (modulo) instead of being masked: they
    # load valid data, feed only accumulator entries that are never stored, and keep the
    # inner loop free of M/N masks. Only the K tail is masked. The contiguity hints hold
    # whenever N (and M) are multiples of the 16-byte vector, as at every benchmark shape.
    rows = (tile_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    cols = (tile_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rows = tl.max_contiguous(tl.multiple_of(rows, BLOCK_M), BLOCK_M)
    cols = tl.max_contiguous(tl.multiple_of(cols, BLOCK_N), BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + rows[:, None] * s_am + ks[None, :] * s_ak
    b_tile = b_ptr + ks[:, None] * s_bk + cols[None, :] * s_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_tile, mask=ks[None, :] < K - k0, other=0.0)
        b = tl.load(b_tile, mask=ks[:, None] < K - k0, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * s_ak
        b_tile += BLOCK_K * s_bk

    out_rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    out_cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + out_cols, mask=out_cols < N, other=0.0).to(tl.float32)[None, :]
    if GELU:
        # gelu, tanh approximation: 0.5 x (1 + tanh(u)) == x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3)
        u = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        acc = acc * tl.sigmoid(2.0 * u)
    mask = (out_rows[:, None] < M) & (out_cols[None, :] < N)
    tl.store(c_ptr + out_rows[:, None] * s_cm + out_cols[None, :] * s_cn, acc.to(c_ptr.dtype.element_ty), mask=mask)


def config_for(kernel: str, shape, num_warps: int | None = None) -> dict:
    """The launch parameters the wrappers below use for this kernel and shape
    (num_warps given: that many instead of the default)."""
    cfg = _default_config(kernel, shape)
    if num_warps:
        cfg["num_warps"] = num_warps
    return cfg


def _default_config(kernel: str, shape) -> dict:
    if kernel == "vector_add":
        return {"BLOCK": 1024, "num_warps": 4}
    if kernel == "patch_gather":
        return {"num_warps": 4}
    if kernel in ("matmul", "matmul_bias_gelu"):
        return dict(MATMUL_CONFIG)
    block = triton.next_power_of_2(shape[-1])
    if kernel == "softmax":
        if block <= SOFTMAX_MAX_SINGLE:
            return {"BLOCK": block, "looped": False, "num_warps": _warps(block)}
        return {"BLOCK": SOFTMAX_CHUNK, "looped": True, "num_warps": _warps(SOFTMAX_CHUNK)}
    if kernel == "layer_norm":
        block = block if block <= LAYER_NORM_MAX_BLOCK else LAYER_NORM_CHUNK
        return {"BLOCK": block, "num_warps": _warps(block)}
    if kernel == "add_relu_layernorm":
        return {"BLOCK": block, "num_warps": _warps(block)}
    raise KeyError(kernel)


def add(x: torch.Tensor, y: torch.Tensor, num_warps: int | None = None) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    cfg = config_for("vector_add", x.shape, num_warps)
    add_kernel[(triton.cdiv(n, cfg["BLOCK"]),)](x, y, out, n, BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    return out


def softmax(x: torch.Tensor, num_warps: int | None = None) -> torch.Tensor:
    """Softmax over dim 1 of a 2-D tensor with unit column stride."""
    rows, cols = x.shape
    out = torch.empty_like(x)
    cfg = config_for("softmax", x.shape, num_warps)
    kernel = softmax_looped_kernel if cfg["looped"] else softmax_row_kernel
    kernel[(rows,)](out, x, x.stride(0), out.stride(0), cols, BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    return out


def layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float = 1e-5, num_warps: int | None = None) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    cfg = config_for("layer_norm", x.shape, num_warps)
    layer_norm_fwd_kernel[(rows,)](x, w, b, out, x.stride(0), out.stride(0), cols, eps, BLOCK=cfg["BLOCK"],
                                   ONE_BLOCK=cfg["BLOCK"] >= cols, num_warps=cfg["num_warps"])
    return out


def add_relu_layernorm(x, r, w, b, eps: float = 1e-5, num_warps: int | None = None) -> torch.Tensor:
    """x and r contiguous (rows, cols); the whole row is one block."""
    rows, cols = x.shape
    out = torch.empty_like(x)
    cfg = config_for("add_relu_layernorm", x.shape, num_warps)
    add_relu_layernorm_kernel[(rows,)](x, r, w, b, out, cols, eps, BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    return out


def patch_gather(video: torch.Tensor, pt: int, st: int, ph: int, pw: int, num_warps: int | None = None) -> torch.Tensor:
    """Same layout as examples/patch_gather.py: (B, nT, nH, nW, C*pt*ph*pw), video read through its strides."""
    B, T, C, H, W = video.shape
    n_t, n_h, n_w, n_k = (T - pt) // st + 1, H // ph, W // pw, C * pt * ph * pw
    out = torch.empty((B, n_t, n_h, n_w, n_k), dtype=video.dtype, device=video.device)
    cfg = config_for("patch_gather", video.shape, num_warps)
    patch_gather_kernel[(B * n_t * n_h * n_w,)](video, out, n_t, n_h, n_w, n_k, *video.stride(), ST=st, PT=pt, PH=ph, PW=pw,
                                                BLOCK=triton.next_power_of_2(n_k), num_warps=cfg["num_warps"])
    return out


def matmul(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None, activation: str = "none",
           config: dict | None = None) -> torch.Tensor:
    """act(a @ b [+ bias]) for 2-D a (M, K) and b (K, N) in any strides; f32 accumulation,
    output in a's dtype. activation: "none" or "gelu" (tanh approximation). config: block
    sizes, GROUP_M, num_warps and num_stages (default MATMUL_CONFIG)."""
    assert activation in ("none", "gelu"), activation
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, f"inner dimensions differ: {K} and {K2}"
    out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    cfg = config or config_for("matmul", (M, N, K))
    grid = (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)
    matmul_kernel[grid](a, b, bias if bias is not None else out, out, M, N, K, *a.stride(), *b.stride(), *out.stride(),
                        BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"],
                        HAS_BIAS=bias is not None, GELU=activation == "gelu",
                        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return out
