"""The code of docs/*.md and README.md runs, in order, in an empty folder.

Per document, every ```python block is executed in one namespace (written to a
file first, so that kernels have a source to compile); a block whose first line
is `# file: NAME` (or `// file: NAME`), in any language, is written to NAME
instead; a ```sh block that starts with `tile-opt` or `filecheck` runs in bash
(pipefail), with this interpreter's scripts first on PATH. Other blocks
(installation, the GPU machine's commands, expected output) are prose.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tile

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
BLOCK = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
FILE = re.compile(r"^(?:#|//) file: (\S+)\s*$")


def blocks(path: Path) -> list[tuple[str, str]]:
    return BLOCK.findall(path.read_text(encoding="utf-8"))


def test_docs_have_code():
    names = {p.name for p in DOCS}
    assert "write-a-pass.md" in names
    for doc in DOCS:
        assert any(lang == "python" for lang, _ in blocks(doc)), f"{doc.name} has no python block"


@pytest.mark.parametrize("doc", DOCS, ids=[p.name for p in DOCS])
def test_doc_code_runs(doc: Path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    env = dict(os.environ)
    path_env = {**env, "PATH": os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")}
    namespace = {"__name__": f"docs_{doc.stem}"}
    try:
        for i, (lang, body) in enumerate(blocks(doc)):
            first = body.splitlines()[0] if body else ""
            where = f"{doc.name}, code block {i + 1} ({lang or 'no language'})"
            if m := FILE.match(first):
                (tmp_path / m.group(1)).write_text(body)
            elif lang == "python":
                path = tmp_path / f"{doc.stem}_block{i + 1}.py"
                path.write_text(body)
                exec(compile(body, str(path), "exec"), namespace)  # noqa: S102  (the docs' own code)
            elif lang == "sh" and body.lstrip().startswith(("tile-opt", "filecheck")):
                run = subprocess.run(["bash", "-o", "pipefail", "-e", "-c", body], cwd=tmp_path, env=path_env,
                                     capture_output=True, text=True, timeout=120)
                assert run.returncode == 0, f"{where} failed:\n{body}\n{run.stdout}\n{run.stderr}"
    finally:
        os.environ.clear()  # (the docs set TILE_DUMP_IR and the like)
        os.environ.update(env)
        tile.pipeline_edits.clear()
