"""The content-addressed disk cache of compiled kernels.

The key hashes everything the output depends on: the compiler's own sources,
the kernel's source and the sources of the `@tile.func` helpers it can reach,
the values of the global constants they name, the specialization, the options,
the target, the pass pipeline's full text with the source of each pass it runs
from outside the package (`tile.Pipeline`, plugins) and the pinned toolchain.
An entry is a folder holding `metadata.json` (with the artifact's sha256: a
damaged entry is rebuilt), the final artifact (`kernel.cubin`, or
`kernel.mlir` for the CPU) and every stage's text. A key whose build failed with
a `CompilationError` at the kernel's own lines keeps it in `<key>.error.json`,
raised again without compiling.

`TILE_CACHE_DIR` moves the cache (default `~/.cache/tile`); `TILE_DUMP_IR=DIR`
also writes every pass and stage into DIR, on a hit too (a hit whose entry was
built without per-pass dumps is rebuilt once to get them).
"""

from __future__ import annotations

import collections.abc
import hashlib
import inspect
import json
import os
import re
import shutil
import tempfile
import threading
import warnings

from ..frontend.errors import CompilationError, SpillWarning, WarpSpecializeWarning, def_line, source_of
from ..frontend.names import captured, described, has_source
from ..frontend.paths import cache_dir, remove, share
from .toolchain import TOOLCHAIN, check_toolchain

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_COMPILER_DIRS = ("frontend", "dialects", "passes", "codegen")
_compiler_digest = None


def compiler_digest() -> str:
    global _compiler_digest
    if _compiler_digest is None:
        h = hashlib.sha256()
        for d in _COMPILER_DIRS:
            for folder, subdirs, names in os.walk(os.path.join(_ROOT, d)):  # (subpackages too: codegen/gpu, ...)
                subdirs.sort()
                for name in sorted(names):
                    if name.endswith((".py", ".lark")):
                        h.update(os.path.relpath(os.path.join(folder, name), _ROOT).encode())
                        with open(os.path.join(folder, name), "rb") as f:
                            h.update(f.read())
        with open(os.path.join(_ROOT, "__init__.py"), "rb") as f:  # (the names `tile.X` a kernel finds)
            h.update(f.read())
        _compiler_digest = h.hexdigest()
    return _compiler_digest


def key_for(kernel, signature, target: str, options: dict, pipeline: str = "") -> str:
    h = hashlib.sha256()
    source = source_of(kernel.fn, f"kernel {kernel.name}")
    # What the kernel reads from outside: a helper reached through a module, or a global's or
    # closure's value, changes the code as much as its own source does.
    helpers, constants = captured(kernel.fn)
    parts = [
        compiler_digest(), TOOLCHAIN, source,
        # (a helper without source: its call is a CompilationError at the caller's line, never cached)
        *[source_of(x.fn, x.__name__) if has_source(x.fn) else f"<{x.__name__}: no source>" for x in helpers],
        *[f"{where}: {name} = {read()!r}" for where, name, read in constants],
        repr([(n, k, described(d)) for n, k, d in signature]), target, repr(sorted(options.items())),
        pipeline,  # (`pass_pipeline.key_text`: the edited pipeline and its out-of-tree passes' sources)
    ]
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def _artifact_name(target: str) -> str:
    return "kernel.mlir" if target == "cpu" else "kernel.cubin"


def _digest(artifact: bytes) -> str:
    return hashlib.sha256(artifact).hexdigest()


def _read_entry(path: str, target: str):
    """(metadata, artifact), or None when the entry is absent or damaged (a truncated or
    overwritten file: the metadata records the artifact's digest), so that it is rebuilt."""
    try:
        with open(os.path.join(path, "metadata.json")) as f:
            meta = json.load(f)
        with open(os.path.join(path, _artifact_name(target)), "rb") as f:
            artifact = f.read()
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("artifact_sha256") != _digest(artifact):
        return None
    return meta, artifact


def _write_entry(path: str, compiled, artifact: bytes):
    """Write the entry whole into a temporary folder and rename it into place; a damaged
    entry at `path` is replaced. A cache that cannot be written (read-only, a file in the
    way) only warns: the kernel still runs, compiled again by the next process."""
    tmp = None
    try:
        parent = os.path.dirname(path)
        os.makedirs(parent, exist_ok=True)
        tmp = share(tempfile.mkdtemp(dir=parent))
        with open(os.path.join(tmp, _artifact_name(compiled.target)), "wb") as f:
            f.write(artifact)
        for fname, content in compiled.dumps + compiled.stage_files():
            with open(os.path.join(tmp, fname), "wb" if isinstance(content, bytes) else "w") as f:
                f.write(content)
        with open(os.path.join(tmp, "metadata.json"), "w") as f:
            json.dump({**compiled.metadata, "artifact_sha256": _digest(artifact)}, f, indent=1)
        if os.path.lexists(path) and _read_entry(path, compiled.target) is None:
            _discard(path, parent)  # (a damaged entry, or a link to none: lexists sees a dangling one)
        try:
            os.replace(tmp, path) if not os.path.lexists(path) else shutil.rmtree(tmp)
        except OSError:  # another process won the race; its entry is as good
            shutil.rmtree(tmp, ignore_errors=True)
        tmp = None
        if os.path.exists(path) and compiled.dumps and not _has_dumps(path):
            for fname, content in compiled.dumps:
                with open(os.path.join(path, fname), "wb" if isinstance(content, bytes) else "w") as f:
                    f.write(content)
    except OSError as e:
        remove(tmp)  # (a full disk: no half-written folder left behind)
        warnings.warn(f"tile: cannot write the cache entry {path} ({e}); the kernel runs uncached", stacklevel=2)


def _discard(path: str, parent: str):
    """Move a damaged entry out of the way (atomically, as readers may be looking) and delete it."""
    aside = tempfile.mkdtemp(dir=parent)
    try:
        os.replace(path, os.path.join(aside, "old"))
    except OSError:  # another process moved it first
        pass
    shutil.rmtree(aside, ignore_errors=True)


def _has_dumps(path: str) -> bool:
    return any(re.match(r"\d\d-", n) for n in os.listdir(path))


def _copy_dumps(path: str, kernel_name: str, key: str):
    """A hit's dumps, kept in its entry, into TILE_DUMP_IR."""
    if os.environ.get("TILE_DUMP_IR"):
        names = [n for n in sorted(os.listdir(path)) if re.match(r"\d\d-", n)]
        _write_dumps([(n, _read_bytes(os.path.join(path, n))) for n in names], kernel_name, key)


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _write_dumps(dumps, kernel_name: str, key: str):
    """A build's passes, or those that ran before it failed, into TILE_DUMP_IR. A folder that
    cannot be written (a file in the way) only warns: the launch goes on without its dumps."""
    dump = os.environ.get("TILE_DUMP_IR")
    if not dump or not dumps:
        return
    dest = os.path.join(dump, f"{kernel_name}-{key[:8]}")
    try:
        os.makedirs(dest, exist_ok=True)
        for fname, content in dumps:
            with open(os.path.join(dest, fname), "wb" if isinstance(content, bytes) else "w") as f:
                f.write(content)
    except OSError as e:
        warnings.warn(f"tile: cannot write the IR dumps to {dest} (TILE_DUMP_IR): {e}", stacklevel=2)


class StageTexts(collections.abc.Mapping):
    """Every stage's output kept in a cache entry, by stage name (`tile`, ..., `ptx`, `cubin`),
    read from the entry's files when asked for: a launcher keeps only their names, not
    megabytes of IR per specialization."""

    def __init__(self, path: str):
        self._path, self._files = path, {}
        for n in sorted(os.listdir(path)):
            m = re.match(r"stage-([a-z-]+)\.(\w+)$", n)
            if m:
                self._files[m.group(1)] = (n, m.group(2) == "cubin")

    def __getitem__(self, stage: str):
        name, binary = self._files[stage]
        with open(os.path.join(self._path, name), "rb" if binary else "r") as f:
            return f.read()

    def __iter__(self):
        return iter(self._files)

    def __len__(self):
        return len(self._files)


def compiler_entry():
    """The compiler's entry point, `codegen.build.build`, imported (MLIR, lark, llvmlite) on a
    first cache miss."""
    from ..codegen.build import build

    return build


def _compiler(kernel, target: str, options: dict, path: str):
    """The compiler's entry point, imported only on a miss. A host with a cache built
    elsewhere may lack the compiler's packages (MLIR, lark, llvmlite): a launch that is not
    in that cache then says so, naming the kernel, instead of failing on the import."""
    try:
        build = compiler_entry()
    except ImportError as e:
        from ..frontend.errors import CompilationError, def_line

        lines, first, at = def_line(kernel.fn)
        raise CompilationError(
            f"kernel {kernel.name} has no compiled entry for this launch ({target}, {options}) in the cache "
            f"({path}), and the compiler cannot run here: {e}. Compile the launch ahead of time on a machine "
            f"that has it (TILE_TARGET={target} TILE_COMPILE_ONLY=1, the same TILE_CACHE_DIR), or install it",
            inspect.getsourcefile(kernel.fn), first + at, 1, lines[at]) from None
    return build


_BUILD_LOCK = threading.Lock()


def _new_build_lock():
    global _BUILD_LOCK
    _BUILD_LOCK = threading.Lock()


# A process forked while another thread builds (autotune's workers) would inherit the lock held.
os.register_at_fork(after_in_child=_new_build_lock)


def _cached(kernel, path: str, target: str, want_dumps: bool):
    """The entry at path, unless dumps are asked for and it was built without them (it is then
    rebuilt); None if there is none, or the compile error saved there raised."""
    entry = _read_entry(path, target)
    if entry is not None and want_dumps and not _has_dumps(path):
        return None
    if entry is None and not want_dumps:
        error = _saved_error(kernel, path)
        if error is not None:
            raise error
    return entry


def _build(kernel, signature, target: str, options: dict, path: str, key: str, want_dumps: bool, edits=()):
    """Compile, and write the entry and the dumps (those of a failed build too)."""
    build = _compiler(kernel, target, options, path)
    try:
        check_toolchain()
        compiled, artifact = build(kernel, signature, target, options, keep_dumps=want_dumps, edits=edits)
    except Exception as e:
        _write_dumps(getattr(e, "dumps", ()), kernel.name, key)
        if not want_dumps:
            _save_error(kernel, path, e)
        raise
    _write_entry(path, compiled, artifact)
    _write_dumps(compiled.dumps, kernel.name, key)
    return compiled, artifact


def _kernel_lines(kernel) -> tuple[str, int, int]:
    """The kernel's file, the line of its `def` and its last line: where a saved error is placed again."""
    lines, first, at = def_line(kernel.fn)
    return inspect.getsourcefile(kernel.fn), first + at, first + len(lines) - 1


def _save_error(kernel, path: str, e: Exception):
    """Keep a compile error of the kernel's own lines, or of a helper's, beside the entry it
    did not make: the same key fails the same way (autotune's configs past the shared memory
    were compiled again, seconds each, by every process, and on a GPU machine without the
    frontend's parser could not be). A kernel's line is kept from the `def`, as the key
    holds the kernel's source and not where it lies in its file; a helper's as it was."""
    if type(e) is not CompilationError:
        return
    filename, at, last = _kernel_lines(kernel)
    if e.filename == filename and at <= e.line <= last:
        where = {"line_from_def": e.line - at}
    elif e.filename and e.line:  # a helper's line (its source is in the key too): kept where it was
        where = {"filename": e.filename, "line": e.line}  # (tutorial 06's configs past the shared memory)
    else:
        return
    record = {"message": e.message, **where, "column": e.column, "source_line": e.source_line}
    tmp = None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
        with os.fdopen(fd, "w") as f:
            json.dump(record, f)
        os.replace(share(tmp), path + ".error.json")
    except OSError:  # (a cache that cannot be written: compiled again next time)
        remove(tmp)


def _saved_error(kernel, path: str) -> CompilationError | None:
    """The error saved for this entry, at the kernel's line now; None if none (or damaged)."""
    try:
        with open(path + ".error.json") as f:
            r = json.load(f)
        if "line_from_def" in r:
            filename, at, _ = _kernel_lines(kernel)
            line = at + r["line_from_def"]
        else:
            filename, line = r["filename"], r["line"]
        return CompilationError(r["message"], filename, line, r["column"], r["source_line"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _warn_spills(meta: dict, name: str, target: str, options: dict):
    """A SpillWarning for a launcher whose kernel ptxas spilled, built now or read from the cache."""
    report = meta.get("ptxas") or {}
    if report.get("spill_stores") or report.get("spill_loads"):
        warnings.warn(f"tile: {name} ({target}, {options['num_warps']} warps) spills: {report['spill_stores']} "
                      f"bytes of spill stores and {report['spill_loads']} of spill loads at {report['registers']} "
                      "registers a thread (smaller blocks, or more warps up to 64 registers a thread, keep tiles in "
                      "registers)", SpillWarning, stacklevel=4)


def _warn_warp_specialize(meta: dict, name: str, target: str):
    """A WarpSpecializeWarning per loop that asked for warp specialization and kept its code."""
    for reason in meta.get("warp_specialize_skipped") or ():
        warnings.warn(f"tile: {name} ({target}): warp_specialize ignored for the loop at {reason}",
                      WarpSpecializeWarning, stacklevel=4)


def load_or_build(kernel, signature, target: str, options: dict, edits=(), pipeline: str = "", build: bool = True):
    """The launcher of one specialization, from the cache or built first if it is missing (None
    then if not `build`); `edits` (`tile.Pipeline` edits) change its pass pipeline, whose
    `key_text` is `pipeline`."""
    key = key_for(kernel, signature, target, options, pipeline)
    path = os.path.join(cache_dir(), key)
    want_dumps = bool(os.environ.get("TILE_DUMP_IR"))
    entry = _cached(kernel, path, target, want_dumps)
    if entry is None and not build:
        return None
    asm = None
    if entry is None:
        # One build at a time in a process (the compiler has shared state, and a thread that
        # wanted the same entry finds it built, or failed, when its turn comes).
        with _BUILD_LOCK:
            entry = _cached(kernel, path, target, want_dumps)
            if entry is None:
                compiled, artifact = _build(kernel, signature, target, options, path, key, want_dumps, edits)
                entry, asm = (compiled.metadata, artifact), dict(compiled.stages)
                on_disk = StageTexts(path) if os.path.isdir(path) else {}
                if set(on_disk) == set(asm):  # (else from memory: the write failed)
                    asm = on_disk
    if asm is None:
        _copy_dumps(path, kernel.name, key)
        asm = StageTexts(path)
    meta, artifact = entry
    meta["cache_path"] = path
    _warn_spills(meta, kernel.name, target, options)
    _warn_warp_specialize(meta, kernel.name, target)
    if target == "cpu":
        from .cpu_launcher import CpuLauncher

        launcher = CpuLauncher(meta, artifact.decode())
    else:
        from .cuda_launcher import CudaLauncher

        launcher = CudaLauncher(meta, artifact)
    launcher.asm = asm
    return launcher
