"""`@tile.kernel` and `@tile.func`: binding launch arguments, specializing,
finding or building the compiled kernel, and launching it.

    kernel[grid](*args, **meta)

Tensors, Python scalars and `tile.constexpr` values are specialized per
dtype/rank, per scalar type and per value respectively; each specialization
is compiled once and kept in memory and in the disk cache. Compilation
imports the compiler (MLIR, lark) only when the cache misses.

A launch of a cached kernel takes the fast path: `kernel[grid]` is a cached
partial of a binder generated for the kernel (`launch_binder.py`), which reads each
argument once, looks the specialization's generated launch function up by what
it read, and calls it. Anything the binder did not foresee goes the general way
(`run`), which raises the errors.
"""

from __future__ import annotations

import collections
import functools
import inspect
import os
import threading
import weakref

from ..codegen import pass_pipeline
from ..frontend import dtypes
from ..frontend.errors import DeviceUnavailableError, LaunchError, TileError, checked_function
from ..frontend.constexpr import constexpr, unwrap
from ..frontend.names import captured, described
from ..frontend.tensor_descriptor import is_descriptor
from ..passes import plugins
from . import cache, host_descriptors
from .arguments import tensor_device
from .launch_binder import (OPTION_NAMES, FastLaunch, disjoint, exact_grid, fake_launch, flag_on, holds_nan, is_tensor, normal_grid,
                            read_env, wide)

DEFAULT_OPTIONS = {"num_warps": 4, "num_stages": 2}
assert tuple(DEFAULT_OPTIONS) == OPTION_NAMES  # the binder takes them by name
_KERNELS = weakref.WeakSet()


def _forget_fast_paths():
    """A pipeline's edits or an out-of-tree pass changed: the launches the fast paths keep
    were found under the old pipeline (`launcher` keys by the new one)."""
    for k in list(_KERNELS):
        k._bound.clear()
        k._fast.clear()


pass_pipeline.listeners.append(_forget_fast_paths)

# Launchers kept in memory, least recently looked up first, across all kernels: a CPU launcher
# holds a JIT engine (about 3 MB), so a process that sees many shapes must not keep them all.
# An evicted specialization comes back from the disk cache on its next launch.
_RESIDENT: collections.OrderedDict = collections.OrderedDict()  # (weakref to kernel, key) -> None
_RESIDENT_LOCK = threading.Lock()


def max_kernels_in_memory() -> int:
    """`TILE_MAX_KERNELS_IN_MEMORY` (default 256, at least 1): specializations kept loaded."""
    value = os.environ.get("TILE_MAX_KERNELS_IN_MEMORY", "256")
    try:
        return max(1, int(value))
    except ValueError:
        raise TileError(f"TILE_MAX_KERNELS_IN_MEMORY must be an integer, got {value!r}") from None


def _keep(kernel, key) -> None:
    """Mark (kernel, key) most recently used; evict the oldest launchers past the bound."""
    with _RESIDENT_LOCK:
        entry = (weakref.ref(kernel), key)
        _RESIDENT[entry] = None
        _RESIDENT.move_to_end(entry)
        limit = max_kernels_in_memory()
        while len(_RESIDENT) > limit:
            (ref, old), _ = _RESIDENT.popitem(last=False)
            owner = ref()
            if owner is not None:
                owner._launchers.pop(old, None)
                owner._bound.clear()  # (the fast paths may hold the evicted launcher)
                owner._fast.clear()


def _is_constexpr(annotation) -> bool:
    return annotation is constexpr or (isinstance(annotation, str) and annotation.split(".")[-1] == "constexpr")


def func(fn):
    """`@tile.func`: a helper inlined into the kernels that call it."""
    from ..frontend.helper import Helper

    return Helper(checked_function(fn, "func", varargs=True))


def kernel(fn=None, **options):
    """`@tile.kernel`, `@tile.kernel(num_warps=8)` or `@tile.kernel(pipeline=tile.Pipeline()...)`
    (a list of pass specs there runs them after tile-opt's passes)."""
    if fn is None:
        return lambda f: Kernel(f, **options)
    return Kernel(fn, **options)


# Triton's @jit options that change no result here: accepted by `jit` and dropped
_TRITON_ONLY_OPTIONS = ("do_not_specialize", "do_not_specialize_on_alignment", "noinline", "repr", "launch_metadata",
                        "version", "debug")  # (debug: device_assert on a GPU, `Kernel.debug`)


def jit(fn=None, **options):
    """`@tile.jit`: Triton's spelling of `@tile.kernel`. As every kernel, it is launched with
    `f[grid](...)` and inlined where another kernel calls it (Triton's @jit functions call
    one another); Triton's options that change no result (`do_not_specialize`, `noinline`,
    ...) are accepted."""
    def make(f):
        k = kernel(f, **{key: v for key, v in options.items() if key not in _TRITON_ONLY_OPTIONS})
        k.debug = bool(options.get("debug"))
        return k

    return make if fn is None else make(fn)


def checked_options(options: dict) -> dict:
    """num_warps a power of two from 1 to 32 (a block of at most 1024 threads), num_stages
    an int of at least 1; ints, not floats or bools."""
    warps, stages = options["num_warps"], options["num_stages"]
    if type(warps) is not int or warps not in (1, 2, 4, 8, 16, 32):
        raise LaunchError(f"num_warps must be 1, 2, 4, 8, 16 or 32, got {warps!r}")
    if type(stages) is not int or stages < 1:
        raise LaunchError(f"num_stages must be an int of at least 1, got {stages!r}")
    return options


class Kernel(FastLaunch):
    def __init__(self, fn, pipeline=None, **options):
        unknown = set(options) - set(DEFAULT_OPTIONS)
        if unknown:
            raise TileError(f"unknown kernel option(s) {sorted(unknown)}; known: {sorted(DEFAULT_OPTIONS)} and pipeline")
        fn = checked_function(fn, "kernel", varargs=False)
        self.fn, self.name = fn, fn.__name__
        self.debug = False  # device_assert checked on a GPU too (@tile.jit(debug=True); TILE_DEBUG=1 for all)
        if pipeline is not None and not isinstance(pipeline, pass_pipeline.Pipeline):
            pipeline = pass_pipeline.Pipeline().stage("tile-opt").append(*pipeline)
        self.pipeline = pipeline
        _KERNELS.add(self)
        self.options = checked_options({**DEFAULT_OPTIONS, **options})
        self.params = list(inspect.signature(fn).parameters.values())
        self.constexprs = {p.name for p in self.params if _is_constexpr(p.annotation)}
        self._launchers: dict = {}
        self._fast: dict = {}  # run(): _fast_key -> launcher
        self._runtime_names = [p.name for p in self.params if p.name not in self.constexprs]
        self._is_const = [p.name in self.constexprs for p in self.params]
        self._readers = None  # the constants it reads from its namespace (`captured_values`)
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

    @functools.cached_property
    def tile_helper(self):
        """The kernel as a `@tile.func`: called from a kernel, it is inlined there."""
        from ..frontend.helper import Helper

        return Helper(self.fn)

    def __call__(self, *args, **kwargs):
        raise TileError(f"launch a kernel with a grid: {self.name}[grid](...)")

    def __getitem__(self, grid):
        try:
            return self._grids[grid]
        except (KeyError, TypeError):  # a new grid, or an unhashable one
            pass
        if callable(grid):
            return functools.partial(self._entry, 0, 0, 0, grid)
        dims = exact_grid(grid)
        if dims is None:  # not plain positive ints: the general path says what is wrong, as it always did
            return self._generic(grid)
        launch = functools.partial(self._entry, *dims, None)
        if len(self._grids) >= 256:
            self._grids.clear()
        self._grids[grid] = launch
        return launch

    def _generic(self, grid):
        return generic_launch(self.run, grid)

    # ---- binding and specialization ---------------------------------------------
    def bind(self, args, kwargs) -> tuple[list, dict]:
        names = [p.name for p in self.params]
        # A launch option is the kernel's parameter too where it has one of that name (as Triton binds both)
        options = {k: unwrap(kwargs[k] if k in names else kwargs.pop(k)) for k in list(kwargs) if k in DEFAULT_OPTIONS}
        passes = kwargs.pop("passes", None) if "passes" not in names else None  # (a parameter of that name wins)
        if "num_ctas" in kwargs and "num_ctas" not in names:  # Triton's clusters: one CTA is what tile launches
            if kwargs.pop("num_ctas") != 1:
                raise LaunchError(f"{self.name}: num_ctas (thread-block clusters) must be 1: tile launches one CTA a program")
        if len(args) > len(names):
            raise LaunchError(f"{self.name}() takes {len(names)} arguments but {len(args)} were given")
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise LaunchError(f"{self.name}() got an unexpected argument '{k}'")
            if k in values:
                raise LaunchError(f"{self.name}() got argument '{k}' twice")
            values[k] = v
        for p in self.params:  # defaults, constexprs' included (`BLOCK: tile.constexpr = 128`)
            if p.name not in values and p.default is not p.empty:
                values[p.name] = p.default
        missing = [n for n in names if n not in values]
        if missing:
            kind = "constexpr" if all(m in self.constexprs for m in missing) else "argument"
            options_too = [m for m in missing if m in DEFAULT_OPTIONS]
            hint = f" ({' and '.join(options_too)}: a launch option and a parameter of this kernel; pass it by keyword, " \
                   f"{options_too[0]}=..., and both take it)" if options_too else ""
            raise LaunchError(f"{self.name}() is missing {kind}(s): {', '.join(missing)}{hint}")
        options = checked_options({**self.options, **options}) if options else self.options
        return [unwrap(values[n]) for n in names], {**options, "passes": passes} if passes else options

    def signature(self, values) -> list[tuple]:
        """(name, kind, detail) per parameter: the specialization, in compiler form."""
        sig = []
        for p, v in zip(self.params, values):
            if v is None and p.name not in self.constexprs:  # Triton's optional pointer: `if W is not None:` folds
                sig.append((p.name, "constexpr", None))
            elif p.name in self.constexprs:
                if is_tensor(v):
                    raise LaunchError(f"argument '{p.name}' is a constexpr and cannot be a tensor")
                try:
                    hash(v)
                except TypeError:
                    raise LaunchError(f"constexpr '{p.name}' must be hashable (an int, float, bool, str, dtype or "
                                      f"tuple), got a {type(v).__name__}") from None
                sig.append((p.name, "constexpr", v))
            elif is_tensor(v):
                if str(v.layout) != "torch.strided":  # sparse, mkldnn: no data pointer and strides to pass
                    raise LaunchError(f"argument '{p.name}' is a {v.layout} tensor; kernels take strided (dense) tensors")
                dt = dtypes.from_torch(v.dtype)
                if dt is None:
                    raise LaunchError(f"argument '{p.name}': dtype {v.dtype} is not supported (use float32, float16, bfloat16, int32, ...)")
                # (a wide tensor's detail says so; others keep the (dtype, rank) of older builds' metadata)
                sig.append((p.name, "tensor", (dt, v.dim(), "wide") if wide(v) else (dt, v.dim())))
            elif isinstance(v, bool):
                sig.append((p.name, "scalar", dtypes.int1))
            elif isinstance(v, int):
                if not -(2**63) <= v < 2**63:
                    raise LaunchError(f"argument '{p.name}' is {v}, which does not fit in 64 bits")
                dt = dtypes.int32 if -(2**31) <= v < 2**31 else dtypes.int64
                sig.append((p.name, "one" if v == 1 else "scalar", dt))
            elif isinstance(v, float):
                sig.append((p.name, "scalar", dtypes.float32))
            else:
                raise LaunchError(f"argument '{p.name}' has type {type(v).__name__}; kernels take torch tensors, ints, floats and bools")
        return sig

    def runtime_values(self, values) -> tuple[list, list[str]]:
        """The values the compiled kernel takes, and their names: not the constexprs, nor a
        None (specialized as a compile-time None)."""
        if not any(v is None for v in values):
            return [v for is_const, v in zip(self._is_const, values) if not is_const], self._runtime_names
        kept = [(v, p.name) for is_const, v, p in zip(self._is_const, values, self.params) if not is_const and v is not None]
        return [v for v, _ in kept], [n for _, n in kept]

    def target_for(self, values) -> str:
        env = os.environ.get("TILE_TARGET")
        if env:
            return env
        for v in values:
            v = v.base if is_descriptor(v) else v  # (a tensor descriptor's tensor)
            if is_tensor(v) and v.device.type == "cuda":
                import torch

                # (tensors of two devices: the LaunchError now, before anything is compiled)
                tensor_device(self._names, [v.base if is_descriptor(v) else v for v in values])
                major, minor = torch.cuda.get_device_capability(v.device)
                # Hopper's architecture-specific features (wgmma) need the `a` target.
                return f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")
        return "cpu"

    def captured_values(self) -> str | None:
        """The values of the global and closure constants the kernel (or a helper) folds, as
        text (a NaN equals itself there), or None if it reads none: the in-memory caches
        are keyed by them, as the disk cache is, so that reassigning one recompiles."""
        if self._readers is None:
            try:
                self._readers = [read for _, _, read in captured(self.fn)[1]]
            except (TileError, SyntaxError):  # no source: building says so
                self._readers = []
        if not self._readers:
            return None
        values = []
        for read in self._readers:
            try:
                values.append(read())
            except Exception as e:  # (deleted since: the build reports the name at its line)
                values.append(e)
        return repr(values)

    # ---- compile and launch --------------------------------------------------------
    def launcher(self, values, options, target, build: bool = True):
        """The specialization's launcher, from memory, the disk cache or (`build`) the compiler;
        None if it is in none of them and not `build`."""
        sig = self.signature(values)
        options = dict(options)
        passes = options.pop("passes", None)
        if target != "cpu":
            options = {**options, "divisible_args": _divisible_args(self, values),
                       "noalias": disjoint(*[v for v in values if is_tensor(v)])}
        if self.debug or flag_on(os.environ.get("TILE_DEBUG")):  # (device_assert on a GPU; bounds checks everywhere)
            options["debug"] = True
        plugins.load_plugins()  # (before the edits: a plugin may add its passes to tile.pipeline_edits)
        edits = pass_pipeline.launch_edits(self.pipeline, passes)
        pipeline = pass_pipeline.key_text(edits, {**options, "target": target})
        # TILE_DUMP_IR is in the key: asking for dumps must reach the disk cache, which writes them.
        # Constexprs by repr (B="4" after B=4 found its build: str() is "4" for both), a helper by its code.
        key = (target, tuple(sorted(options.items())), tuple((n, k, described(d)) for n, k, d in sig),
               os.environ.get("TILE_DUMP_IR"), self.captured_values(), pipeline)
        found = self._launchers.get(key)
        if found is None:
            found = cache.load_or_build(self, sig, target, options, edits, pipeline, build)
            if found is not None:
                self._launchers[key] = found
        if found is not None:
            _keep(self, key)
        return found

    def compile(self, *args, target: str | None = None, **kwargs):
        """Compile one specialization ahead of time (no launch); returns its launcher."""
        return self.compiled(args, kwargs, target)

    def compiled(self, args, kwargs, target: str | None = None, build: bool = True):
        """`compile`'s launcher; None if it is not compiled yet and not `build`."""
        if host_descriptors.present(args, kwargs):
            view, flat, options = host_descriptors.expanded(self, args, kwargs)
            return view.compiled(flat, options, target, build)
        values, options = self.bind(list(args), dict(kwargs))
        return self.launcher(values, options, target or self.target_for(values), build)

    def _fast_key(self, env, args, kwargs):
        """A cheap key for the launcher cache: per parameter, just what the specialization reads."""
        key = [len(args), env, self.captured_values()]
        for is_const, v in zip(self._is_const, args):
            key.append(_exact(v) if is_const else _spec_of(v))
        for k in sorted(kwargs):
            v = kwargs[k]
            if k == "passes" and k not in self._names:  # (a Pipeline by identity: editing it forgets this cache)
                key.append((k, v if isinstance(v, pass_pipeline.Pipeline) else tuple(v)))
                continue
            key.append((k, _exact(v) if k in self.constexprs or k in DEFAULT_OPTIONS else _spec_of(v)))
        key.append(disjoint(*[v for v in (*args, *kwargs.values()) if is_tensor(v)]))
        return tuple(key)

    def run(self, grid, args, kwargs):
        if fake_launch(args, kwargs):
            return  # torch's fake tensors (tracing: torch.compile, a custom op's fake): shapes only, nothing runs
        if host_descriptors.present(args, kwargs):  # launched by a view whose parameters are their parts
            view, flat, options = host_descriptors.expanded(self, args, kwargs)
            return view.run(grid, flat, options)
        env = read_env()
        try:
            fast = self._fast_key(env, args, kwargs)
            launch = self._fast.get(fast)
        except (TypeError, RuntimeError):  # an unhashable constexpr, a sparse tensor: `signature` says which
            launch = fast = None
        miss = launch is None
        if miss:
            values, options = self.bind(list(args), dict(kwargs))
            launch = self.launcher(values, options, self.target_for(values))
        else:
            values = list(args) + [kwargs.get(p.name, p.default) for p in self.params[len(args):]]
        if env[2]:
            return  # TILE_COMPILE_ONLY: ahead-of-time builds compile into the cache and run nothing
        if miss:
            # Devices and strides are checked once per argument signature; the fast key pins them.
            launch.check(self.runtime_values(values)[0])
            if not holds_nan(fast):
                self._fast[fast] = launch
        if callable(grid):
            grid = grid({p.name: v for p, v in zip(self.params, values)})
        grid = normal_grid(grid)
        if grid is None:
            return
        launch(grid, *self.runtime_values(values))






def generic_launch(run, grid):
    """`launch(*args, **kwargs)` calling `run(grid, args, kwargs)`, whose errors show the user's frame."""
    def launch(*args, **kwargs):
        __tracebackhide__ = True  # noqa: F841  (pytest: show the user's frame)
        try:
            return run(grid, args, kwargs)
        except TileError as e:
            # Errors name the user's line; the compiler's frames would only hide it.
            raise e.with_traceback(None) from None

    return launch


def _exact(v):
    """A constexpr or option by type and value: 2 == 2.0 == True as keys, but they compile
    (or are checked) differently."""
    return ("=", type(v), v)


def _spec_of(v):
    """What the specialization and the once-per-key checks read of a run-time argument, as
    the binder's key does: the device, not `is_cuda` (a meta tensor after a CPU one reached
    the kernel as a null pointer), and the int64 range (past it, a miss raises)."""
    if hasattr(v, "data_ptr"):
        return (v.dtype, v.dim(), v.device, v.data_ptr() % 16 == 0, wide(v))
    if isinstance(v, bool):
        return bool
    if isinstance(v, int):
        return (int, v == 1, v != 0 and v % 16 == 0, -(2**31) <= v < 2**31, -(2**63) <= v < 2**63)
    return type(v)


def _divisible_args(kernel, values) -> str:
    """Run-time arguments that are nonzero multiples of 16 (ints) or 16-byte aligned (tensors),
    as Triton specializes: they let loads and stores be 16-byte vectors (and `x % n` keep x's
    runs, n never being 0: `axis_info.unguarded`)."""
    idx, out = 0, []
    for p, v in zip(kernel.params, values):
        if p.name in kernel.constexprs or v is None:
            continue
        if (is_tensor(v) and v.data_ptr() % 16 == 0) or (isinstance(v, int) and not isinstance(v, bool) and v != 0 and v % 16 == 0):
            out.append(str(idx))
        idx += 1
    return ",".join(out)


def device_unavailable(name: str, target: str, path: str) -> DeviceUnavailableError:
    return DeviceUnavailableError(
        f"{name} was compiled for {target} into the cache ({path}), but this host has no CUDA device to run it"
    )
