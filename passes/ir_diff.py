"""`python -m tile.passes.ir_diff DIR`: what each pass changed, from a TILE_DUMP_IR folder.

    python -m tile.passes.ir_diff DIR [--html out.html] [--locations] [--context N]

DIR is a TILE_DUMP_IR folder (one sub-folder per compiled kernel) or one kernel's folder.
For each kernel, the numbered MLIR dumps are diffed in order (a unified diff per pass),
printed as text, or with `--html` written as one self-contained page. Locations
(`loc(...)` and `#loc` lines) are left out of the diffs unless `--locations`: pass dumps
carry them, stage files do not, and their numbering shifts with every change.
Reads text files only: no MLIR needed.
"""

from __future__ import annotations

import argparse
import difflib
import html
import os
import re
import sys

_DUMP = re.compile(r"^(\d+)-(.+)\.mlir$")
_LOC = re.compile(r"\s*loc\((?:[^()]|\([^()]*\))*\)")
_LOC_ALIAS = re.compile(r"^#loc\d*\s*=")
_HEADER = re.compile(r"^// -----// IR Dump")


def kernel_folders(folder: str) -> list[str]:
    """The folders under `folder` (itself included) that hold numbered dumps."""
    found = []
    for root, _, files in os.walk(folder):
        if any(_DUMP.match(f) for f in files):
            found.append(root)
    return sorted(found)


def normalized(text: str, locations: bool) -> list[str]:
    """The lines to diff: without the printer's header, and without locations unless asked."""
    out = []
    for line in text.splitlines():
        if _HEADER.match(line):
            continue
        if not locations:
            if _LOC_ALIAS.match(line):
                continue
            line = _LOC.sub("", line)
        out.append(line)
    while out and not out[-1].strip():
        out.pop()
    return out


def pass_diffs(folder: str, locations: bool = False, context: int = 3) -> list[tuple[str, str, list[str]]]:
    """(previous dump, dump, unified diff lines) for each MLIR dump of a kernel after its first;
    an empty diff is a stage file that repeats the pass before it."""
    names = sorted((f for f in os.listdir(folder) if _DUMP.match(f)), key=lambda f: int(_DUMP.match(f).group(1)))
    out, prev, prev_lines = [], None, None
    for name in names:
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            lines = normalized(f.read(), locations)
        if prev is not None:
            diff = list(difflib.unified_diff(prev_lines, lines, prev, name, n=context, lineterm=""))
            out.append((prev, name, diff))
        prev, prev_lines = name, lines
    return out


def render_text(folders: list[str], locations: bool, context: int) -> str:
    parts = []
    for folder in folders:
        parts.append(f"=== {folder}")
        for before, after, diff in pass_diffs(folder, locations, context):
            if diff:
                parts.append("\n".join(diff))
            else:
                parts.append(f"--- {before}\n+++ {after}\n(no change)")
    return "\n".join(parts) + "\n"


_CSS = """body{font-family:sans-serif;margin:1em}pre{font-family:monospace;font-size:12px;margin:0;overflow-x:auto}
details{border:1px solid #ccc;margin:4px 0;padding:2px 6px}summary{cursor:pointer}
.add{background:#e6ffec}.del{background:#ffebe9}.hunk{color:#6f42c1}.same{color:#888}"""


def _line_class(line: str) -> str:
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+") and not line.startswith("+++"):
        return "add"
    if line.startswith("-") and not line.startswith("---"):
        return "del"
    return ""


def render_html(folders: list[str], locations: bool, context: int) -> str:
    body = []
    for folder in folders:
        body.append(f"<h2>{html.escape(folder)}</h2>")
        for before, after, diff in pass_diffs(folder, locations, context):
            added = sum(1 for d in diff if _line_class(d) == "add")
            removed = sum(1 for d in diff if _line_class(d) == "del")
            title = f"{html.escape(after)} <span class=same>(+{added} -{removed} from {html.escape(before)})</span>"
            lines = "\n".join(f'<span class="{_line_class(d)}">{html.escape(d)}</span>' for d in diff[2:])
            body.append(f"<details><summary>{title}</summary><pre>{lines or '(no change)'}</pre></details>")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=utf-8><title>tile IR diffs</title><style>{_CSS}</style>"
            f"</head><body><h1>tile: what each pass changed</h1>\n" + "\n".join(body) + "\n</body></html>\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tile.passes.ir_diff", description=__doc__.splitlines()[0])
    p.add_argument("dir", help="a TILE_DUMP_IR folder, or one kernel's folder in it")
    p.add_argument("--html", metavar="OUT", help="write one self-contained HTML page to OUT")
    p.add_argument("--locations", action="store_true", help="keep loc(...) in the diffs")
    p.add_argument("--context", type=int, default=3, help="lines of context around each change (default 3)")
    args = p.parse_args(argv)
    folders = kernel_folders(args.dir)
    if not folders:
        sys.stderr.write(f"ir_diff: no numbered IR dumps under '{args.dir}' (TILE_DUMP_IR=DIR writes them)\n")
        return 1
    if args.html:
        with open(args.html, "w", encoding="utf-8") as f:
            f.write(render_html(folders, args.locations, args.context))
    else:
        sys.stdout.write(render_text(folders, args.locations, args.context))
    return 0


if __name__ == "__main__":
    sys.exit(main())
