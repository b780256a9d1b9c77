"""`@tile.kernel` and `@tile.func`: binding launch arguments, specializing,
finding or building the compiled kernel, and launching it.

    kernel[grid](*args, **meta)

Tensors, Python scalars and `tile.constexpr` values are specialized per
dtype/rank, per scalar type and per value respectively; each specialization
is compiled once and kept in memory and in the disk cache. Compilation
imports the compiler (MLIR, lark) only when the cache misses.

A launch of a cached kernel takes the fast path: `kernel[grid]` is a cached
partial of a binder generated for the kernel (`_make_binder`), which reads each
argument once, looks the specialization's generated launch function up by what
it read, and calls it. Anything the binder did not foresee goes the general way
(`run`), which raises the errors.
"""

from __future__ import annotations

import functools
import inspect
import linecache
import os

from ..frontend import dtypes
from ..frontend.errors import DeviceUnavailableError, LaunchError, TileError
from ..frontend.language import constexpr
from . import cache

DEFAULT_OPTIONS = {"num_warps": 4, "num_stages": 2}


def _is_constexpr(annotation) -> bool:
    return annotation is constexpr or (isinstance(annotation, str) and annotation.split(".")[-1] == "constexpr")


def _is_tensor(v) -> bool:
    return type(v).__module__.startswith("torch") and hasattr(v, "data_ptr")


def func(fn):
    """`@tile.func`: a helper inlined into the kernels that call it."""
    from ..frontend.helper import Helper

    return Helper(fn)


def kernel(fn=None, **options):
    """`@tile.kernel` or `@tile.kernel(num_warps=8)`."""
    if fn is None:
        return lambda f: Kernel(f, **options)
    return Kernel(fn, **options)


class Kernel:
    def __init__(self, fn, **options):
        unknown = set(options) - set(DEFAULT_OPTIONS)
        if unknown:
            raise TileError(f"unknown kernel option(s) {sorted(unknown)}; known: {sorted(DEFAULT_OPTIONS)}")
        self.fn, self.name = fn, fn.__name__
        self.options = {**DEFAULT_OPTIONS, **options}
        self.params = list(inspect.signature(fn).parameters.values())
        self.constexprs = {p.name for p in self.params if _is_constexpr(p.annotation)}
        self._launchers: dict = {}
        self._fast: dict = {}  # run(): _fast_key -> launcher
        self._runtime_names = [p.name for p in self.params if p.name not in self.constexprs]
        self._is_const = [p.name in self.constexprs for p in self.params]
        self._source_key = None
        # The fast path (see _make_binder): kernel[grid] returns partial(self._entry, gx, gy, gz,
        # grid_fn), cached per grid; _entry is the generated binder once the first launch has
        # shown which run-time arguments are tensors, ints, floats or bools.
        self._grids: dict = {}
        self._bound: dict = {}  # binder key -> the specialization's launch function
        self._kinds = None
        self._binder = None
        self._entry = self._unbound
        self._names = [p.name for p in self.params]
        self._bindable = (all(p.kind is p.POSITIONAL_OR_KEYWORD for p in self.params)
                          and not set(self._names) & set(DEFAULT_OPTIONS))
        self._bind_tries = 16  # launches whose argument kinds the binder cannot take, before giving up on it

    def __repr__(self):
        return f"<tile.kernel {self.name}>"

    def __call__(self, *args, **kwargs):
        raise TileError(f"launch a kernel with a grid: {self.name}[grid](...)")

    def __getitem__(self, grid):
        try:
            return self._grids[grid]
        except (KeyError, TypeError):  # a new grid, or an unhashable one
            pass
        if callable(grid):
            return functools.partial(self._entry, 0, 0, 0, grid)
        dims = _exact_grid(grid)
        if dims is None:  # not plain positive ints: the general path says what is wrong, as it always did
            return self._generic(grid)
        launch = functools.partial(self._entry, *dims, None)
        if len(self._grids) >= 256:
            self._grids.clear()
        self._grids[grid] = launch
        return launch

    def _generic(self, grid):
        def launch(*args, **kwargs):
            __tracebackhide__ = True  # noqa: F841  (pytest: show the user's frame)
            try:
                return self.run(grid, args, kwargs)
            except TileError as e:
                # Errors name the user's line; the compiler's frames would only hide it.
                raise e.with_traceback(None) from None

        return launch

    # ---- binding and specialization ---------------------------------------------
    def bind(self, args, kwargs) -> tuple[list, dict]:
        options = {k: kwargs.pop(k) for k in list(kwargs) if k in DEFAULT_OPTIONS}
        names = [p.name for p in self.params]
        if len(args) > len(names):
            raise LaunchError(f"{self.name}() takes {len(names)} arguments but {len(args)} were given")
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise LaunchError(f"{self.name}() got an unexpected argument '{k}'")
            if k in values:
                raise LaunchError(f"{self.name}() got argument '{k}' twice")
            values[k] = v
        missing = [n for n in names if n not in values]
        if missing:
            kind = "constexpr" if all(m in self.constexprs for m in missing) else "argument"
            raise LaunchError(f"{self.name}() is missing {kind}(s): {', '.join(missing)}")
        return [values[n] for n in names], {**self.options, **options}

    def signature(self, values) -> list[tuple]:
        """(name, kind, detail) per parameter: the specialization, in compiler form."""
        sig = []
        for p, v in zip(self.params, values):
            if p.name in self.constexprs:
                if _is_tensor(v):
                    raise LaunchError(f"argument '{p.name}' is a constexpr and cannot be a tensor")
                sig.append((p.name, "constexpr", v))
            elif _is_tensor(v):
                dt = dtypes.from_torch(v.dtype)
                if dt is None:
                    raise LaunchError(f"argument '{p.name}': dtype {v.dtype} is not supported (use float32, float16, bfloat16, int32, ...)")
                sig.append((p.name, "tensor", (dt, v.dim())))
            elif isinstance(v, bool):
                sig.append((p.name, "scalar", dtypes.int1))
            elif isinstance(v, int):
                dt = dtypes.int32 if -(2**31) <= v < 2**31 else dtypes.int64
                sig.append((p.name, "one" if v == 1 else "scalar", dt))
            elif isinstance(v, float):
                sig.append((p.name, "scalar", dtypes.float32))
            else:
                raise LaunchError(f"argument '{p.name}' has type {type(v).__name__}; kernels take torch tensors, ints, floats and bools")
        return sig

    def target_for(self, values) -> str:
        env = os.environ.get("TILE_TARGET")
        if env:
            return env
        for v in values:
            if _is_tensor(v) and v.device.type == "cuda":
                import torch

                major, minor = torch.cuda.get_device_capability(v.device)
                return f"sm_{major}{minor}"
        return "cpu"

    # ---- compile and launch --------------------------------------------------------
    def launcher(self, values, options, target):
        sig = self.signature(values)
        if target != "cpu":
            options = {**options, "divisible_args": _divisible_args(self, values)}
        # TILE_DUMP_IR is in the key: asking for dumps must reach the disk cache, which writes them.
        key = (target, tuple(sorted(options.items())), tuple((n, k, str(d)) for n, k, d in sig),
               os.environ.get("TILE_DUMP_IR"))
        found = self._launchers.get(key)
        if found is None:
            found = self._launchers[key] = cache.load_or_build(self, sig, target, options)
        return found

    def compile(self, *args, target: str | None = None, **kwargs):
        """Compile one specialization ahead of time (no launch); returns its launcher."""
        values, options = self.bind(list(args), dict(kwargs))
        return self.launcher(values, options, target or self.target_for(values))

    def _fast_key(self, env, args, kwargs):
        """A cheap key for the launcher cache: per parameter, just what the specialization reads."""
        key = [len(args), env]
        for is_const, v in zip(self._is_const, args):
            key.append(("=", v) if is_const else _spec_of(v))
        for k in sorted(kwargs):
            v = kwargs[k]
            key.append((k, ("=", v) if k in self.constexprs or k in DEFAULT_OPTIONS else _spec_of(v)))
        return tuple(key)

    def run(self, grid, args, kwargs):
        env = _env()
        fast = self._fast_key(env, args, kwargs)
        launch = self._fast.get(fast)
        miss = launch is None
        if miss:
            values, options = self.bind(list(args), dict(kwargs))
            launch = self.launcher(values, options, self.target_for(values))
        else:
            values = list(args) + [kwargs[p.name] for p in self.params[len(args):]]
        if env[2]:
            return  # TILE_COMPILE_ONLY: ahead-of-time builds compile into the cache and run nothing
        if miss:
            # Devices and strides are checked once per argument signature; the fast key pins them.
            launch.check([v for is_const, v in zip(self._is_const, values) if not is_const])
            self._fast[fast] = launch
        if callable(grid):
            grid = grid({p.name: v for p, v in zip(self.params, values)})
        grid = _normal_grid(grid)
        if grid is None:
            return
        launch(grid, [v for is_const, v in zip(self._is_const, values) if not is_const], self._runtime_names)

    # ---- the fast path: a generated binder per kernel ----------------------------------
    def _unbound(self, gx, gy, gz, grid_fn, *args, **kwargs):
        """What kernel[grid] calls until the binder exists, and for kernels it cannot serve."""
        __tracebackhide__ = True  # noqa: F841
        if self._binder is None and self._bindable and self._bind_tries > 0:
            try:
                values, _ = self.bind(list(args), dict(kwargs))
            except TileError:
                values = None  # the general path raises it
            kinds = values and _kinds_of(self, values)
            if kinds:
                self._make_binder(kinds)
            else:
                self._bind_tries -= 1
        if self._binder is not None:
            return self._binder(gx, gy, gz, grid_fn, *args, **kwargs)
        return self._generic(grid_fn or (gx, gy, gz))(*args, **kwargs)

    def _slow(self, gx, gy, gz, grid_fn, params, extra, kwargs, num_warps, num_stages):
        """The binder's way out when its guesses do not hold (an argument of another kind,
        an unknown keyword, too many arguments): the general path, with the call rebuilt."""
        __tracebackhide__ = True  # noqa: F841
        named = {n: v for n, v in zip(self._names, params) if v is not _MISSING}
        if extra:
            args, named = tuple(params) + extra, {}
        else:
            args = ()
        for k, v in (("num_warps", num_warps), ("num_stages", num_stages)):
            if v is not _MISSING:
                named[k] = v
        return self._generic(grid_fn or (gx, gy, gz))(*args, **named, **kwargs)

    def _miss(self, key, gx, gy, gz, grid_fn, params, num_warps, num_stages):
        """A binder key seen for the first time: find or build the specialization, check the
        arguments once, keep its launch function under the key and launch."""
        __tracebackhide__ = True  # noqa: F841
        try:
            named = {n: v for n, v in zip(self._names, params) if v is not _MISSING}
            for k, v in (("num_warps", num_warps), ("num_stages", num_stages)):
                if v is not _MISSING:
                    named[k] = v
            values, options = self.bind([], named)
            launcher = self.launcher(values, options, self.target_for(values))
            if _env()[2]:
                return  # TILE_COMPILE_ONLY: never kept, so every launch reaches the cache
            runtime = [v for is_const, v in zip(self._is_const, values) if not is_const]
            launcher.check(runtime)
            fast = None
            if _kinds_of(self, values) == self._kinds:
                make = getattr(launcher, "fast_launch", None)
                fast = (make and make(self._kinds)) or _adapter(launcher, self._kinds, self._runtime_names)
                self._bound[key] = fast
            if grid_fn is not None:
                grid = _callable_grid(grid_fn({p.name: v for p, v in zip(self.params, values)}))
                if grid is None:
                    return
                gx, gy, gz = grid
            if fast is None:
                return launcher((gx, gy, gz), runtime, self._runtime_names)
            flat = []
            for kind, v in zip(self._kinds, runtime):
                flat += (v, v.data_ptr()) if kind == "t" else (v,)
            return fast(gx, gy, gz, *flat)
        except TileError as e:
            raise e.with_traceback(None) from None

    def _make_binder(self, kinds):
        """Generate this kernel's binder: a function with the kernel's parameters (plus the
        grid, num_warps and num_stages) that reads from each argument exactly what the
        specialization depends on, looks the launch function up by that key and calls it
        with what it read. Each of its guesses (this argument is a tensor, that one an int)
        is checked; any that fails takes the general path, so every launch is still right."""
        names = self._names
        pre = "_t"
        while any(n.startswith(pre) for n in names):
            pre += "_"
        M = pre + "M"
        key = [f"{pre}env(b'TILE_TARGET')", f"{pre}env(b'TILE_DUMP_IR')", f"{pre}env(b'TILE_COMPILE_ONLY')"]
        guards, reads, flat = [f"{pre}extra", f"{pre}kw"], [], []
        kind_of = iter(kinds)
        for i, (n, const) in enumerate(zip(names, self._is_const)):
            if const:
                key += [f"{n}.__class__", n]
                continue
            kind = next(kind_of)
            if kind == "t":
                ptr = f"{pre}p{i}"
                reads.append(f"{ptr} = {n}.data_ptr()")
                key += [f"{n}.dtype", f"{n}.dim()", f"{n}.is_cuda", f"not {ptr} & 15"]
                flat += [n, ptr]
            else:
                guards.append(f"{n}.__class__ is not {pre}{ {'i': 'int', 'f': 'float', 'b': 'bool'}[kind] }")
                if kind == "i":  # ==1 is folded; multiples of 16 and the int32 range are specialized
                    key += [f"{n} == 1", f"not {n} & 15", f"-2147483648 <= {n} <= 2147483647"]
                flat.append(n)
        key += ["num_warps", "num_stages"]
        grid = [f"{pre}g{d}" for d in "xyz"]
        params_tuple = f"({', '.join(names)}{',' if len(names) == 1 else ''})"
        again = f"{', '.join(grid)}, {pre}gf, {params_tuple}"
        slow = f"{pre}slow({again}, {pre}extra, {pre}kw, num_warps, num_stages)"
        meta = "{" + ", ".join(f"{n!r}: {n}" for n in names) + "}"
        lines = [
            f"def {pre}binder({', '.join(grid)}, {pre}gf, {''.join(f'{n}={M}, ' for n in names)}*{pre}extra, "
            f"{''.join(f'{n}={M}, ' for n in DEFAULT_OPTIONS)}**{pre}kw):",
            f"    if {' or '.join(guards)}:",
            "        __tracebackhide__ = True",
            f"        return {slow}",
            "    try:",
            *[f"        {r}" for r in reads],
            f"        {pre}k = ({', '.join(key)},)",
            f"    except {pre}AttributeError:",
            "        __tracebackhide__ = True",
            f"        return {slow}",
            f"    {pre}l = {pre}bound.get({pre}k)",
            f"    if {pre}l is None:",
            "        __tracebackhide__ = True",
            f"        return {pre}miss({pre}k, {again}, num_warps, num_stages)",
            f"    if {pre}gf is not None:",
            f"        {pre}g = {pre}grid({pre}gf({meta}))",
            f"        if {pre}g is None:",
            "            return",
            f"        {', '.join(grid)} = {pre}g",
            f"    return {pre}l({', '.join(grid + flat)})",
        ]
        src = "\n".join(lines) + "\n"
        filename = f"<tile binder {self.name}>"
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        namespace = {M: _MISSING, f"{pre}env": _env_get(), f"{pre}bound": self._bound, f"{pre}slow": self._slow,
                     f"{pre}miss": self._miss, f"{pre}grid": _callable_grid, f"{pre}AttributeError": AttributeError,
                     f"{pre}int": int, f"{pre}float": float, f"{pre}bool": bool}
        exec(compile(src, filename, "exec"), namespace)
        binder = namespace[f"{pre}binder"]
        binder.__name__ = binder.__qualname__ = self.name  # as tracebacks and TypeErrors name it
        binder.__code__ = binder.__code__.replace(co_name=self.name)
        binder.source = src
        self._kinds, self._binder, self._entry = kinds, binder, binder
        self._grids.clear()  # the cached partials call _unbound


def _env() -> tuple:
    """TILE_TARGET, TILE_DUMP_IR and TILE_COMPILE_ONLY, read on every launch (tests change them)."""
    get = _env_get()
    return (get(b"TILE_TARGET"), get(b"TILE_DUMP_IR"), get(b"TILE_COMPILE_ONLY"))


def _env_get():
    """A getter of one environment variable by bytes name, as cheap as this platform allows."""
    data = getattr(os.environ, "_data", None)
    if data is not None and os.name == "posix":  # the raw bytes mapping: much faster than os.environ.get
        return data.get
    return lambda name: os.environ.get(name.decode())


_MISSING = object()  # the binder's default for an argument not passed


def _kinds_of(kernel, values) -> tuple | None:
    """Per run-time argument "t" (tensor), "i", "f" or "b"; None if one is none of these."""
    kinds = []
    for is_const, v in zip(kernel._is_const, values):
        if is_const:
            continue
        if _is_tensor(v):
            kinds.append("t")
        else:
            kind = {int: "i", float: "f", bool: "b"}.get(type(v))
            if kind is None:
                return None
            kinds.append(kind)
    return tuple(kinds)


def _adapter(launcher, kinds, names):
    """A fast-launch-shaped function over a launcher that has none (the CPU's)."""
    def launch(gx, gy, gz, *flat):
        values, i = [], 0
        for kind in kinds:
            values.append(flat[i])
            i += 2 if kind == "t" else 1
        return launcher((gx, gy, gz), values, names)

    return launch


def _normal_grid(grid):
    """The 3-tuple of ints of a grid, or None when it is empty (nothing to launch)."""
    if isinstance(grid, int):
        grid = (grid,)
    grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    if len(grid) != 3 or any(g < 0 for g in grid):
        raise LaunchError(f"grid must be 1 to 3 non-negative ints, got {grid}")
    return None if 0 in grid else grid


def _exact_grid(grid):
    """(gx, gy, gz) if grid is 1 to 3 positive ints (the only grids kernel[grid] caches), else None."""
    if type(grid) is int:
        grid = (grid,)
    if type(grid) is not tuple or not 1 <= len(grid) <= 3 or any(type(g) is not int or not 0 < g < 2**31 for g in grid):
        return None
    return grid + (1,) * (3 - len(grid))


def _callable_grid(grid):
    """A grid function's result, for the binder: (gx, gy, gz), or None when empty."""
    grid = _normal_grid(grid)
    if grid is not None and any(g >= 2**31 for g in grid):
        raise LaunchError(f"grid {grid} is larger than a GPU allows")
    return grid


def _spec_of(v):
    if hasattr(v, "data_ptr"):
        return (v.dtype, v.dim(), v.is_cuda, v.data_ptr() % 16 == 0)
    if isinstance(v, bool):
        return bool
    if isinstance(v, int):
        return (int, v == 1, v % 16 == 0, -(2**31) <= v < 2**31)
    return type(v)


def _divisible_args(kernel, values) -> str:
    """Run-time arguments that are multiples of 16 (ints) or 16-byte aligned (tensors),
    as Triton specializes: they let loads and stores be 16-byte vectors."""
    idx, out = 0, []
    for p, v in zip(kernel.params, values):
        if p.name in kernel.constexprs:
            continue
        if (_is_tensor(v) and v.data_ptr() % 16 == 0) or (isinstance(v, int) and not isinstance(v, bool) and v % 16 == 0):
            out.append(str(idx))
        idx += 1
    return ",".join(out)


def device_unavailable(name: str, target: str, path: str) -> DeviceUnavailableError:
    return DeviceUnavailableError(
        f"{name} was compiled for {target} into the cache ({path}), but this host has no CUDA device to run it"
    )
