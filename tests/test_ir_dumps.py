"""TILE_DUMP_IR's per-pass dumps (MLIR's IR printer, after each change, with the kernel's
source locations), the README's example file names, and `python -m tile.passes.ir_diff`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))


@pytest.fixture(scope="module")
def vector_add_dumps(tmp_path_factory):
    """The dump folder of examples/vector_add.py compiled for sm_90a (n = 1000, BLOCK = 1024)."""
    import vector_add

    folder = tmp_path_factory.mktemp("dumps")
    env = {"TILE_DUMP_IR": str(folder), "TILE_TARGET": "sm_90a", "TILE_COMPILE_ONLY": "1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        x = torch.rand(1000)
        launcher = vector_add.add_kernel.compile(x, x, torch.empty(1000), 1000, BLOCK=1024)
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    (kernel,) = [d for d in folder.iterdir() if d.name.startswith("add_kernel-")]
    return kernel, launcher


def test_readme_dump_names_are_the_ones_written(vector_add_dumps):
    kernel, _ = vector_add_dumps
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Looking inside"):]
    section = section[: section.index("\n## ", 1)]
    named = re.findall(r"\b(\d\d-[a-z0-9-]+\.(?:mlir|ll|ptx|cubin))\b", section)
    assert len(named) >= 5, named
    written = sorted(os.listdir(kernel))
    missing = [n for n in named if n not in written]
    assert not missing, f"README names {missing}; written: {written}"
    numbers = [int(f.split("-")[0]) for f in written]
    assert numbers == list(range(1, len(written) + 1))


def _body(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("// -----// IR Dump"))


def test_pass_dumps_only_after_change_with_source_locations(vector_add_dumps):
    kernel, launcher = vector_add_dumps
    files = sorted(os.listdir(kernel))
    passes = [f for f in files if f.endswith(".mlir") and "-stage-" not in f]
    assert passes, files
    source = str(ROOT / "examples" / "vector_add.py")
    texts = [(kernel / f).read_text() for f in files if f.endswith(".mlir")]
    for prev, cur in zip(texts, texts[1:]):
        assert _body(prev) != _body(cur) or "IR Dump" not in cur  # a pass dump always differs from the one before it
    first = (kernel / passes[0]).read_text()
    assert first.startswith("// -----// IR Dump After")
    # The ops carry the kernel's file:line:col: the tile.load of line 12 of vector_add.py.
    lines = Path(source).read_text().splitlines()
    load_line = next(i for i, line in enumerate(lines, 1) if "tile.load(x" in line)
    assert re.search(rf'loc\("{re.escape(source)}":{load_line}:\d+\)', first), first[-800:]
    # No dump for a pass that changed nothing: tile-verify only checks.
    assert not any(f.endswith("-tile-verify.mlir") for f in files)
    assert any(f.endswith("-canonicalize.mlir") for f in files)
    # The stages' own texts stay without locations (what launcher.asm shows).
    assert "loc(" not in launcher.asm["tile-opt"]


def test_inspect_text_and_html(vector_add_dumps, tmp_path):
    kernel, _ = vector_add_dumps
    run = [sys.executable, "-m", "tile.passes.ir_diff"]
    out = subprocess.run(run + [str(kernel.parent)], capture_output=True, text=True, cwd=tmp_path, check=True).stdout
    canon = min(f for f in os.listdir(kernel) if f.endswith("-canonicalize.mlir"))
    # canonicalize merged vector_add's two constants 0.0 (the loads' `other`): a line removed.
    hunk = out[out.index(f"+++ {canon}"):]
    hunk = hunk[: hunk.index("\n--- ")]
    assert re.search(r"^-\s+%cst_0 = arith.constant", hunk, re.M), hunk
    assert "loc(" not in out
    page = tmp_path / "diffs.html"
    subprocess.run(run + [str(kernel), "--html", str(page)], check=True, cwd=tmp_path)
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html and "http" not in html
    assert html.count("<details>") == sum(1 for f in os.listdir(kernel) if f.endswith(".mlir")) - 1
    assert 'class="del">-' in html and 'class="add">+' in html


def test_inspect_without_dumps_says_so(tmp_path):
    r = subprocess.run([sys.executable, "-m", "tile.passes.ir_diff", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 1 and "no numbered IR dumps" in r.stderr
