"""`tile-opt`: an mlir-opt for the tile dialect, for FileCheck tests and debugging.

    tile-opt FILE.mlir [-o OUT] [--pass-pipeline='builtin.module(tile-verify, canonicalize, tile-fuse)']
             [--split-input-file] [--verify-diagnostics] [--print-ir-after-all | --print-ir-after-change]
             [--mlir-print-debuginfo]
             [--load-pass-plugin=MODULE_OR_FILE.py ...]
    tile-opt --list-passes | --print-dialect

The input (a file, or `-` for stdin) is parsed in a context with the tile
dialect loaded, the pipeline (tile Python passes and upstream passes mixed,
see `registry.pass_manager`) runs on it, the tile ops' verifiers run after it
(`pass_runner.run_pipeline`), and the module is printed.
`--load-pass-plugin` imports a module or a `.py` file first, so that the
passes it registers (`@register_pass`) run by name (and are listed).

`--split-input-file` processes each chunk between `// -----` lines on its own.
`--verify-diagnostics` checks the diagnostics of each chunk against its
`// expected-error {{msg}}` annotations (also `-warning`, `-note`, `-remark`;
`@below`, `@above`, `@+N`, `@-N`, `@unknown`): same line, message substring.
Exit status: 0 on success; 1 with the error (no traceback) otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys

from mlir import ir

from ..dialects import irdl_source, make_context
from .plugins import load_plugin
from .pass_runner import run_pipeline
from .registry import load_all, pipeline_elements

SPLIT_MARKER = re.compile(r"^//\s*-----\s*$")
EXPECTED = re.compile(r"expected-(error|warning|note|remark)\s*(@[^\s{]*)?\s*\{\{(.*?)\}\}")
FILE_LOC = re.compile(r'loc\("[^"]*":(\d+):(\d+)')


class ToolError(Exception):
    """A failure reported to the user as text, without a traceback."""


@dataclasses.dataclass
class Diag:
    severity: str  # error, warning, note, remark
    line: int | None  # 1-based, relative to the chunk; None for an unknown location
    col: int
    message: str


def _diags(d, out: list[Diag]) -> None:
    """Copy a diagnostic (and its notes) out of MLIR while it is still alive."""
    loc = d.location
    if loc.is_a_file():
        line, col = loc.start_line, loc.start_col
    else:
        m = FILE_LOC.search(str(loc))
        line, col = (int(m.group(1)), int(m.group(2))) if m else (None, 0)
    out.append(Diag(d.severity.name.lower(), line, col, str(d.message)))
    for note in d.notes:
        if not str(note.message).startswith("see current operation"):  # mlir-opt omits these too
            _diags(note, out)


def split_chunks(text: str, split: bool) -> list[tuple[int, str]]:
    """(line offset, text) of each chunk; offset + a chunk-relative line = the file line."""
    if not split:
        return [(0, text)]
    chunks, start, cur = [], 0, []
    for i, line in enumerate(text.splitlines(keepends=True)):
        if SPLIT_MARKER.match(line):
            chunks.append((start, "".join(cur)))
            start, cur = i + 1, []
        else:
            cur.append(line)
    chunks.append((start, "".join(cur)))
    return chunks


def expectations(text: str) -> list[Diag]:
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines, start=1):
        for m in EXPECTED.finditer(line):
            kind, where, msg = m.group(1), m.group(2) or "", m.group(3)
            target: int | None = i
            if where == "@unknown":
                target = None
            elif where in ("@below", "@above"):
                step = 1 if where == "@below" else -1
                target = i + step
                while 1 <= target <= len(lines) and "expected-" in lines[target - 1]:
                    target += step
            elif re.fullmatch(r"@[+-]\d+", where):
                target = i + int(where[1:])
            elif where:
                raise ToolError(f"line {i}: unknown designator '{where}'")
            found.append(Diag(kind, target, 0, msg))
    return found


def check_diagnostics(expected: list[Diag], actual: list[Diag], name: str, offset: int) -> list[str]:
    problems, unmatched = [], list(actual)
    for e in expected:
        hit = next((a for a in unmatched if a.severity == e.severity and a.line == e.line and e.message in a.message), None)
        if hit is None:
            where = f"{name}:{e.line + offset}" if e.line else f"{name}:<unknown>"
            problems.append(f"{where}: expected {e.severity} \"{e.message}\" was not produced")
        else:
            unmatched.remove(hit)
    for a in unmatched:
        problems.append(f"{format_diag(a, name, offset)}  (unexpected {a.severity})")
    return problems


def format_diag(d: Diag, name: str, offset: int) -> str:
    where = f"{name}:{d.line + offset}:{d.col}" if d.line else name
    return f"{where}: {d.severity}: {d.message}"


def render(module: ir.Module, args) -> str:
    return module.operation.get_asm(print_generic_op_form=args.mlir_print_op_generic,
                                    enable_debug_info=args.mlir_print_debuginfo)


def process(text: str, args, name: str, offset: int) -> tuple[str | None, list[Diag]]:
    """Parse and transform one chunk; (printed module or None on failure, diagnostics)."""
    ctx = make_context()
    collected: list[Diag] = []
    ctx.emit_error_diagnostics = True  # errors go to the handler too, not only into MLIRError
    handle = ctx.attach_diagnostic_handler(lambda d: _diags(d, collected) or True)
    try:
        with ctx, ir.Location.unknown():  # Python passes build types from the ambient context
            module = ir.Module.parse(text, ctx)
            elements = pipeline_elements(args.pass_pipeline) if args.pass_pipeline else []
            printing = args.print_ir_after_all or args.print_ir_after_change
            dumps = [] if printing else None
            try:
                if elements:
                    run_pipeline(module, elements, ctx, dumps=dumps, only_changed=args.print_ir_after_change,
                                 debug_info=args.mlir_print_debuginfo, generic=args.mlir_print_op_generic)
            finally:
                for _, text in dumps or ():
                    sys.stderr.write(text if text.endswith("\n") else text + "\n")
            return render(module, args), collected
    except ir.MLIRError as e:
        for d in e.error_diagnostics:
            _diags(d, collected)
        if not collected:
            collected.append(Diag("error", None, 0, str(e)))
        return None, collected
    except Exception as e:
        notes = getattr(e, "__notes__", None)
        if not notes:
            raise  # the pipeline's own (an unknown pass or option): the same for every chunk
        # A Python pass failed on this chunk (the registry noted which): its error; the other chunks still run.
        collected.append(Diag("error", None, 0, f"internal error {' '.join(notes)}: {type(e).__name__}: {e}"))
        return None, collected
    finally:
        handle.detach()


def list_passes() -> str:
    rows = []
    for name, cls in sorted(load_all().items()):
        doc = cls.__doc__ or ""
        if doc.startswith(cls.__name__ + "("):  # the signature dataclasses put in place of a docstring
            doc = sys.modules[cls.__module__].__doc__ or ""
        first = doc.strip().splitlines()[0] if doc.strip() else ""
        first = re.sub(rf"^`{re.escape(name)}`:\s*", "", first)
        opts = [f"{f.name.replace('_', '-')}={f.default}" for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []
        rows.append(f"  {name}{'{' + ' '.join(opts) + '}' if opts else ''}\n      {first}")
    return "Tile passes (upstream MLIR passes are accepted too):\n" + "\n".join(rows) + "\n"


def run(args) -> int:
    for plugin in args.load_pass_plugin:
        load_plugin(plugin)
    if args.list_passes:
        return _emit(list_passes(), args.output)
    if args.print_dialect:
        return _emit(irdl_source(), args.output)
    name = "<stdin>" if args.input == "-" else args.input
    try:
        text = sys.stdin.read() if args.input == "-" else open(args.input, encoding="utf-8").read()
    except OSError as e:
        raise ToolError(f"cannot read '{name}': {e.strerror}") from None
    outputs, failed = [], False
    for offset, chunk in split_chunks(text, args.split_input_file):
        out, diags = process(chunk, args, name, offset)
        if args.verify_diagnostics:
            problems = check_diagnostics(expectations(chunk), diags, name, offset)
            for p in problems:
                sys.stderr.write(p + "\n")
            failed |= bool(problems)
        else:
            for d in diags:
                sys.stderr.write(format_diag(d, name, offset) + "\n")
            failed |= out is None
        if out is not None:
            outputs.append(out)
    _emit("// -----\n".join(o if o.endswith("\n") else o + "\n" for o in outputs), args.output)
    return 1 if failed else 0


def _emit(text: str, output: str) -> int:
    if output == "-":
        sys.stdout.write(text)
    else:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tile-opt", description=__doc__.splitlines()[0])
    p.add_argument("input", nargs="?", default="-", help="input .mlir file, or - for stdin (default)")
    p.add_argument("-o", dest="output", default="-", help="output file (default stdout)")
    p.add_argument("--pass-pipeline", "-p", default="", help="e.g. 'builtin.module(tile-verify, canonicalize)'")
    p.add_argument("--print-ir-after-all", action="store_true", help="print the IR after each pass to stderr")
    p.add_argument("--print-ir-after-change", action="store_true",
                   help="print the IR to stderr after each pass that changed it")
    p.add_argument("--mlir-print-debuginfo", action="store_true", help="print locations (in dumps and the output)")
    p.add_argument("--split-input-file", action="store_true", help="process each '// -----' chunk separately")
    p.add_argument("--verify-diagnostics", action="store_true", help="check diagnostics against expected-* comments")
    p.add_argument("--mlir-print-op-generic", action="store_true", help="print ops in generic form")
    p.add_argument("--load-pass-plugin", action="append", default=[], metavar="MODULE_OR_FILE",
                   help="import a module or .py file that registers passes (repeatable)")
    p.add_argument("--list-passes", action="store_true", help="list the tile passes and exit")
    p.add_argument("--print-dialect", action="store_true", help="print the tile dialect's IRDL and exit")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return run(args)
    except Exception as e:  # noqa: BLE001  (a tool: report, never a traceback)
        text = str(e)
        if "Traceback (most recent call last)" in text:  # a Python pass raised: keep its first and last lines
            lines = text.strip().splitlines()
            text = f"{lines[0].split('Traceback')[0].strip()} {lines[-1].strip()}"
        sys.stderr.write(f"tile-opt: error: {text}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
