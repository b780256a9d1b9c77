"""Runs the FileCheck tests in tests/filecheck/, one test per .mlir file (a tiny lit).

Each `// RUN:` line of a file (a trailing `\\` continues it on the next RUN line)
is run with bash, pipefail on, after substituting `tile-opt` with this
interpreter's `-m tile.passes.tile_opt`, `FileCheck` with the `filecheck`
script of the `filecheck` package (next to sys.executable), and `%s` with the
file's path. Every RUN line must exit 0.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent / "filecheck"
FILES = sorted(HERE.glob("*.mlir"))
FILECHECK = Path(sys.executable).parent / "filecheck"


def run_lines(path: Path) -> list[str]:
    commands, cur = [], ""
    for line in path.read_text().splitlines():
        m = re.match(r"^\s*//\s*RUN:(.*)$", line)
        if not m:
            continue
        cur += m.group(1).strip()
        if cur.endswith("\\"):
            cur = cur[:-1] + " "
        else:
            commands.append(cur)
            cur = ""
    assert not cur, f"{path.name}: the last RUN line ends with a continuation"
    return commands


def substitute(command: str, path: Path) -> str:
    tile_opt = f"{shlex.quote(sys.executable)} -m tile.passes.tile_opt"
    command = re.sub(r"(?<![\w/.-])tile-opt(?![\w-])", lambda _: tile_opt, command)
    command = re.sub(r"(?<![\w/.-])FileCheck(?![\w-])", lambda _: shlex.quote(str(FILECHECK)), command)
    return command.replace("%s", shlex.quote(str(path)))


def test_suite_is_complete():
    names = {p.name for p in FILES}
    for expected in ("dialect.mlir", "invalid.mlir", "tile-fuse.mlir", "tile-assign-layouts.mlir",
                     "convert-tile-to-linalg.mlir", "clone-elementwise-producers.mlir", "memref-copy-to-linalg.mlir"):
        assert expected in names, f"missing tests/filecheck/{expected}"
    assert FILECHECK.exists(), f"{FILECHECK} not found: pip install filecheck==1.0.6"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_filecheck(path: Path):
    commands = run_lines(path)
    assert commands, f"{path.name} has no RUN line"
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    for raw in commands:
        command = substitute(raw, path)
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=path.parent, env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (
            f"RUN: {raw}\n$ {command}\nexit code {proc.returncode}\n"
            f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
        )
