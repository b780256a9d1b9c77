"""A pytest plugin (not a test file): every specialization a test launches on the CPU is also
compiled for sm_90a, and each compile error is logged. The CPU tests' kernels (odd sizes, small
blocks, strided views) then also exercise the GPU compiler, which only the sm_90a tests reach
otherwise. A `CompilationError` at the user's line saying what to change (a tile past the shared
memory) is an answer; an internal error, an MLIR verifier message or an abort is a bug.

    PYTHONPATH=tests .venv/bin/python -m pytest -q -p audit_sm90a tests/test_scans.py ...
    # errors: $AUDIT_LOG (default .cache/audit-sm90a.jsonl), one JSON object a line

Slow (a full compile, ptxas included, per specialization): run it over a few files at a time,
with its own TILE_CACHE_DIR. It found an abort (a mask's i1 buffer on the linalg path), a
verifier error (buffers an `if` merges in two address spaces) and an internal error
(tile-tma-stores on a scalar store), each fixed with a test.
"""

import json
import os

import pytest

_seen: set = set()
_current = {"test": None}


def _log_path() -> str:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.environ.get("AUDIT_LOG", os.path.join(root, ".cache", "audit-sm90a.jsonl"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _current["test"] = item.nodeid


def pytest_configure(config):
    from tile.runtime import kernel

    launcher = kernel.Kernel.launcher

    def audited(self, values, options, target, build=True):
        found = launcher(self, values, options, target, build)
        if target == "cpu" and build:
            key = (self.name, repr(self.signature(values)), repr(sorted(options.items(), key=str)))
            if key not in _seen:
                _seen.add(key)
                try:
                    launcher(self, values, dict(options), "sm_90a", True)
                except Exception as e:  # (an abort ends the run: its traceback names the test)
                    os.makedirs(os.path.dirname(_log_path()), exist_ok=True)
                    with open(_log_path(), "a") as f:
                        f.write(json.dumps({"test": _current["test"], "kernel": self.name,
                                            "type": type(e).__name__, "error": str(e)[:2000]}) + "\n")
        return found

    kernel.Kernel.launcher = audited


def pytest_terminal_summary(terminalreporter):
    path = _log_path()
    if os.path.exists(path):
        with open(path) as f:
            count = sum(1 for _ in f)
        terminalreporter.write_line(f"audit-sm90a: {count} sm_90a compile error(s) logged in {path}")
