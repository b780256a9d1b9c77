"""`@tile.func` helpers: plain functions inlined into the kernels that call them.

Decorating costs nothing: the source is parsed on first inlining, so a host
that only launches cached kernels never imports the compiler.
"""

from __future__ import annotations

from .errors import TileError


class Helper:
    def __init__(self, fn):
        self.fn = fn
        self.__name__, self.__doc__ = fn.__name__, fn.__doc__
        self.tile_helper = self
        self._parsed = None

    @property
    def parsed(self):
        if self._parsed is None:
            from .parser import parse_function

            self._parsed = parse_function(self.fn)
        return self._parsed

    def __repr__(self):
        return f"<tile.func {self.__name__}>"

    def __getitem__(self, grid):
        raise TileError(f"@tile.func {self.__name__} is inlined into the kernels that call it; launch a @tile.kernel")

    def __call__(self, *args, **kwargs):
        raise TileError(f"@tile.func {self.__name__} can only be called from a kernel")
