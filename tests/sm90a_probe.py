"""A pytest plugin (`-p sm90a_probe`, tests/test_located_errors.py runs it): every kernel
specialization a test launches on the CPU is compiled for sm_90a as well (compile only, the
launch's own tensors standing for the device's), and what that raises is recorded in the JSON
file $SM90A_PROBE_OUT: a `CompilationError` at a user's line, a `LaunchError`, or anything else
(an internal error, an error without a location), with the test that launched it."""

from __future__ import annotations

import json
import os
import traceback

import pytest

import tile
from tile.runtime.kernel import Kernel

_records: list[dict] = []
_seen: set = set()
_current = {"test": None}


def classify(e: BaseException) -> str:
    """"located" (a CompilationError at a user's source line, not an internal error), "launch"
    (a LaunchError, which names the argument), "sourceless" (a kernel whose source Python
    cannot give, made by exec: no line to point at, and the error says so) or "unlocated"."""
    if isinstance(e, tile.CompilationError):
        internal = "internal compiler error" in e.message
        if not internal and e.message.startswith("the source of kernel ") and "cannot be read" in e.message:
            return "sourceless"
        return "unlocated" if internal or e.filename.startswith("<") or e.line <= 0 else "located"
    return "launch" if isinstance(e, tile.LaunchError) else "unlocated"


def _probe(kernel, values, options):
    try:
        key = (id(kernel), repr(kernel.signature(values)), repr(sorted(options.items())))
    except Exception:  # (the CPU launch raises it, and the test sees it)
        return
    if key in _seen:
        return
    _seen.add(key)
    try:
        kernel.launcher(values, options, "sm_90a")
        kind, text = "ok", ""
    except Exception as e:
        kind, text = classify(e), "".join(traceback.format_exception_only(e))[-2000:]
    _records.append({"test": _current["test"], "kernel": kernel.name, "kind": kind, "error": text})


def pytest_configure(config):
    original = Kernel.launcher

    def launcher(self, values, options, target, build=True):
        if target == "cpu" and build:
            _probe(self, values, {k: v for k, v in options.items() if k != "passes"})
        return original(self, values, options, target, build)

    Kernel.launcher = launcher


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    _current["test"] = item.nodeid
    yield


def pytest_sessionfinish(session):
    with open(os.environ["SM90A_PROBE_OUT"], "w") as f:
        json.dump(_records, f)
