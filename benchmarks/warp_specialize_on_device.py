"""Warp specialization on the GPU: examples/matmul.py (bf16 4096^3 at two tile configs, fp16
1000x1104x912 and 1000x1100x900, odd sizes), examples/flash_attention.py (B=4, H=32,
N=4096, D=128, bf16; its loads go through cp.async, so it only warns), `rows_attention_kernel`
below (the same on (B*H*N, D) tensors, by TMA) and Triton's tutorial 06 forward (tensor
descriptors) with `warp_specialize=True`, each checked against torch, then timed
against the same kernel without it (the K loop pipelined by the consumer warps themselves)
and torch in interleaved launches (matmul_rounds.py). A JSON summary (median ms, TFLOP/s,
the pipelined kernel's time over the specialized one's with quartiles, each build's threads,
registers and whether the loop was split, with the compiler's reason where not) to stdout
and to $OUT/warp_specialize.json where OUT is set.

Each case runs in a subprocess of its own with a time limit: a kernel that deadlocks (a
producer waiting on an mbarrier nobody arrives on) is reported as one ("timeout"), and
the others still run.

    python3 benchmarks/warp_specialize_on_device.py --compile-only   # CPU machine: fills the cache (sm_90a)
    python3 benchmarks/warp_specialize_on_device.py                  # a GPU
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tile  # noqa: E402  (the runtime alone: no MLIR on a GPU machine)

LAUNCHES = 100
TIMEOUT_S = 60  # one case: starting, loading its modules, the checks and the timed launches (~10-20 s on an H100)

# name: (kernel, dtype, shape, tile config); matmul shapes are (M, N, K), attention's (B, H, N, D)
CASES = {
    "matmul bf16 4096^3 128x128x64/4w/4s": ("matmul", "bfloat16", (4096, 4096, 4096),
                                            dict(BM=128, BN=128, BK=64, GROUP=8, num_warps=4, num_stages=4)),
    # the config benchmarks/implementations.py times tile's matmul at (two consumer warpgroups)
    "matmul bf16 4096^3 128x256x64/8w/4s": ("matmul", "bfloat16", (4096, 4096, 4096),
                                            dict(BM=128, BN=256, BK=64, GROUP=16, num_warps=8, num_stages=4)),
    "matmul fp16 1000x1104x912 128x128x64/4w/3s": ("matmul", "float16", (1000, 1104, 912),
                                                   dict(BM=128, BN=128, BK=64, GROUP=8, num_warps=4, num_stages=3)),
    # no row stride a multiple of 16 elements: cp.async rings, warp_specialize ignored (a warning)
    "matmul fp16 1000x1100x900 128x128x64/8w/3s": ("matmul", "float16", (1000, 1100, 900),
                                                   dict(BM=128, BN=128, BK=64, GROUP=8, num_warps=8, num_stages=3)),
    # examples/flash_attention.py: (B, H, N, D) tensors of any strides, cp.async rings, warp_specialize ignored
    "attention bf16 4x32x4096x128": ("attention", "bfloat16", (4, 32, 4096, 128),
                                     dict(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=2)),
    # rows_attention_kernel: the keys by TMA, the KV loop split (two dots a slot)
    "rows attention bf16 4x32x4096x128 128x64/8w/3s": ("rows_attention", "bfloat16", (4, 32, 4096, 128),
                                                      dict(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=3)),
    "rows attention bf16 4x32x4096x64 128x128/8w/2s": ("rows_attention", "bfloat16", (4, 32, 4096, 64),
                                                      dict(BLOCK_M=128, BLOCK_N=128, num_warps=8, num_stages=2)),
    # Triton's tutorial 06 forward (examples/triton_tutorials), K and V through tensor descriptors: its KV loop
    # splits; at 4 warps its consumers take one block an SM's registers (240) and still spill a little
    "t06 attention fwd fp16 4x32x4096x128 128x64/4w/2s": ("t06", "float16", (4, 32, 4096, 128),
                                                          dict(BLOCK_M=128, BLOCK_N=64, num_warps=4, num_stages=2)),
    "t06 attention fwd fp16 4x32x4096x128 128x64/8w/2s": ("t06", "float16", (4, 32, 4096, 128),
                                                          dict(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=2)),
}


@tile.kernel
def rows_attention_kernel(q, k, v, out, n_ctx, rows, qk_scale, BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr,
                          D: tile.constexpr, WARP_SPECIALIZE: tile.constexpr = False):
    """FlashAttention's forward (non-causal) on (B*H*N, D) row-major tensors, one program per
    BLOCK_M queries of one (batch, head): its keys are rows bh*N .. bh*N + N - 1, read as whole
    blocks masked at the tensors' bounds, so that on sm_90a they go by TMA and the KV loop can
    be warp-specialized (examples/flash_attention.py reads (B, H, N, D) tensors of any strides,
    through cp.async rings). N must be a multiple of both blocks."""
    start_m = tile.program_id(0)
    base = tile.program_id(1) * n_ctx
    rm = base + start_m * BLOCK_M + tile.arange(0, BLOCK_M)
    rd = tile.arange(0, D)
    qt = tile.load(q + rm[:, None] * D + rd[None, :], mask=(rm[:, None] < rows) & (rd[None, :] < D), other=0.0)
    m_i = tile.full((BLOCK_M,), float("-inf"), tile.float32)
    l_i = tile.zeros((BLOCK_M,), tile.float32)
    acc = tile.zeros((BLOCK_M, D), tile.float32)
    for start_n in tile.range(0, n_ctx, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        rn = base + start_n + tile.arange(0, BLOCK_N)
        kv = (rn[:, None] < rows) & (rd[None, :] < D)
        kt = tile.load(k + rn[:, None] * D + rd[None, :], mask=kv, other=0.0)
        s = tile.dot(qt, tile.trans(kt))
        m_new = tile.maximum(m_i, tile.max(s, axis=1) * qk_scale)
        p = tile.exp2(s * qk_scale - m_new[:, None])
        alpha = tile.exp2(m_i - m_new)
        l_i = l_i * alpha + tile.sum(p, axis=1)
        vt = tile.load(v + rn[:, None] * D + rd[None, :], mask=kv, other=0.0)
        acc = tile.dot(p.to(vt.dtype), vt, acc * alpha[:, None])
        m_i = m_new
    tile.store(out + rm[:, None] * D + rd[None, :], (acc / l_i[:, None]).to(out.dtype.element_ty),
               mask=(rm[:, None] < rows) & (rd[None, :] < D))


def rows_attention(q, k, v, BLOCK_M=128, BLOCK_N=64, warp_specialize=False, **launch):
    """softmax(Q K^T / sqrt(D)) V of contiguous (B, H, N, D) tensors by `rows_attention_kernel`."""
    out = q.new_empty(q.shape)
    rows_attention_kernel[rows_attention_grid(q, BLOCK_M, BLOCK_N)](
        *rows_attention_args(q, k, v, out), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, D=q.shape[-1],
        WARP_SPECIALIZE=warp_specialize, **launch)
    return out


def rows_attention_grid(q, BLOCK_M: int, BLOCK_N: int) -> tuple:
    B, H, N, D = q.shape
    if N % BLOCK_M or N % BLOCK_N or not q.is_contiguous():
        raise ValueError(f"rows_attention: contiguous tensors, N ({N}) a multiple of {BLOCK_M} and {BLOCK_N}")
    return (N // BLOCK_M, B * H)


def rows_attention_args(q, k, v, out) -> tuple:
    """The kernel's run-time arguments: the (B*H*N, D) views, N, their rows, the exp2 scale."""
    B, H, N, D = q.shape
    return (*(t.view(-1, D) for t in (q, k, v, out)), N, B * H * N, D ** -0.5 * 1.4426950408889634)


def _inputs(kernel: str, dtype, shape, device: str):
    import torch

    torch.manual_seed(0)
    if kernel == "matmul":
        M, N, K = shape
        return (torch.randn(M, K, dtype=dtype, device=device) * K ** -0.5, torch.randn(K, N, dtype=dtype, device=device),
                torch.randn(N, dtype=dtype, device=device))
    return tuple(torch.randn(shape, dtype=dtype, device=device) for _ in range(3))


def _variants(kernel: str, args, cfg: dict) -> dict:
    """{name: (run, launcher)}: the kernel with and without warp specialization."""
    import torch

    from implementations import _examples

    _examples()
    import flash_attention
    import matmul

    out = {}
    for name, ws in (("warp specialized", True), ("pipelined", False)):
        if kernel == "matmul":
            a, b, bias = args
            M, K = a.shape
            N = b.shape[1]
            c = torch.empty(M, N, dtype=a.dtype, device=a.device)
            opts = dict(cfg, ACTIVATION="none", WARP_SPECIALIZE=ws)
            launcher = matmul.matmul_kernel.compile(a, b, bias, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), **opts)
            run = (lambda a, b, bias, ws=ws: matmul.matmul(a, b, bias, "none", cfg["BM"], cfg["BN"], cfg["BK"], cfg["GROUP"],
                                                           warp_specialize=ws, num_warps=cfg["num_warps"],
                                                           num_stages=cfg["num_stages"]))
        elif kernel == "t06":
            launch_t06 = _t06_launch(cfg, ws)
            launcher = launch_t06(*args, compile_only=True)
            run = launch_t06
        elif kernel == "rows_attention":
            q, k, v = args
            blocks = {x: cfg[x] for x in ("BLOCK_M", "BLOCK_N")}
            launch = {x: cfg[x] for x in ("num_warps", "num_stages")}
            launcher = rows_attention_kernel.compile(*rows_attention_args(q, k, v, torch.empty_like(q)), **blocks,
                                                     D=q.shape[-1], WARP_SPECIALIZE=ws, **launch)
            run = (lambda q, k, v, ws=ws: rows_attention(q, k, v, **blocks, warp_specialize=ws, **launch))
        else:
            q, k, v = args
            B, H, N, D = q.shape
            o = torch.empty_like(q)
            blocks = {x: cfg[x] for x in ("BLOCK_M", "BLOCK_N")}
            launch = {x: cfg[x] for x in ("num_warps", "num_stages")}
            launcher = flash_attention.attention_kernel.compile(
                q, k, v, o, N, D ** -0.5, H, *q.stride(), *k.stride(), *v.stride(), *o.stride(), **blocks, D=D,
                CAUSAL=False, WARP_SPECIALIZE=ws, **launch)
            run = (lambda q, k, v, ws=ws: flash_attention.attention(q, k, v, False, **blocks, WARP_SPECIALIZE=ws,
                                                                      **launch))
        out[name] = (run, launcher)
    return out


def _t06_launch(cfg: dict, ws: bool):
    """Tutorial 06's forward at one config (its autotuner's launch, by hand): run(q, k, v) -> out,
    or with compile_only the launcher."""
    import torch

    import tile

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(tile.__file__)), "examples", "triton_tutorials"))
    import t06_fused_attention as t06

    def run(q, k, v, compile_only=False):
        Z, H, N, D = q.shape
        o = torch.empty_like(q)
        M = torch.empty((Z, H, N), device=q.device, dtype=torch.float32)
        descs = [t06.TensorDescriptor(t, shape=[Z * H * N, D], strides=[D, 1], block_shape=[1, 1]) for t in (q, k, v, o)]
        meta = dict(BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], HEAD_DIM=D, FP8_OUTPUT=False)
        t06._host_descriptor_pre_hook(dict(meta, desc_q=descs[0], desc_k=descs[1], desc_v=descs[2], desc_o=descs[3]))
        args = (D ** -0.5, M, Z, H, *descs, N)
        meta.update(STAGE=1, warp_specialize=ws, IS_HOPPER=True, num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        if compile_only:
            return t06._attn_fwd.kernel.compile(*args, **meta)
        t06._attn_fwd.kernel[(N // cfg["BLOCK_M"], Z * H, 1)](*args, **meta)
        return o

    return run


def _torch_fn(kernel: str):
    import torch

    if kernel == "matmul":
        return lambda a, b, bias: torch.addmm(bias, a, b)
    return lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v)


def _reference(kernel: str, args):
    import torch

    if kernel == "matmul":
        a, b, bias = args
        return (a.float() @ b.float() + bias.float()).to(a.dtype)
    q, k, v = args
    return torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float()).to(q.dtype)


def _flops(kernel: str, shape) -> float:
    if kernel == "matmul":
        M, N, K = shape
        return 2 * M * N * K
    B, H, N, D = shape
    return 4 * B * H * N * N * D


def run_case(name: str, compile_only: bool, launches: int) -> dict:
    """One case: its builds (threads, registers, split or why not), the checks, the timings."""
    import torch

    kernel, dtype, shape, cfg = CASES[name]
    args = _inputs(kernel, getattr(torch, dtype), shape, "meta" if compile_only else "cuda")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        variants = _variants(kernel, args, cfg)
    entry = {"case": name, "builds": {}}
    for variant, (_, launcher) in variants.items():
        meta = launcher.metadata
        entry["builds"][variant] = {
            "threads": meta["num_threads"], "registers": (meta.get("ptxas") or {}).get("registers"),
            "spill_bytes": (meta.get("ptxas") or {}).get("spill_stores"),
            "split": "setmaxnreg" in (launcher.asm.get("ptx") or ""),
            "skipped": meta.get("warp_specialize_skipped", [])}
    entry["warnings"] = [str(w.message) for w in said]
    if compile_only:
        for run, _ in variants.values():  # the launches themselves (TILE_COMPILE_ONLY: compiled, not run)
            run(*args)
        return entry
    want = _reference(kernel, args)
    entry["checks"], ok = {}, True
    for variant, (run, _) in variants.items():
        got = run(*args)
        torch.cuda.synchronize()
        err = (got.float() - want.float()).abs().max().item() / max(want.float().abs().max().item(), 1e-6)
        good = err < 2e-2
        ok &= good
        entry["checks"][variant] = {"ok": good, "max_rel_err": err}
        print(f"{name} {variant}: {'matches torch' if good else 'FAIL'} (max rel err {err:.2e})", flush=True)
    entry["ok"] = ok
    from matmul_rounds import interleaved_launches, ratio_summary

    fns = {variant: run for variant, (run, _) in variants.items()}
    fns["torch"] = _torch_fn(kernel)
    steps = interleaved_launches(fns, args, launches=launches)
    flops = _flops(kernel, shape)
    entry["timing"] = {n: {"median_ms": statistics.median(t[n] for t in steps),
                           "tflops": flops / statistics.median(t[n] for t in steps) / 1e9} for n in fns}
    entry["pipelined_time_over_specialized"] = ratio_summary(steps, "pipelined", "warp specialized")
    entry["torch_time_over_specialized"] = ratio_summary(steps, "torch", "warp specialized")
    print(f"{name}: " + ", ".join(f"{n} {v['median_ms']:.3f} ms {v['tflops']:.0f} TFLOP/s"
                                  for n, v in entry["timing"].items()), flush=True)
    return entry


def _in_subprocess(name: str, launches: int, timeout: int) -> dict:
    """run_case in a child process, whose last stdout line is its JSON; a hang is reported."""
    cmd = [sys.executable, os.path.abspath(__file__), "--case", name, "--launches", str(launches)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        print(out, end="")
        print(f"{name}: FAIL: no result in {timeout} s (a deadlock?)", flush=True)
        return {"case": name, "ok": False, "error": f"timeout after {timeout} s", "log": out[-2000:]}
    lines = r.stdout.strip().splitlines()
    print("\n".join(lines[:-1]), flush=True)
    if r.returncode != 0 or not lines:
        print(f"{name}: FAIL: exit code {r.returncode}\n{r.stderr[-3000:]}", flush=True)
        return {"case": name, "ok": False, "error": f"exit code {r.returncode}", "stderr": r.stderr[-3000:]}
    return json.loads(lines[-1])


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--launches", type=int, default=LAUNCHES)
    ap.add_argument("--timeout", type=int, default=TIMEOUT_S, help="seconds a case may take")
    ap.add_argument("--case", choices=list(CASES), help="run this case here (what each subprocess does)")
    args = ap.parse_args()
    if args.compile_only:
        os.environ.setdefault("TILE_TARGET", "sm_90a")
        os.environ["TILE_COMPILE_ONLY"] = "1"
        for name in CASES:
            entry = run_case(name, True, args.launches)
            print(f"{name}: compiled {json.dumps(entry['builds'])}", flush=True)
        return 0
    if args.case:
        print(json.dumps(run_case(args.case, False, args.launches)), flush=True)
        return 0
    import torch

    summary = {"device": torch.cuda.get_device_name(), "launches": args.launches,
               "results": [_in_subprocess(name, args.launches, args.timeout) for name in CASES]}
    print(json.dumps(summary, indent=1))
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "warp_specialize.json"), "w") as fh:
            json.dump(summary, fh, indent=1)
    return 0 if all(r.get("ok") for r in summary["results"]) else 1


if __name__ == "__main__":
    sys.exit(main())
