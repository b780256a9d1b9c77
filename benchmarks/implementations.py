"""The benchmark's implementations of each seed kernel: tile (with the launch
parameters `tile_config` gives, the one place the compile-only and the GPU
passes take them from), Triton (benchmarks/triton_kernels.py) and torch, with
their inputs and torch references. `harness.py` runs them.
"""

from __future__ import annotations

import os
import sys

PATCH = {"pt": 2, "st": 2, "ph": 16, "pw": 16}
EPS = 1e-5
LAYER_NORM_MAX_BLOCK = 16384  # longer rows are read twice (as in triton_kernels.py),
# in chunks of LAYER_NORM_CHUNK columns: at 4096x32768 f16 on the H200 8192 at 16 warps ran 1.21x
# 16384 at 32 warps, for tile and Triton alike (results/2026-12-04-1827-long-row-probe).
LAYER_NORM_CHUNK = 8192
# Softmax and layer norm rows up to SHORT_ROW go several a program, ROWS_ELEMENTS elements a program:
# on the H200 (results/2026-12-04-1512) 1.33x / 2.5x Triton's one-row kernels at 256 columns; at 1024,
# softmax's one-row kernel was the faster (4126 against 4074 GB/s), layer norm's rows kernel (1.07x).
SHORT_ROW, ROWS_ELEMENTS = {"softmax": 512, "layer_norm": 1024}, 4096
MATMUL_KERNELS = ("matmul", "matmul_bias_gelu")
# The CUDA autotuning list of Triton's matmul tutorial (python/tutorials/03-matrix-multiplication.py,
# `get_cuda_autotune_config`), fp16 and fp8 entries alike, as (BLOCK_M, BLOCK_N, BLOCK_K, num_warps,
# num_stages), GROUP_M 8 in all. The harness times Triton's matmul at each, as its autotuner would,
# and reports it at its best; one that does not fit the shared memory is skipped, as the autotuner
# skips it.
TRITON_TUTORIAL_MATMUL_CONFIGS = [
    (128, 256, 64, 8, 3), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4),
    (128, 32, 32, 4, 4), (64, 32, 32, 2, 5), (32, 64, 32, 2, 5),
    (128, 256, 128, 8, 3), (256, 128, 128, 8, 3), (256, 64, 128, 4, 4), (64, 256, 128, 4, 4), (128, 128, 128, 4, 4),
    (128, 64, 64, 4, 4), (64, 128, 64, 4, 4), (128, 32, 64, 4, 4),
]


def next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def _warps(block: int) -> int:
    """4, 8 or 16 warps as the tile grows, keeping ~16 elements (a few 16-byte vectors) per thread."""
    return min(max(block // 512, 4), 16)


def tile_config(kernel: str, shape, num_warps: int | None = None, overrides: dict | None = None) -> dict:
    """Constexprs and num_warps of the tile launch for a kernel at a shape (num_warps
    given: that many instead of the default; `overrides`: values that replace the
    defaults, as harness.py's --set gives them); the one place both passes take them
    from. The codegen allows at most 256 32-bit registers' worth of tile elements
    per thread: BLOCK / (32 * num_warps) <= 256 (NP * BLOCK for the patch gather)."""
    if kernel == "vector_add":
        cfg = {"BLOCK": 1024, "num_warps": 4}
    elif shape[-1] <= SHORT_ROW.get(kernel, 0):
        # Short rows: ROWS a program (the examples' *_rows_kernel), ROWS_ELEMENTS elements a program.
        block = next_pow2(shape[-1])
        cfg = {"BLOCK": block, "ROWS": ROWS_ELEMENTS // block, "num_warps": _warps(ROWS_ELEMENTS)}
    elif kernel == "softmax":
        cols = shape[-1]
        if cols <= 32768:  # up to 64 f32 per thread with 16 warps: the row stays in registers
            cfg = {"BLOCK": next_pow2(cols), "SINGLE_TILE": True, "num_warps": _warps(next_pow2(cols))}
        else:
            cfg = {"BLOCK": 4096, "SINGLE_TILE": False, "num_warps": 8}
    elif kernel == "layer_norm":
        block = next_pow2(shape[-1])
        block = block if block <= LAYER_NORM_MAX_BLOCK else LAYER_NORM_CHUNK
        cfg = {"BLOCK": block, "ONE_BLOCK": shape[-1] <= block, "num_warps": _warps(block)}
    elif kernel == "add_relu_layernorm":
        block = next_pow2(shape[-1])  # the kernel holds the whole row in one tile
        cfg = {"BLOCK": block, "num_warps": _warps(block)}
    elif kernel == "patch_gather":
        n_k = shape[2] * PATCH["pt"] * PATCH["ph"] * PATCH["pw"]
        # NP neighbouring patches a program (the example's `patches`): 2 was the fastest of
        # 1, 2 and 4 on the H200 (results/2026-12-03-1806-patch-gather-np and later).
        cfg = {"BLOCK": next_pow2(n_k), "NP": 2, "num_warps": 4}
    elif kernel in MATMUL_KERNELS:
        # shape = (M, N, K). The best config benchmarks/matmul_sweep.py timed on the H200 after
        # TMA (2026-12-03 14:36 UTC, results/2026-12-03-1436-matmul-tma): a 128x256 f32
        # accumulator over 2 warpgroups (wgmma, 64x256 each), operands through 4-stage TMA rings.
        # Groups of 16 rows of tiles: against Triton in paired rounds 1.018x / 1.028x (4096³, one
        # program per tile / persistent) and 1.028x / 1.036x (8192³), where groups of 8 had 1.010x /
        # 1.002x and 1.011x / 1.022x, and of 4 less (results/2026-12-04-1538, group16/, group4/).
        cfg = {"BM": 128, "BN": 256, "BK": 64, "GROUP": 16, "num_warps": 8, "num_stages": 4,
               "ACTIVATION": "gelu" if kernel == "matmul_bias_gelu" else "none", **(overrides or {})}
        if cfg["BM"] * cfg["BN"] // (32 * cfg["num_warps"]) > 256:
            raise ValueError(f"{kernel} {shape}: a {cfg['BM']}x{cfg['BN']} accumulator is too large for "
                             f"{cfg['num_warps']} warps")
        return cfg
    else:
        raise KeyError(kernel)
    cfg.update(overrides or {})
    if num_warps:
        cfg["num_warps"] = num_warps
    if _elements(cfg) // (32 * cfg["num_warps"]) > 256:
        raise ValueError(f"{kernel} {shape}: {cfg} is too large a tile for {cfg['num_warps']} warps")
    return cfg


def _elements(cfg: dict) -> int:
    return cfg["BLOCK"] * cfg.get("NP", 1) * cfg.get("ROWS", 1)


PERSISTENT = "persistent"  # tile's matmul choice: the example's persistent kernel, one program per SM
H200_SMS = 132  # the grid of a persistent launch compiled ahead of time, with no GPU


def sm_count() -> int:
    import torch

    return torch.cuda.get_device_properties(0).multi_processor_count if torch.cuda.is_available() else H200_SMS


def triton_matmul_config(choice: int) -> dict:
    bm, bn, bk, warps, stages = TRITON_TUTORIAL_MATMUL_CONFIGS[choice]
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "num_warps": warps, "num_stages": stages}


def choices(impl: str, kernel: str, shape, overrides: dict | None = None) -> list:
    """What each implementation is timed with at a point, to be reported at its best:
    `warp_choices` for tile and Triton; at a matmul point, Triton's tutorial configs (indices
    into TRITON_TUTORIAL_MATMUL_CONFIGS) and tile's one config."""
    if impl == "torch":
        return [None]
    if impl == "triton" and kernel in MATMUL_KERNELS:
        return list(range(len(TRITON_TUTORIAL_MATMUL_CONFIGS)))
    if impl == "tile" and kernel in MATMUL_KERNELS:
        return [None, PERSISTENT]  # one program per output tile, and a persistent grid
    return warp_choices(kernel, shape, overrides)


def warp_choices(kernel: str, shape, overrides: dict | None = None) -> list[int | None]:
    """The num_warps each implementation is timed with at a memory-bound point: half, the
    default and twice, within 4 to 32 warps (tile and Triton alike, each reported at its
    best). None: the default (tile's one config at a matmul point)."""
    if kernel in MATMUL_KERNELS:
        return [None]
    cfg = tile_config(kernel, shape, overrides=overrides)
    base = cfg["num_warps"]
    return [w for w in (base // 2, base, base * 2) if 4 <= w <= 32 and _elements(cfg) // (32 * w) <= 256]


def make_inputs(kernel: str, shape, dtype, device: str) -> tuple:
    """Random inputs; on 'meta' they have no data, and only their specialization matters."""
    import torch

    def t(*s, scale=1.0, shift=0.0):
        return (torch.randn(s, device=device) * scale + shift).to(dtype)

    if kernel == "vector_add":
        return t(*shape), t(*shape)
    if kernel == "softmax":
        return (t(*shape, scale=4.0),)
    if kernel == "layer_norm":
        return t(*shape, scale=2.0, shift=1.0), t(shape[1]), t(shape[1])
    if kernel == "add_relu_layernorm":
        return t(*shape), t(*shape), t(shape[1]), t(shape[1])
    if kernel == "patch_gather":
        B, T, C, H, W = shape
        # Stored channels-last, read as (B, T, C, H, W): a strided view with a unit channel stride.
        return (t(B, T, H, W, C).permute(0, 1, 4, 2, 3),)
    if kernel in MATMUL_KERNELS:
        M, N, K = shape
        # a ~ N(0, 1/K), b ~ N(0, 1): each output element is ~ N(0, 1). The plain case
        # gets a zero bias (the tile kernel always adds one; see tile_impl).
        bias = t(N) if kernel == "matmul_bias_gelu" else torch.zeros(N, device=device, dtype=dtype)
        return t(M, K, scale=K ** -0.5), t(K, N), bias
    raise KeyError(kernel)


def _examples():
    """The tile kernels, imported from the examples folder of the tile package in use
    (on the GPU machine, the snapshot whose sources the cache keys hash)."""
    import tile

    path = os.path.join(os.path.dirname(os.path.abspath(tile.__file__)), "examples")
    if path not in sys.path:
        sys.path.insert(0, path)
    import add_relu_layernorm
    import fused_softmax
    import layer_norm
    import patch_gather
    import vector_add

    return vector_add, fused_softmax, layer_norm, add_relu_layernorm, patch_gather


def _matmul_example():
    _examples()  # puts the examples folder on sys.path
    import matmul

    return matmul


def tile_impl(kernel: str, shape, choice=None, overrides: dict | None = None):
    """A function of the inputs that launches the tile kernel with `tile_config` and returns
    its output. `choice` is one of `choices("tile", ...)`: a num_warps (None: the default), or
    at a matmul point None (one program per output tile) or PERSISTENT. It launches the
    example's kernel directly, not its wrapper, because the wrappers take no num_warps and
    some pick their own BLOCK."""
    import torch

    vector_add, fused_softmax, layer_norm, arln, patch_gather = _examples()
    cfg = dict(tile_config(kernel, shape, None if choice == PERSISTENT else choice, overrides))
    if kernel == "vector_add":
        def run(x, y):
            out, n = torch.empty_like(x), x.numel()
            vector_add.add_kernel[((n + cfg["BLOCK"] - 1) // cfg["BLOCK"],)](x, y, out, n, **cfg)
            return out
    elif kernel == "softmax":
        def run(x):
            out = torch.empty_like(x)
            if "ROWS" in cfg:
                fused_softmax.softmax_rows_kernel[(-(-x.shape[0] // cfg["ROWS"]),)](
                    x, out, x.shape[0], x.shape[1], x.stride(0), out.stride(0), **cfg)
                return out
            fused_softmax.softmax_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), out.stride(0), **cfg)
            return out
    elif kernel == "layer_norm":
        def run(x, w, b):
            out = torch.empty_like(x)
            if "ROWS" in cfg:
                layer_norm.layer_norm_rows_kernel[(-(-x.shape[0] // cfg["ROWS"]),)](
                    x, w, b, out, x.shape[0], x.shape[1], x.stride(0), out.stride(0), EPS, **cfg)
                return out
            layer_norm.layer_norm_kernel[(x.shape[0],)](x, w, b, out, x.shape[1], x.stride(0), out.stride(0), EPS, **cfg)
            return out
    elif kernel == "add_relu_layernorm":
        def run(x, r, w, b):
            out = torch.empty_like(x)
            arln.add_relu_layernorm_kernel[(x.shape[0],)](x, r, w, b, out, x.shape[1], EPS, **cfg)
            return out
    elif kernel == "patch_gather":
        def run(video):
            B, T, C, H, W = video.shape
            p = PATCH
            n_t, n_h, n_w, n_k = (T - p["pt"]) // p["st"] + 1, H // p["ph"], W // p["pw"], C * p["pt"] * p["ph"] * p["pw"]
            out = torch.empty((B, n_t, n_h, n_w, n_k), dtype=video.dtype, device=video.device)
            # The example's compile-time arguments (its whole-row path for this channels-last video), the warps ours.
            meta = {**patch_gather.launch_options(video, **p, patches=cfg["NP"]), "num_warps": cfg["num_warps"]}
            assert meta["BLOCK"] == cfg["BLOCK"], (meta, cfg)
            grid = (-(-n_w // cfg["NP"]), n_h, B * n_t)
            patch_gather.patch_gather_kernel[grid](video, out, n_t, n_h, n_w, n_k, *video.stride(), **meta)
            return out
    elif kernel in MATMUL_KERNELS:
        mm = _matmul_example()

        if choice == PERSISTENT:
            cfg["programs"] = sm_count()

        # The example's wrapper, which takes the kernel options too. The kernel always loads
        # and adds the bias; the plain case passes a zero bias vector (make_inputs), which
        # costs ~nothing next to the GEMM (N loads per tile).
        def run(a, b, bias):
            return mm.matmul(a, b, bias, cfg["ACTIVATION"], cfg["BM"], cfg["BN"], cfg["BK"], cfg["GROUP"],
                             programs=cfg.get("programs"), num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    else:
        raise KeyError(kernel)
    return run, cfg


def torch_impl(kernel: str):
    """What a torch user would write: eager ops, unfused where torch has no fused op."""
    import torch
    import torch.nn.functional as F

    def gather(video):
        B, T, C, H, W = video.shape
        p = PATCH
        n_t, n_h, n_w = (T - p["pt"]) // p["st"] + 1, H // p["ph"], W // p["pw"]
        v = video[..., : n_h * p["ph"], : n_w * p["pw"]].unfold(1, p["pt"], p["st"])  # B, nT, C, H, W, pt
        v = v.unflatten(3, (n_h, p["ph"])).unflatten(5, (n_w, p["pw"]))  # B, nT, C, nH, ph, nW, pw, pt
        return v.permute(0, 1, 3, 5, 2, 7, 4, 6).reshape(B, n_t, n_h, n_w, -1)

    return {
        "vector_add": lambda x, y: x + y,
        "softmax": lambda x: torch.softmax(x, dim=1),
        "layer_norm": lambda x, w, b: F.layer_norm(x, x.shape[-1:], w, b, EPS),
        "add_relu_layernorm": lambda x, r, w, b: F.layer_norm(torch.relu(x + r), x.shape[-1:], w, b, EPS),
        "patch_gather": gather,
        "matmul": lambda a, b, bias: torch.matmul(a, b),  # cuBLAS
        "matmul_bias_gelu": lambda a, b, bias: F.gelu(torch.matmul(a, b) + bias, approximate="tanh"),
    }[kernel]


def reference(kernel: str, inputs):
    """The expected output, computed in f32 and cast to the output dtype."""
    import torch
    import torch.nn.functional as F

    if kernel == "vector_add":
        return inputs[0] + inputs[1]
    if kernel == "softmax":
        return torch.softmax(inputs[0].float(), dim=1).to(inputs[0].dtype)
    if kernel == "layer_norm":
        x, w, b = inputs
        return F.layer_norm(x.float(), x.shape[-1:], w.float(), b.float(), EPS).to(x.dtype)
    if kernel == "add_relu_layernorm":
        return _examples()[3].reference(*inputs, eps=EPS)
    if kernel == "patch_gather":
        return _examples()[4].reference(inputs[0], **PATCH)
    if kernel in MATMUL_KERNELS:  # f32 matmul (TF32 is off by default in torch), + bias, [gelu], to bf16
        return _matmul_example().reference(*inputs, activation="gelu" if kernel == "matmul_bias_gelu" else "none")
    raise KeyError(kernel)


def triton_impl(kernel: str, shape, choice=None):
    """The Triton kernel's launch; `choice` is one of `choices("triton", ...)`: a num_warps
    (None: the default), or at a matmul point an index into TRITON_TUTORIAL_MATMUL_CONFIGS
    (None: the first)."""
    import triton_kernels as tk  # imported only here: the compile-only pass never needs Triton

    if kernel in MATMUL_KERNELS:
        cfg = triton_matmul_config(choice or 0)
        act = "gelu" if kernel == "matmul_bias_gelu" else "none"
        # no bias for the plain GEMM: Triton's epilogue is optional
        return (lambda a, b, bias: tk.matmul(a, b, bias if act == "gelu" else None, act, cfg)), cfg
    w = {"num_warps": choice}
    fns = {"vector_add": lambda x, y: tk.add(x, y, **w), "softmax": lambda x: tk.softmax(x, **w),
           "layer_norm": lambda x, w_, b: tk.layer_norm(x, w_, b, EPS, **w),
           "add_relu_layernorm": lambda x, r, w_, b: tk.add_relu_layernorm(x, r, w_, b, EPS, **w),
           "patch_gather": lambda v: tk.patch_gather(v, **PATCH, **w)}
    return fns[kernel], tk.config_for(kernel, shape, choice)
