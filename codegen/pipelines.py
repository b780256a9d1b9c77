"""The pass pipeline of each stage, per target.

A target is an ordered list of named stages (see `compiler.py`); the stages
that are MLIR pass pipelines take their pass lists from here (`stage_passes`),
and `tile.Pipeline` edits them (`pass_pipeline.py`). Names are the ones
`tile-opt --pass-pipeline=` accepts: tile passes and upstream passes mix.
No MLIR here: the runtime keys its caches by these lists.
"""

from __future__ import annotations

from ..frontend.errors import TileError
from .backend.targets import PTX_FEATURES

GPU_TARGETS = ("sm_80", "sm_90", "sm_90a")

# tile-canonicalize after canonicalize and cse: what they cannot do to tile ops (IRDL gives them no traits).
# Without its merging for now: it changed the sm_90a PTX of 13 of 44 example launch groups (benchmarks/compare_ptx.py);
# in flash attention, Q's column arange merged with its row arange (both arange(0, 128)) left Q's load out of
# tile-pipeline's shared-memory copies (32 plain ld.global): the tile passes expect unshared producers.
TILE_OPT = ["tile-verify", "tile-induction-offsets", "canonicalize", "cse", "tile-canonicalize{merge=0}",
            "tile-small-int-to-float", "tile-fuse"]

LINALG = [
    "convert-tile-to-linalg",
    "convert-elementwise-to-linalg",
    "clone-elementwise-producers",
    "linalg-fuse-elementwise-ops",
    "canonicalize",
    "cse",
]

_BUFFERIZE = "one-shot-bufferize{bufferize-function-boundaries=1 function-boundary-type-conversion=identity-layout-map}"

CPU_LLVM = [
    _BUFFERIZE,
    "memref-copy-to-linalg",
    "tile-cpu-grid",
    "buffer-deallocation-pipeline",
    "tile-inline-cas",  # (an llvm.cmpxchg before it would stop buffer deallocation)
    "convert-linalg-to-loops",
    "emulate-i1-memrefs",
    "expand-float8",
    "arith-emulate-unsupported-floats{source-types=bf16,f16 target-type=f32}",
    "ieee-min-max",  # (before arith-expand, which would drop their signed zeros)
    # f32 -> bf16 on the bits: a host with AVX512-BF16 would get VCVTNEPS2BF16, which flushes subnormals
    "arith-expand{include-bf16=1}",
    "expand-strided-metadata",
    "lower-affine",
    "convert-scf-to-cf",
    # tanh and exp2 go to libm (tanhf, exp2f): math-expand-ops' formulas lost tanh's small values
    # (tanh(1e-20) == 0) and ~20 ulp of exp2; expm1 and log1p too (libm-calls), whose LLVM forms lose x near 0
    "libm-calls",
    "convert-math-to-llvm",
    "convert-math-to-libm",
    "finalize-memref-to-llvm",
    "convert-arith-to-llvm",
    "convert-index-to-llvm",
    "convert-func-to-llvm",
    "convert-cf-to-llvm",
    "reconcile-unrealized-casts",
]


def tile_opt(options: dict) -> list[str]:
    if options["target"] == "cpu":
        return list(TILE_OPT)  # (float8 dots: widened to f16 by convert-tile-to-linalg)
    distributed = options.get("codegen", "distributed") == "distributed"
    wgmma = " wgmma=1" if options["target"] == "sm_90a" else ""
    pipelined = distributed and options.get("num_stages", 1) > 1
    fp8 = f"tile-fp8-dots{{num-warps={options['num_warps']}{wgmma + ' mma=1' if distributed else ''}}}"
    # (before tile-fuse, the last)
    divisible = options.get("divisible_args", "")
    column_loads = "tile-column-loads" + (f"{{divisible-args={divisible}}}" if divisible else "")
    passes = TILE_OPT[:-1] + ["tile-trans-loads"] * pipelined + [fp8] + ["tile-k-major-loads"] * pipelined \
        + [column_loads] * distributed + TILE_OPT[-1:]
    passes.append(f"tile-assign-layouts{{num-warps={options['num_warps']}{wgmma}}}")
    if pipelined:
        divisible, tma = options.get("divisible_args", ""), ""
        if options["target"] == "sm_90a" and divisible:  # TMA for aligned whole blocks, else cp.async rings
            tma = f" tma=1 divisible-args={divisible}"
        passes.append(f"tile-pipeline{{num-stages={options['num_stages']}{tma}}}")
    if options.get("codegen", "distributed") == "distributed" and options["target"] == "sm_90a" \
            and options.get("divisible_args"):
        passes.append(f"tile-tma-stores{{divisible-args={options['divisible_args']}}}")
    # (on every GPU target: where it cannot apply, it says why on the loops that asked for it)
    passes.append(f"tile-warp-specialize{{num-warps={options['num_warps']}}}")
    return passes


def gpu(options: dict) -> list[str]:
    return [
        _BUFFERIZE,
        "memref-copy-to-linalg",
        "canonicalize",
        "convert-linalg-to-parallel-loops",
        "tile-inline-cas",
        f"tile-gpu-launch{{num-threads={options['num_warps'] * 32}}}",
        "emulate-i1-memrefs",  # (a mask's i1 buffer: the LLVM lowering of its store aborted the process)
        "expand-float8",  # (float8 conversions by integer code on this path, as on the CPU)
        "exact-f32-ops",
        "canonicalize",
        "cse",
    ]


def gpu_distributed(options: dict) -> list[str]:
    divisible = options.get("divisible_args", "")
    spec = (f" divisible-args={divisible}" if divisible else "") + (" noalias=1" if options.get("noalias") else "")
    if options["target"] == "sm_80":  # (no e4m3 form of cvt before sm_89)
        spec += " float8-cvt=0 arch=80"
    return [f"convert-tile-to-gpu{{num-warps={options['num_warps']}{spec}}}", "tile-consumer-barriers", "emulate-i1-memrefs",
            "canonicalize", "cse"]


def nvvm(target: str) -> list[str]:
    features = PTX_FEATURES.get(target, "+ptx80")
    # convert-math-to-llvm after convert-gpu-to-nvvm: the math ops libdevice has no function
    # for (math.absi of i8 and i16: it has __nv_abs for i32 alone) become LLVM intrinsics.
    return [
        f"nvvm-attach-target{{chip={target} features={features} O=3}}",
        "gpu.module(convert-nvgpu-to-nvvm, expand-strided-metadata, lower-affine, convert-scf-to-cf, "
        "convert-gpu-to-nvvm{index-bitwidth=64}, convert-math-to-llvm, convert-vector-to-llvm, convert-ub-to-llvm, "
        "convert-nvvm-to-llvm, canonicalize, cse, reconcile-unrealized-casts)",
        "reconcile-unrealized-casts",
        "align-dynamic-shared",
    ]


def stage_passes(options: dict) -> dict[str, list[str]]:
    """The pass list of each MLIR pass stage of `options["target"]`, in stage order (the
    other stages, LLVM IR -> PTX -> cubin, are not MLIR passes)."""
    target, codegen = options["target"], options.get("codegen", "distributed")
    if target == "cpu":
        return {"tile-opt": tile_opt(options), "linalg": list(LINALG), "llvm": list(CPU_LLVM)}
    if target not in GPU_TARGETS:
        raise TileError(f"unknown target '{target}': use cpu or one of {', '.join(GPU_TARGETS)}")
    if codegen == "linalg":
        return {"tile-opt": tile_opt(options), "linalg": list(LINALG), "gpu": gpu(options), "nvvm": nvvm(target)}
    return {"tile-opt": tile_opt(options), "gpu": gpu_distributed(options), "nvvm": nvvm(target)}
