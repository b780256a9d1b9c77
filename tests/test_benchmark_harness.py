"""The benchmark harness's bookkeeping, without a GPU: what each implementation is timed
with at a point, which run it is reported with, and the markdown tables of a run."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import harness  # noqa: E402
import implementations  # noqa: E402
import matmul_rounds  # noqa: E402
import report  # noqa: E402

MATMUL = (4096, 4096, 4096)


def test_choices():
    assert implementations.choices("torch", "matmul", MATMUL) == [None]
    assert implementations.choices("tile", "matmul", MATMUL) == [None, implementations.PERSISTENT]
    tutorial = implementations.choices("triton", "matmul", MATMUL)
    assert tutorial == list(range(len(implementations.TRITON_TUTORIAL_MATMUL_CONFIGS))) and len(tutorial) == 16
    assert implementations.triton_matmul_config(0) == {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8,
                                                       "num_warps": 8, "num_stages": 3}
    # memory-bound points: half, the default and twice the default num_warps, for tile and Triton alike
    assert implementations.choices("tile", "layer_norm", (16384, 8192)) == [8, 16, 32]
    assert implementations.choices("triton", "layer_norm", (16384, 8192)) == [8, 16, 32]


def test_layer_norm_rows():
    # a row up to 16384 columns in one tile; a longer one looped over 8192-column chunks
    assert implementations.tile_config("layer_norm", (8192, 16384)) == {"BLOCK": 16384, "ONE_BLOCK": True, "num_warps": 16}
    assert implementations.tile_config("layer_norm", (4096, 32768)) == {"BLOCK": 8192, "ONE_BLOCK": False, "num_warps": 16}


def _run(status, ms=None, **cfg):
    run = {"status": status, "config": {"BLOCK_M": 128, "BLOCK_N": 256, "num_warps": 8, "num_stages": 3, **cfg}}
    return {**run, "ms": ms} if ms is not None else {**run, "detail": "OutOfResources: shared memory"}


@pytest.mark.parametrize("order", [0, 1])
def test_reported_run_is_the_fastest_and_lists_the_rest(order):
    runs = [_run("ok", 2.0, BLOCK_K=32), _run("skipped", BLOCK_K=128), _run("ok", 1.0, BLOCK_K=64)]
    if order:
        runs = runs[::-1]
    r = harness.reported_run(runs)
    assert r["ms"] == 1.0 and r["config"]["BLOCK_K"] == 64
    assert r["tried"] == {"128x256x32/8w/3s": 2.0, "128x256x64/8w/3s": 1.0}
    assert r["skipped"] == ["128x256x128/8w/3s"]


def test_reported_run_is_the_failure():
    failed = {"status": "mismatch", "config": {"num_warps": 16}, "detail": "max error 3"}
    assert harness.reported_run([{"status": "ok", "ms": 1.0, "config": {"num_warps": 8}}, failed]) is failed
    skipped = _run("skipped")
    assert harness.reported_run([skipped]) is skipped  # nothing ran: not a result


def test_too_large_configs_are_skipped_not_failed():
    # the message Triton 3.6 raised on the H200 for the tutorial's 128x256x128 config, 3 stages
    oor = "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 294912, Hardware limit: 232448."
    assert harness.too_large({"status": "error", "detail": oor})
    assert not harness.too_large({"status": "error", "detail": "CompilationError: bad"})
    assert not harness.too_large({"status": "mismatch", "detail": "OutOfResources in a message about numbers"})


def test_short_rows_go_several_a_program():
    """Softmax and layer norm rows up to SHORT_ROW: the rows kernels, ROWS_ELEMENTS elements a program."""
    cfg = implementations.tile_config("softmax", (262144, 256))
    assert cfg["ROWS"] * cfg["BLOCK"] == implementations.ROWS_ELEMENTS and cfg["BLOCK"] == 256
    assert implementations.tile_config("layer_norm", (131072, 1000))["ROWS"] == implementations.ROWS_ELEMENTS // 1024
    assert "ROWS" not in implementations.tile_config("softmax", (32768, 2048))
    assert "ROWS" not in implementations.tile_config("softmax", (65536, 1024))


def test_config_labels():
    assert report.config_label({"BM": 128, "BN": 256, "BK": 64, "num_warps": 8, "num_stages": 4, "programs": 132}) == \
        "128x256x64/8w/4s, persistent on 132"
    assert report.config_label({"BLOCK": 8192, "num_warps": 8}) == "8"


def test_markdown_tables(tmp_path):
    def impl(ms, cfg, **extra):
        return {"status": "ok", "ms": ms, "tflops": 2 * 4096 ** 3 / ms / 1e9, "config": cfg, **extra}

    tile_cfg = {"BM": 128, "BN": 256, "BK": 64, "num_warps": 8, "num_stages": 4}
    triton_cfg = implementations.triton_matmul_config(0)
    entry = {"kernel": "matmul", "shape": list(MATMUL), "dtype": "bfloat16", "group": "matmul", "bytes": 1, "flops": 2 * 4096 ** 3,
             "impls": {"tile": impl(0.18, tile_cfg), "triton": impl(0.19, triton_cfg, tried={"a": 0.19, "b": 0.2}, skipped=["c"]),
                       "torch": impl(0.17, {})}}
    meta = report.run_metadata("harness.py", 4000.0, 1 << 30)
    meta["epilogue"] = [{"impl": "tile", "size": 4096, "config": "128x256x64/8w/4s", "plain_ms": 0.18, "gelu_ms": 0.185,
                         "cost_pct": 2.7, "cost_quartiles_pct": [1.5, 3.25], "launches": 300}]
    def gbs(ms, warps, copy_pct):
        return {"status": "ok", "ms": ms, "gbs": 4000 * 0.1 / ms, "pct_of_copy": 0.4 / ms / 0.04,
                "pct_of_same_size_copy": copy_pct, "config": {"num_warps": warps}}

    softmax = {"kernel": "softmax", "shape": [16384, 4096], "dtype": "float32", "group": "main", "bytes": 1, "copy_gbs": 4100.0,
               "impls": {"tile": gbs(0.1, 16, 97.56), "triton": gbs(0.1, 16, 97.56), "torch": gbs(0.16, 4, 61.0)},
               "interleaved": {"launches": 300, "vs_triton": {"median": 1.0012, "low": 0.9991, "high": 1.0033}}}
    meta["paired"] = [{"size": 4096, "tile_choice": "persistent", "launches": 300,
                       "vs_triton": {"median": 1.021, "low": 0.995, "high": 1.04},
                       "vs_torch": {"median": 0.95, "low": 0.94, "high": 0.96}}]
    report.write_markdown(str(tmp_path), [softmax, entry], meta)
    text = (tmp_path / "summary.md").read_text()
    assert "| softmax | 16384x4096 | float32 | 4000 (100%) | 4000 (100%) | 2500 (62%) | 1.00x | 16 / 16 | `{'num_warps': 16}` | 4100 (97.6%) |" in text
    assert "| matmul | 4096x4096x4096 | bfloat16 |" in text
    assert "1.06x" in text  # Triton's time over tile's
    assert "128x256x64/8w/3s (2 timed, 1 too large)" in text
    assert "| tile | 4096³ | 128x256x64/8w/4s | 0.1800 | 0.1850 | 2.7% | 1.5% to 3.2% |" in text
    assert "| softmax | 16384x4096 | 300 | 1.0012x | 0.9991x to 1.0033x |" in text
    assert "| 4096³ | persistent | 300 | 1.021x | 0.995x to 1.040x | 0.950x | 0.940x to 0.960x |" in text


def test_interleaved_ratio_summary():
    """The median and quartiles of per-step ratios: a step's drift (all times x2) cancels."""
    steps = [{"tile": 1.0 * k, "triton": r * k} for k, r in ((1, 1.01), (2, 1.02), (1, 1.03), (2, 0.99), (1, 1.00))]
    got = matmul_rounds.ratio_summary(steps, "triton", "tile")
    assert got["median"] == pytest.approx(1.01) and got["low"] < got["median"] < got["high"]
