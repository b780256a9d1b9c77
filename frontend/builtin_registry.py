"""The registry of builtin emitters, by the language's name (`EMITTERS["max"]`), and what
emitters share beyond their arguments: the file:line of the statement being emitted.

Each module of builtins (`builtins.py`, `reductions.py`, ...) registers its emitters with
`@emitter(name)` when imported; `emitter.py` imports them all before emitting a kernel.
Defined apart from `builtins.py` so that a module of builtins that another one's emitter
calls (bounds checks call `max`) needs no import back.
"""

from __future__ import annotations

import re

from mlir import ir

EMITTERS = {}


def inline_helper(helper, args: list, kwargs: dict):
    """Emit a `@tile.func` body in place (a scan's combine function): `emitter.inline_helper`,
    set there, since the emitter imports the modules of builtins."""
    raise NotImplementedError("set by frontend/emitter.py")


def emitter(name):
    def wrap(fn):
        EMITTERS[name] = fn
        return fn

    return wrap


def source_line() -> str:
    """file:line of the statement being emitted (its location)."""
    m = re.match(r'loc\("(.*)":(\d+):\d+\)', str(ir.Location.current))
    return f"{m.group(1)}:{m.group(2)}" if m else "<kernel>"
