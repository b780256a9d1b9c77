"""`tile.Pipeline`: the compiler's pass pipeline as an object a user edits.

    p = tile.Pipeline()                                   # the default (shown for the CPU)
    p.insert_after("tile-fuse", "fold-identities")        # anchors: a pass name, or a whole spec
    p.insert_before("tile-fuse", "my-pass{opt=1}")
    p.replace("cse", "my-cse")
    p.remove("tile-small-int-to-float")
    p.stage("linalg").append("my-linalg-pass")            # a stage's list, and edits at its ends
    print(p)                                              # every stage's pass list, as tile-opt reads it

    @tile.kernel(pipeline=p)                              # this kernel's compilations
    kernel[grid](..., passes=["my-pass"])                 # one launch: after tile-opt's passes
    tile.pipeline_edits.insert_after("tile-fuse", "x")    # every kernel (edit it in place)

A pipeline is a list of edits, not a list of passes: the edits are applied to
the default pipeline (`pipelines.stage_passes`) of whatever target and options
a launch compiles for, so one edit serves the CPU and sm_90a alike. An anchor
must occur once in the stages searched (all of them, or `stage=`); a missing
one is a TileError, at the edit for the pipeline's own target (`Pipeline(target,
**options)`, default the CPU) and at the launch for another, unless
`missing_ok=True` (the edit is then skipped where its anchor is absent).

The full text of a launch's pipeline (`key_text`), with the source of every
pass it runs from outside the package, is part of the kernel's cache keys.
No MLIR here: the runtime computes those keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..frontend.errors import TileError
from ..passes import plugins
from . import pipelines

listeners: list = []  # called when any pipeline's edits change: the kernels drop their fast-path caches
plugins.listeners.append(lambda: _changed())


def _changed():
    for listener in listeners:
        listener()


def pass_name(spec: str) -> str:
    """`tile-pipeline{num-stages=3}` -> `tile-pipeline`; `gpu.module(...)` -> `gpu.module`."""
    return re.split(r"[{(]", spec, maxsplit=1)[0].strip()


def _checked_spec(spec) -> str:
    if not isinstance(spec, str) or not pass_name(spec):
        raise TileError(f"a pass is given by its textual spec, as 'tile-fuse' or 'my-pass{{opt=1}}', got {spec!r}")
    return " ".join(spec.split())


@dataclass(frozen=True)
class Edit:
    """One recorded operation on the default pipeline."""

    op: str  # insert_after, insert_before, replace, remove, append, prepend
    anchor: str | None
    passes: tuple[str, ...]
    stage: str | None
    missing_ok: bool

    def text(self) -> str:
        args = [repr(a) for a in ((self.anchor,) if self.anchor else ()) + self.passes]
        args += [f"stage={self.stage!r}"] * bool(self.stage) + ["missing_ok=True"] * self.missing_ok
        return f"{self.op}({', '.join(args)})"

    def apply(self, stages: dict[str, list[str]], where: str):
        """Apply in place to `stages` (stage -> pass list); `where` names the pipeline in errors."""
        if self.stage is not None and self.stage not in stages:
            if self.missing_ok:
                return
            raise TileError(f"pipeline edit {self.text()}: the {where} pipeline has no stage '{self.stage}' "
                            f"(its stages: {', '.join(stages)}; missing_ok=True skips the edit where it is absent)")
        if self.op in ("append", "prepend"):
            passes = stages[self.stage]
            passes[len(passes) if self.op == "append" else 0:0] = self.passes
            return
        hits = [(s, i) for s in ([self.stage] if self.stage else stages) for i, p in enumerate(stages[s])
                if (p == self.anchor if "{" in self.anchor or "(" in self.anchor else pass_name(p) == self.anchor)]
        if len(hits) != 1:
            if not hits and self.missing_ok:
                return
            where_found = ", ".join(f"{s}[{i}]" for s, i in hits)
            scope = f"stage '{self.stage}' of the {where}" if self.stage else f"the {where}"
            raise TileError(f"pipeline edit {self.text()}: '{self.anchor}' " + (
                f"occurs {len(hits)} times in {scope} pipeline ({where_found}): name one with stage=" if hits else
                f"is not in {scope} pipeline (missing_ok=True skips the edit where it is absent)"))
        i, passes = hits[0][1], stages[hits[0][0]]
        if self.op == "insert_after":
            passes[i + 1:i + 1] = self.passes
        elif self.op == "insert_before":
            passes[i:i] = self.passes
        else:  # replace, remove (a replace by nothing)
            passes[i:i + 1] = self.passes


class Pipeline:
    """The pass pipeline as edits of the default one; shown and checked for `target` and
    `options` (num_warps, num_stages, codegen, divisible_args: as a launch has them)."""

    def __init__(self, target: str = "cpu", **options):
        self.target = target
        self.options = {"num_warps": 4, "num_stages": 2, **options, "target": target}
        self.edits: list[Edit] = []
        pipelines.stage_passes(self.options)  # (an unknown target: said here)

    # ---- edits ------------------------------------------------------------------------
    def insert_after(self, anchor: str, *passes: str, stage: str | None = None, missing_ok: bool = False) -> "Pipeline":
        """Run `passes` right after the pass `anchor` (a name, or a spec with its options)."""
        return self._edit("insert_after", anchor, passes, stage, missing_ok)

    def insert_before(self, anchor: str, *passes: str, stage: str | None = None, missing_ok: bool = False) -> "Pipeline":
        return self._edit("insert_before", anchor, passes, stage, missing_ok)

    def replace(self, old: str, *new: str, stage: str | None = None, missing_ok: bool = False) -> "Pipeline":
        """Run `new` (one pass or several) in place of `old`."""
        if not new:
            raise TileError(f"replace({old!r}) names no pass to put in its place: use remove({old!r})")
        return self._edit("replace", old, new, stage, missing_ok)

    def remove(self, name: str, stage: str | None = None, missing_ok: bool = False) -> "Pipeline":
        return self._edit("remove", name, (), stage, missing_ok)

    def stage(self, name: str) -> "StageView":
        """One stage's passes for this pipeline's target (a list to read), with edits of
        that stage alone (`append`, `prepend`, `insert_after`, ...)."""
        stages = self.stages()
        if name not in stages:
            raise TileError(f"the {self._where()} pipeline has no stage '{name}' (its stages: {', '.join(stages)})")
        return StageView(self, name)

    def clear(self) -> "Pipeline":
        """Drop every edit: the default pipeline again."""
        self.edits.clear()
        _changed()
        return self

    def _edit(self, op, anchor, passes, stage, missing_ok) -> "Pipeline":
        if anchor is not None:
            anchor = _checked_spec(anchor)
        return self._record(Edit(op, anchor, tuple(_checked_spec(p) for p in passes), stage, bool(missing_ok)))

    def _record(self, edit: Edit) -> "Pipeline":
        stages = self.stages()
        edit.apply(stages, self._where())  # (raises here, at the user's edit, for the pipeline's own target)
        self.edits.append(edit)
        _changed()
        return self

    # ---- the result --------------------------------------------------------------------
    def stages(self, target: str | None = None, **options) -> dict[str, list[str]]:
        """Stage name -> pass specs, for this pipeline's target and options, or for those given."""
        if target is not None:
            options = {**self.options, **options, "target": target}
        else:
            options = {**self.options, **options}
        return apply_edits(self.edits, options)

    def text(self, target: str | None = None, **options) -> str:
        """Every MLIR stage's passes, a line each: `tile-opt: builtin.module(...)`, as
        `tile-opt --pass-pipeline=` takes it."""
        return pipeline_text(self.stages(target, **options))

    def __str__(self):
        return self.text()

    def __repr__(self):
        return f"tile.Pipeline({self.target!r}, edits=[{', '.join(e.text() for e in self.edits)}])"

    def _where(self) -> str:
        codegen = self.options.get("codegen")
        return self.target + (f" (codegen={codegen})" if codegen else "")


class StageView:
    """One stage of a Pipeline: reads as the list of its passes; edits go to the pipeline."""

    def __init__(self, pipeline: Pipeline, name: str):
        self.pipeline, self.name = pipeline, name

    def passes(self) -> list[str]:
        return self.pipeline.stages()[self.name]

    def __iter__(self):
        return iter(self.passes())

    def __len__(self):
        return len(self.passes())

    def __getitem__(self, i):
        return self.passes()[i]

    def __contains__(self, spec):
        return any(p == spec or pass_name(p) == spec for p in self.passes())

    def __repr__(self):
        return f"{self.name}: {self.passes()}"

    def append(self, *passes: str, missing_ok: bool = False) -> Pipeline:
        """Run `passes` after the stage's last pass (missing_ok: not where the stage is absent)."""
        return self.pipeline._edit("append", None, passes, self.name, missing_ok)

    def prepend(self, *passes: str, missing_ok: bool = False) -> Pipeline:
        return self.pipeline._edit("prepend", None, passes, self.name, missing_ok)

    def insert_after(self, anchor: str, *passes: str, missing_ok: bool = False) -> Pipeline:
        return self.pipeline.insert_after(anchor, *passes, stage=self.name, missing_ok=missing_ok)

    def insert_before(self, anchor: str, *passes: str, missing_ok: bool = False) -> Pipeline:
        return self.pipeline.insert_before(anchor, *passes, stage=self.name, missing_ok=missing_ok)

    def replace(self, old: str, *new: str, missing_ok: bool = False) -> Pipeline:
        return self.pipeline.replace(old, *new, stage=self.name, missing_ok=missing_ok)

    def remove(self, name: str, missing_ok: bool = False) -> Pipeline:
        return self.pipeline.remove(name, stage=self.name, missing_ok=missing_ok)


def apply_edits(edits, options: dict) -> dict[str, list[str]]:
    """The default stages for `options` (its target included) with `edits` applied in order."""
    stages = pipelines.stage_passes(options)
    codegen = options.get("codegen")
    where = options["target"] + (f" (codegen={codegen})" if codegen and options["target"] != "cpu" else "")
    for e in edits:
        e.apply(stages, where)
    return stages


def pipeline_text(stages: dict[str, list[str]]) -> str:
    return "".join(f"{name}: builtin.module({', '.join(passes)})\n" for name, passes in stages.items())


# Every kernel's compilations apply these first (then the kernel's pipeline, then a launch's passes).
pipeline_edits = Pipeline()


def launch_edits(kernel_pipeline: Pipeline | None, passes) -> list[Edit]:
    """The edits of one launch: the global ones, the kernel's, then `passes=` (pass specs
    run after tile-opt's passes, or a Pipeline whose edits apply)."""
    edits = list(pipeline_edits.edits) + (list(kernel_pipeline.edits) if kernel_pipeline is not None else [])
    if isinstance(passes, Pipeline):
        return edits + passes.edits
    if passes:
        if isinstance(passes, str):
            passes = [passes]
        edits.append(Edit("append", None, tuple(_checked_spec(p) for p in passes), "tile-opt", False))
    return edits


def key_text(edits, options: dict) -> str:
    """What the cache keys hold of a launch's pipeline: the full text of its stages for
    `options` (or the error that applying the edits gives: the build raises it) and the
    digest of the source of each out-of-tree pass it runs (the plugins loaded first)."""
    try:
        stages = apply_edits(edits, options)
    except TileError as e:
        return f"error: {e}"
    text = pipeline_text(stages)
    names = sorted({pass_name(p) for passes in stages.values() for p in passes})
    sources = [f"{n}: {fp}" for n in names if (fp := plugins.fingerprint(n)) is not None]
    return text + "".join(f"source {s}\n" for s in sources)
