"""The matmul measurements made in rounds (harness.py runs them after the points): tile's
matmul against Triton's and cuBLAS, and the bias+gelu epilogue's cost over the plain GEMM,
each timed back to back on the same inputs in rounds that alternate the order (ABBA), so
that the clock drift of a GPU held at its power cap cancels."""

from __future__ import annotations

import statistics

import report
from implementations import MATMUL_KERNELS, PERSISTENT, make_inputs, tile_impl, torch_impl, triton_impl
from timing import MATMUL_TIMING, ROUNDS, time_ms


def abba_rounds(fns: dict, args: tuple) -> list[dict]:
    """2 * ROUNDS rounds of the functions timed back to back on the same inputs, in turn
    in their order and reversed (ABBA): each round's times, {name: ms}."""
    import torch

    rounds = []
    for r in range(2 * ROUNDS):
        order = list(fns) if r % 2 == 0 else list(fns)[::-1]
        rounds.append({k: time_ms(lambda: fns[k](*args), torch.cuda.synchronize, **MATMUL_TIMING)[0] for k in order})
    return rounds


def paired_matmul(sizes, overrides: dict, choice: dict) -> list[dict]:
    """tile's plain matmul, both ways (one program per tile, and persistent), against Triton's
    (at the config it was fastest with at that size, `choice`) and torch's, in ABBA rounds
    (`abba_rounds`): per size and tile kernel, the median over the rounds of Triton's time
    over tile's and torch's over tile's (their spread: the lowest and highest round). Each
    point's best-of-rounds figures compare implementations timed seconds apart on a GPU
    whose clocks drift by several percent under this load (the first timed, on a cool GPU,
    gains); timed back to back, in alternating order, the drift cancels."""
    import torch

    out = []
    for n in sizes:
        shape = (n, n, n)
        torch.manual_seed(0)
        args = make_inputs("matmul", shape, torch.bfloat16, "cuda")
        tiles = {"one program per tile": None, "persistent": PERSISTENT}
        fns = {name: tile_impl("matmul", shape, pick, overrides)[0] for name, pick in tiles.items()}
        fns.update({"triton": triton_impl("matmul", shape, choice.get(("triton", n)))[0], "torch": torch_impl("matmul")})
        rounds = abba_rounds(fns, args)
        for name in tiles:
            entry = {"size": n, "tile_choice": name, "rounds": rounds}
            for other in ("triton", "torch"):
                each = sorted(t[other] / t[name] for t in rounds)
                entry[f"vs_{other}"] = {"median": statistics.median(each), "low": each[0], "high": each[-1]}
            out.append(entry)
        del args
    return out


def epilogue_cost(sizes, overrides: dict, choice: dict) -> list[dict]:
    """The bias+gelu epilogue's cost over the plain GEMM, per implementation (tile and Triton,
    each with what its plain matmul was fastest with at that size, `choice`) and size: the
    two kernels timed back to back on the same inputs, 2 * ROUNDS
    times, in turn first and second (ABBA), and the cost the median of the rounds' ratios.
    Timed apart, as the matmul points are, the second kernel runs on a GPU that has been
    hot for longer, at lower clocks, and the drift reads as epilogue cost; so does it
    within a round, which the alternating order cancels."""
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
            fns = {k: fn for k, (fn, _) in impls.items()}
            rounds = abba_rounds(fns, (a, b, bias))
            med = {k: statistics.median(t[k] for t in rounds) for k in fns}
            ratio = statistics.median(t["matmul_bias_gelu"] / t["matmul"] for t in rounds)
            out.append({"impl": impl, "size": n, "config": report.config_label(impls["matmul"][1]), "plain_ms": med["matmul"], "gelu_ms": med["matmul_bias_gelu"],
                        "cost_pct": 100 * (ratio - 1), "rounds": rounds})
        del a, b, bias
    return out
