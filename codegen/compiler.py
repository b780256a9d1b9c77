"""The compiler: an ordered list of named stages per target.

    cpu:    tile -> tile-opt -> linalg -> llvm
    sm_XX:  tile -> tile-opt -> linalg -> gpu -> nvvm -> llvm -> ptx -> cubin

Each stage maps the previous stage's output (an MLIR module, LLVM IR text,
PTX text or cubin bytes) to its own. Every stage's text is kept on the result;
with a dump folder, the IR after every pass inside a stage that changed it is
written too (MLIR's IR printer, with the kernel's source locations), numbered in
pipeline order. Every pass stage ends with the tile ops' verifiers. `run_stages` restarts from any stage's saved text.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from typing import Callable

from mlir import ir

from ..dialects import make_context
from ..frontend.errors import CompilationError, TileError, interrupt_of
from ..passes.pass_runner import run_pipeline
from . import pipelines
from .pass_pipeline import apply_edits, pipeline_text

GPU_TARGETS = pipelines.GPU_TARGETS


@dataclass
class Stage:
    name: str
    ext: str
    passes: bool = False  # an MLIR pass pipeline stage (its passes: `Pipeline.stages`)
    convert: Callable | None = None  # any other step: (input, options) -> output


@dataclass
class Compiled:
    """What compiling one specialization produced: stage texts and metadata."""

    name: str
    target: str
    stages: dict[str, str | bytes] = field(default_factory=dict)
    dumps: list[tuple[str, str | bytes]] = field(default_factory=list)  # (file name, content), in order
    metadata: dict = field(default_factory=dict)
    codegen: str = "distributed"
    pipeline: str = ""  # the pass stages that ran, as `tile.Pipeline.text()` shows them
    seconds: dict[str, float] = field(default_factory=dict)  # wall time of each stage (benchmarks/compile_time.py)

    def stage_files(self) -> list[tuple[str, str | bytes]]:
        """(file name, text) of every stage this run produced, e.g. `stage-ptx.ptx`."""
        exts = {s.name: s.ext for s in stages_for(self.target, self.codegen)}
        return [(f"stage-{n}.{exts[n]}", t) for n, t in self.stages.items()]


def _llvm_ir(module: ir.Module, options) -> str:
    from .backend.ptx import gpu_module_to_llvm_ir

    return gpu_module_to_llvm_ir(module)


def _ptx(llvm_ir: str, options) -> str:
    from .backend.ptx import llvm_ir_to_ptx

    return llvm_ir_to_ptx(llvm_ir, options["target"])


def _cubin(ptx: str, options) -> bytes:
    from .backend.cubin import ptx_to_cubin

    return ptx_to_cubin(ptx, options["target"])


def stages_for(target: str, codegen: str = "distributed") -> list[Stage]:
    """The stages of a target: its MLIR pass stages (`pipelines.stage_passes`), then on a GPU
    the conversions to LLVM IR, PTX and cubin. GPU code is made either by distributing tiles
    over threads by their layouts (`distributed`, the default) or through linalg loop nests
    mapped to threads (`linalg`, which `dot` still needs)."""
    options = {"target": target, "codegen": codegen, "num_warps": 4, "num_stages": 1}  # (only the names matter here)
    stages = [Stage("tile", "mlir")] + [Stage(n, "mlir", passes=True) for n in pipelines.stage_passes(options)]
    if target in GPU_TARGETS:
        stages += [
            Stage("llvm", "ll", convert=_llvm_ir),
            Stage("ptx", "ptx", convert=_ptx),
            Stage("cubin", "cubin", convert=_cubin),
        ]
    return stages


def _first_error(diagnostics) -> tuple[str, object]:
    for d in diagnostics:
        return d.message, d.location
    return "", None


class _Diagnostics:
    """Holds the context's error diagnostics: a handler must take every one, since an
    error nobody handles inside a nested pass pipeline aborts the whole process in
    these bindings (an assertion), where it should have raised."""

    def __init__(self, ctx: ir.Context):
        self.errors: list[tuple[str, object]] = []
        self.handle = ctx.attach_diagnostic_handler(self._take)

    def _take(self, d) -> bool:
        if d.severity == ir.DiagnosticSeverity.ERROR:
            self.errors.append((str(d.message), d.location))
        return True

    def detach(self):
        self.handle.detach()


_active: list[_Diagnostics] = []


def _raise_from_mlir(e: ir.MLIRError, stage: str):
    message, loc = _first_error(getattr(e, "error_diagnostics", []))
    if not message and _active and _active[-1].errors:
        message, loc = _active[-1].errors[0]
    m = re.match(r'loc\("(.*)":(\d+):(\d+)\)', str(loc)) if loc is not None else None
    if m:
        filename, line, col = m.group(1), int(m.group(2)), int(m.group(3))
        src = ""
        if os.path.exists(filename):
            lines = open(filename).read().splitlines()
            src = lines[line - 1] if 0 < line <= len(lines) else ""
        raise CompilationError(message or str(e), filename, line, col, src) from None
    raise CompilationError(f"{stage} stage failed: {message or e}") from None


def _run_passes(module, passes: list[str], dump: Callable[[str, str], None] | None, stage: str):
    """A stage's passes, then the tile verifier; with `dump`, the IR after each pass that changed it."""
    dumps = [] if dump is not None else None
    try:
        run_pipeline(module, passes, dumps=dumps)
    except ir.MLIRError as e:
        _raise_from_mlir(e, stage)
    finally:
        for label, text in dumps or ():
            dump(label, text)


def run_stages(value, target: str, options: dict, start: str, name: str, keep_dumps: bool, ctx: ir.Context | None = None,
               edits=()) -> Compiled:
    """Run the stages after `start` on `value` (a module or the text `start` produced), their
    passes the default ones with `edits` (`tile.Pipeline`'s) applied."""
    options = {**options, "target": target}
    out = Compiled(name, target)
    codegen = options.get("codegen", "distributed")
    out.codegen = codegen
    stages = stages_for(target, codegen)
    names = [s.name for s in stages]
    if start not in names:
        raise TileError(f"no stage '{start}' for target {target}: stages are {', '.join(names)}")
    passes = apply_edits(edits, options)
    out.pipeline = pipeline_text(passes)
    counter = [0]

    def dump(label: str, content, ext="mlir"):
        if keep_dumps:
            counter[0] += 1
            out.dumps.append((f"{counter[0]:02d}-{label}.{ext}", content))

    ctx = ctx or make_context()
    diagnostics = _Diagnostics(ctx)
    _active.append(diagnostics)
    try:
        return _run_all(value, stages, names, start, options, passes, out, dump, keep_dumps, ctx)
    except TileError as e:
        e.dumps = out.dumps  # what ran before the failure: TILE_DUMP_IR writes it all the same
        raise
    except Exception as e:  # a bug in a pass: still a TileError, saying where it happened
        interrupt = interrupt_of(e)
        if interrupt is not None:
            raise interrupt from e
        where = "".join(f"{note}; " for note in getattr(e, "__notes__", ()))  # the pass, from the registry
        err = CompilationError(f"internal compiler error compiling {name} for {target}: {type(e).__name__}: {e} "
                               f"({where}TILE_DUMP_IR=DIR writes the IR of every pass before it)")
        err.dumps = out.dumps
        raise err from e
    finally:
        _active.pop()
        diagnostics.detach()


def _run_all(value, stages, names, start, options, passes, out, dump, keep_dumps, ctx) -> Compiled:
    with ctx, ir.Location.unknown():
        if isinstance(value, str) and stages[names.index(start)].ext == "mlir":
            value = ir.Module.parse(value)
        first = names.index(start)
        text = str(value) if isinstance(value, ir.Module) else value
        out.stages[start] = text
        dump(f"stage-{start}", text, stages[first].ext)
        for stage in stages[first + 1 :]:
            began = time.perf_counter()
            if stage.passes:
                _run_passes(value, passes[stage.name], dump if keep_dumps else None, stage.name)
                try:
                    value.operation.verify()
                except ir.MLIRError as e:
                    _raise_from_mlir(e, stage.name)
                text = str(value)
            else:
                value = stage.convert(value, options)
                text = value
            out.seconds[stage.name] = time.perf_counter() - began
            out.stages[stage.name] = text
            dump(f"stage-{stage.name}", text, stage.ext)
    return out


def compile_file(path: str, target: str, options: dict | None = None, stage: str | None = None, pipeline=None) -> Compiled:
    """Restart compilation from a saved stage file (a dump such as `14-stage-linalg.mlir`),
    through the default passes or those of a `tile.Pipeline`.

    The stage is read from the file name unless given.
    """
    if stage is None:
        m = re.search(r"stage-([a-z-]+)\.\w+$", os.path.basename(path))
        if m is None:
            raise TileError(f"cannot tell the stage of {path}; pass stage= (one of the target's stage names)")
        stage = m.group(1)
    mode = "rb" if path.endswith(".cubin") else "r"
    with open(path, mode) as f:
        text = f.read()
    name = os.path.splitext(os.path.basename(path))[0]
    return run_stages(text, target, {"num_warps": 4, "num_stages": 2, **(options or {})}, stage, name, keep_dumps=False,
                      edits=pipeline.edits if pipeline is not None else ())


def write_dumps(compiled: Compiled, folder: str):
    os.makedirs(folder, exist_ok=True)
    for fname, content in compiled.dumps:
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(os.path.join(folder, fname), mode) as f:
            f.write(content)
