"""The matmul measurements made in interleaved launches (harness.py runs them after the
points): tile's matmul against Triton's and cuBLAS, and the bias+gelu epilogue's cost over
the plain GEMM, each launched in turn on the same inputs, one launch each per step, so that
the clock drift of a GPU held at its power cap cancels. (Before 2026-12-04 17:09 these were
ABBA rounds of whole medians: six ratios a point, spread over +-3-5%.)"""

from __future__ import annotations

import statistics

import report
from implementations import MATMUL_KERNELS, PERSISTENT, make_inputs, tile_impl, torch_impl, triton_impl


LAUNCHES = 300  # interleaved launches per function: a median ratio to within a few tenths of a percent


def interleaved_launches(fns: dict, args: tuple, launches: int = LAUNCHES) -> list[dict]:
    """The functions launched in turn, one launch each per step, `launches` steps, the
    order rotated from step to step, each launch bracketed by its own CUDA events: each
    step's times, {name: ms}. A step's launches run back to back on the GPU, at one clock
    state, so the ratio of two of them cancels the drift of a GPU held at its power cap
    (whole medians timed seconds apart differ by several percent on it); the median of
    many steps' ratios is then precise to a few tenths of a percent."""
    import torch

    names = list(fns)
    for k in names:  # warm-up: the first launch of each pays for loading its module
        fns[k](*args)
    torch.cuda.synchronize()
    events = []
    for i in range(launches):
        order = names[i % len(names):] + names[:i % len(names)]
        step = {}
        for k in order:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fns[k](*args)
            end.record()
            step[k] = (start, end)
        events.append(step)
    torch.cuda.synchronize()
    return [{k: s.elapsed_time(e) for k, (s, e) in step.items()} for step in events]


def ratio_summary(steps: list[dict], num: str, den: str) -> dict:
    """The median over the steps of num's time over den's, and its quartiles."""
    each = statistics.quantiles([t[num] / t[den] for t in steps], n=4)
    return {"median": each[1], "low": each[0], "high": each[2]}


def paired_matmul(sizes, overrides: dict, choice: dict) -> list[dict]:
    """tile's plain matmul, both ways (one program per tile, and persistent), against Triton's
    (at the config it was fastest with at that size, `choice`) and torch's, in interleaved
    launches (`interleaved_launches`): per size and tile kernel, the median over the steps of
    Triton's time over tile's and torch's over tile's, with their quartiles. Each point's
    best-of-rounds figures compare implementations timed seconds apart on a GPU whose clocks
    drift by several percent under this load; launched in turn, the drift cancels."""
    import torch

    out = []
    for n in sizes:
        shape = (n, n, n)
        torch.manual_seed(0)
        args = make_inputs("matmul", shape, torch.bfloat16, "cuda")
        tiles = {"one program per tile": None, "persistent": PERSISTENT}
        fns = {name: tile_impl("matmul", shape, pick, overrides)[0] for name, pick in tiles.items()}
        fns.update({"triton": triton_impl("matmul", shape, choice.get(("triton", n)))[0], "torch": torch_impl("matmul")})
        steps = interleaved_launches(fns, args)
        for name in tiles:
            entry = {"size": n, "tile_choice": name, "launches": len(steps),
                     "median_ms": {k: statistics.median(t[k] for t in steps) for k in (name, "triton", "torch")}}
            for other in ("triton", "torch"):
                entry[f"vs_{other}"] = ratio_summary(steps, other, name)
            out.append(entry)
        del args
    return out


def epilogue_cost(sizes, overrides: dict, choice: dict) -> list[dict]:
    """The bias+gelu epilogue's cost over the plain GEMM, per implementation (tile and Triton,
    each with what its plain matmul was fastest with at that size, `choice`) and size: the
    two kernels launched in turn on the same inputs (`interleaved_launches`), the cost the
    median of the steps' ratios (with its quartiles). Timed apart, as the matmul points are,
    the second kernel runs on a GPU that has been hot for longer, at lower clocks, and the
    drift would read as epilogue cost."""
    import torch

    out = []
    for n in sizes:
        shape = (n, n, n)
        torch.manual_seed(0)
        a, b, bias = make_inputs("matmul_bias_gelu", shape, torch.bfloat16, "cuda")
        for impl in ("tile", "triton"):
            pick = choice.get((impl, n))
            make = ((lambda k: tile_impl(k, shape, pick, overrides)) if impl == "tile"
                    else (lambda k: triton_impl(k, shape, pick)))
            impls = {k: make(k) for k in MATMUL_KERNELS}
            steps = interleaved_launches({k: fn for k, (fn, _) in impls.items()}, (a, b, bias))
            med = {k: statistics.median(t[k] for t in steps) for k in MATMUL_KERNELS}
            cost = {k: 100 * (v - 1) for k, v in ratio_summary(steps, "matmul_bias_gelu", "matmul").items()}
            out.append({"impl": impl, "size": n, "config": report.config_label(impls["matmul"][1]),
                        "plain_ms": med["matmul"], "gelu_ms": med["matmul_bias_gelu"], "cost_pct": cost["median"],
                        "cost_quartiles_pct": [cost["low"], cost["high"]], "launches": len(steps)})
        del a, b, bias
    return out
