"""`tile.autotune`: pick the fastest of several launch configurations, once per key,
with `triton.autotune`'s surface (`prune_configs_by`, `reset_to_zero`, `restore_value`,
`pre_hook`, `post_hook`, `warmup`/`rep` in ms, `do_bench`).

    @tile.autotune(configs=[tile.Config({"BLOCK": 128}, num_warps=4), tile.Config({"BLOCK": 256}, num_warps=8)],
                   key=["n_cols"])
    @tile.kernel
    def kernel(x, out, n_cols, BLOCK: tile.constexpr): ...

    kernel[grid](x, out, n_cols)      # BLOCK and num_warps come from the chosen config

The key is the `key=` arguments' values (a tensor's shape and dtype) and, as in Triton,
every tensor argument's dtype. The first launch with a new key compiles the configs
(the pruned ones) in parallel processes (into the disk cache; those already there are not
compiled again), times each on the real arguments (CUDA events on a GPU, the wall clock
on the CPU), and keeps the winner in memory and on disk (`<TILE_CACHE_DIR>/autotune/`),
so that later processes skip the search. An ahead-of-time build (`TILE_COMPILE_ONLY`)
compiles every config and saves no choice: its launches run nothing to time. While it
times, a search shows its progress on stderr (a line redrawn per config) where stderr is
a terminal, or wherever TILE_AUTOTUNE_PROGRESS=1 (0 turns it off).
Like Triton's autotuner, the kernel runs many times on the caller's arguments while
tuning: name the tensors it accumulates into in `reset_to_zero` (zeroed before each
trial and before the real launch) and those it updates in place in `restore_value`.
"""

from __future__ import annotations

import concurrent.futures
import copy
import hashlib
import inspect
import json
import math
import multiprocessing
import os
import statistics
import sys
import time
import warnings

from ..frontend.errors import LaunchError, TileError
from ..frontend.paths import remove
from ..frontend.tensor_descriptor import is_descriptor
from . import cache
from .kernel import DEFAULT_OPTIONS, fake_launch, generic_launch
from .launch_binder import is_tensor, read_env


class Config:
    """One candidate, as `triton.Config`: its constexpr values (a dict, `Config({"BLOCK": 128})`,
    or keywords, `Config(BLOCK=128)`) and launch options. Options left out are the kernel
    defaults (num_warps=4, num_stages=2); `pre_hook(nargs)` runs before each of its launches."""

    def __init__(self, kwargs: dict | None = None, num_warps: int = DEFAULT_OPTIONS["num_warps"],
                 num_stages: int = DEFAULT_OPTIONS["num_stages"], num_ctas: int = 1, maxnreg=None, pre_hook=None,
                 ir_override=None, **constexprs):
        if kwargs is not None and not isinstance(kwargs, dict):
            raise TileError(f"Config takes a dict of constexpr values, got {type(kwargs).__name__}")
        both = set(kwargs or {}) & set(constexprs)
        if both:
            raise TileError(f"Config sets {sorted(both)} both in its dict and as keywords")
        unsupported = [f"{n}={v!r}" for n, v, default in (("num_ctas", num_ctas, 1), ("maxnreg", maxnreg, None),
                                                           ("ir_override", ir_override, None)) if v != default]
        if unsupported:
            raise TileError(f"Config: {', '.join(unsupported)} is not supported by tile")
        self.kwargs = {**(kwargs or {}), **constexprs}
        self.num_warps, self.num_stages, self.num_ctas, self.maxnreg = num_warps, num_stages, num_ctas, maxnreg
        self.pre_hook, self.ir_override = pre_hook, ir_override

    def all_kwargs(self) -> dict:
        """The constexprs and the launch options, as the launch takes them."""
        return {**self.kwargs, "num_warps": self.num_warps, "num_stages": self.num_stages}

    def _identity(self):
        return (*self.all_kwargs().items(), self.pre_hook)

    def __hash__(self):
        return hash(self._identity())

    def __eq__(self, other):
        return isinstance(other, Config) and self._identity() == other._identity()

    def __repr__(self):
        # (stable across processes: the autotune record's file name hashes it)
        hook = f", pre_hook={getattr(self.pre_hook, '__qualname__', '?')}" if self.pre_hook else ""
        return f"Config({self.kwargs!r}, num_warps={self.num_warps}, num_stages={self.num_stages}{hook})"

    def __str__(self):
        return ", ".join(f"{k}: {v}" for k, v in self.all_kwargs().items())


def do_bench(fn, warmup: float = 25, rep: float = 100, quantiles=None, cuda: bool = False):
    """Triton's `do_bench` measure: the median time of `fn` in ms (or the given quantiles),
    running it for about `warmup` ms, then about `rep` ms (at least once each), timed with
    CUDA events (`cuda`) or the wall clock."""
    if cuda:
        import torch

        def timed():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end)
    else:
        def timed():
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3

    fn()  # (first launch: loads the module, builds the launcher)
    estimate = statistics.mean(timed() for _ in range(5)) or 1e-6
    for _ in range(max(1, int(warmup / estimate))):
        fn()
    times = [timed() for _ in range(max(1, int(rep / estimate)))]
    if quantiles is None:
        return statistics.median(times)
    times.sort()
    return [times[min(len(times) - 1, int(q * len(times)))] for q in quantiles]


def _meta_copy(v):
    """Arguments for a compile-only launch in another process: tensors become 'meta' tensors of the
    same layout; a tensor descriptor, a copy over its base's (its lists copied: a config's
    pre_hook sets its block shape, and each config compiles with its own)."""
    if hasattr(v, "data_ptr"):
        import torch

        return torch.empty_strided(tuple(v.shape), tuple(v.stride()), dtype=v.dtype, device="meta")
    if is_descriptor(v):
        out = copy.copy(v)
        out.base, out.shape, out.strides, out.block_shape = (_meta_copy(v.base), list(v.shape), list(v.strides),
                                                              list(v.block_shape))
        return out
    return v


_JOBS: list = []  # set before the worker processes fork, so nothing needs pickling


def _compile_one(kernel, args, kwargs, target, build: bool = True) -> TileError | bool | None:
    """None, or why this configuration does not compile (it is then left out, as in Triton);
    not `build`: False if it is not in the cache yet."""
    try:
        return None if kernel.compiled(args, kwargs, target, build) is not None else False
    except TileError as e:
        return e.with_traceback(None)


def _compile_job(i: int) -> TileError | None:
    return _compile_one(*_JOBS[i])


def _first_of(timing) -> float:
    """A `do_bench` result: a time, or a list of quantiles whose first is the median."""
    return float(timing[0] if isinstance(timing, (list, tuple)) else timing)


class Progress:
    """The progress of a search on stderr: one line, redrawn per config timed (a terminal's,
    or TILE_AUTOTUNE_PROGRESS=1's; =0 never)."""

    WIDTH = 24

    def __init__(self, what: str, total: int):
        flag = os.environ.get("TILE_AUTOTUNE_PROGRESS", "")
        self.on = flag == "1" or (flag != "0" and sys.stderr.isatty())
        self.what, self.total, self.count, self.best = what, total, 0, math.inf

    def step(self, ms: float):
        self.count += 1
        self.best = min(self.best, ms)
        if self.on:
            filled = self.WIDTH * self.count // self.total
            best = f", best {self.best:.3f} ms" if self.best < math.inf else ""
            sys.stderr.write(f"\r{self.what} [{'#' * filled}{'.' * (self.WIDTH - filled)}] "
                             f"{self.count}/{self.total} configs{best}")
            sys.stderr.flush()

    def done(self, best, ms: float):
        if self.on:
            sys.stderr.write(f"\n{self.what}: {best!r} in {ms:.3f} ms\n")
            sys.stderr.flush()


class Autotuner:
    def __init__(self, kernel, configs: list[Config], key: list[str], prune_configs_by: dict | None = None,
                 reset_to_zero: list[str] | None = None, restore_value: list[str] | None = None, pre_hook=None,
                 post_hook=None, warmup: float | None = None, rep: float | None = None, use_cuda_graph: bool = False,
                 do_bench=None, cache_results: bool = True, workers: int | None = None):
        self.configs = list(configs) or [Config()]
        bad = [c for c in self.configs if not isinstance(c, Config)]
        if bad:
            raise TileError(f"autotune configs must be tile.Config, got {bad[0]!r}")
        names = [p.name for p in kernel.params]
        for what, given in (("key", key), ("reset_to_zero", reset_to_zero), ("restore_value", restore_value)):
            unknown = [k for k in given or () if k not in names]
            if unknown:
                raise TileError(f"autotune {what} names unknown parameter(s) {unknown} of {kernel.name}")
        unknown = set(prune_configs_by or {}) - {"early_config_prune", "perf_model", "top_k"}
        if unknown:
            raise TileError(f"autotune prune_configs_by: unknown field(s) {sorted(unknown)} (early_config_prune, "
                            "perf_model, top_k)")
        if use_cuda_graph:
            raise TileError("autotune use_cuda_graph=True is not supported by tile")
        self.kernel, self.key, self.arg_names = kernel, list(key), names
        self.reset_to_zero, self.restore_value = list(reset_to_zero or ()), list(restore_value or ())
        prune = prune_configs_by or {}
        self.early_config_prune, self.perf_model = prune.get("early_config_prune"), prune.get("perf_model")
        self.configs_top_k = prune.get("top_k", 1.0)
        self.user_pre_hook, self.user_post_hook = pre_hook, post_hook
        self.warmup, self.rep = 25 if warmup is None else warmup, 100 if rep is None else rep
        self._do_bench, self.cache_results, self.workers = do_bench, cache_results, workers
        self.restore_copies: dict = {}
        self.cache: dict = {}  # key -> the chosen Config
        self.timings: dict = {}  # key -> per config (of self.configs) its time in ms, inf if not timed
        self.nargs = None

    def __getitem__(self, grid):
        return generic_launch(self.run, grid)

    # ---- hooks -------------------------------------------------------------------------
    def pre_hook(self, nargs: dict, reset_only: bool = False):
        """Before each trial: zero `reset_to_zero`, keep copies of `restore_value` (Triton's
        default, replaced by the user's `pre_hook`)."""
        if self.user_pre_hook is not None:
            return self.user_pre_hook(nargs, reset_only=reset_only) if reset_only else self.user_pre_hook(nargs)
        for name in self.reset_to_zero:
            if nargs.get(name) is not None:
                nargs[name].zero_()
        if not reset_only:
            self.restore_copies = {n: nargs[n].clone() for n in self.restore_value if nargs.get(n) is not None}

    def post_hook(self, nargs: dict, exception):
        """After each trial: put `restore_value` back (Triton's default, replaced by the user's `post_hook`)."""
        if self.user_post_hook is not None:
            return self.user_post_hook(nargs, exception=exception)
        for name, value in self.restore_copies.items():
            nargs[name].copy_(value)
        self.restore_copies = {}

    # ---- the key and its on-disk record ---------------------------------------------
    def key_of(self, args, kwargs) -> str:
        """The key= arguments' values (a tensor's shape and dtype), every tensor argument's dtype
        (as Triton: an fp16 launch must not take the fp32 winner) and the target."""
        bound = dict(zip(self.arg_names, args), **kwargs)
        parts = []
        for k in self.key:
            v = bound.get(k)
            parts.append(f"{k}={tuple(v.shape)}:{v.dtype}" if is_tensor(v) else f"{k}={v!r}")
        dtypes = ",".join(f"{n}:{v.dtype}" for n, v in bound.items() if hasattr(v, "dtype") and n not in self.key)
        return ";".join(parts) + (f";dtypes={dtypes}" if dtypes else "") + \
            f";target={self.kernel.target_for(list(bound.values()))}"

    def _record_path(self) -> str:
        # The compiler's digest too, as the kernel cache's key: a compiler change can make the saved
        # winner stop compiling (a config past a new shared memory limit), and every launch then failed.
        text = inspect.getsource(self.kernel.fn) + repr(self.configs) + cache.compiler_digest() + cache.TOOLCHAIN
        h = hashlib.sha256(text.encode()).hexdigest()[:16]
        return os.path.join(cache.cache_dir(), "autotune", f"{self.kernel.name}-{h}.json")

    def _load_record(self) -> dict:
        """The saved choices by key; a damaged file (not JSON, not a dict) is no record."""
        try:
            with open(self._record_path()) as f:
                record = json.load(f)
        except (OSError, ValueError):
            return {}
        return record if isinstance(record, dict) else {}

    def _saved_choice(self, key: str) -> int | None:
        """The config index saved for key, if the record holds a valid one (else tune again)."""
        saved = self._load_record().get(key)
        index = saved.get("config") if isinstance(saved, dict) else None
        return index if type(index) is int and 0 <= index < len(self.configs) else None

    def _save(self, key: str, index: int):
        path = self._record_path()
        record = self._load_record()
        record[key] = {"config": index, "timings_ms": self.timings.get(key)}
        tmp = f"{path}.{os.getpid()}"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(tmp, "w") as f:
                json.dump(record, f, indent=1)
            os.replace(tmp, path)
        except OSError as e:  # a read-only cache: the choice still holds in this process
            remove(tmp)
            warnings.warn(f"tile: cannot save the autotune choice to {path} ({e})", stacklevel=2)

    # ---- tuning ------------------------------------------------------------------------
    def prune_configs(self, nargs: dict, kwargs: dict) -> list[Config]:
        """`early_config_prune(configs, nargs, **kwargs)`, then the `top_k` best by `perf_model`."""
        pruned = self.configs
        if self.early_config_prune:
            pruned = list(self.early_config_prune(self.configs, nargs, **kwargs))
            if not pruned:
                raise TileError(f"autotune of {self.kernel.name}: early_config_prune left no config")
        if self.perf_model:
            top_k = self.configs_top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(pruned) * top_k))
            elif type(top_k) is not int or top_k < 1:
                raise TileError(f"autotune prune_configs_by top_k must be a float <= 1.0 or an int >= 1, got {top_k!r}")
            if len(pruned) > top_k:
                estimate = {c: self.perf_model(**nargs, **kwargs, **c.all_kwargs()) for c in pruned}
                pruned = sorted(pruned, key=estimate.__getitem__)[:top_k]
        return pruned

    def compile_all(self, args, kwargs, configs: list[Config] | None = None) -> list[TileError | None]:
        """Compile every configuration into the disk cache, in parallel processes;
        per configuration, None or its compile error."""
        configs = self.configs if configs is None else configs
        target = self.kernel.target_for(list(args) + list(kwargs.values()))
        jobs = []
        for c in configs:
            if c.pre_hook is not None:
                # What it sets (a descriptor's block shape) is part of the specialization: it runs
                # before this config's compile, as before its launch (Triton compiles at the launch).
                c.pre_hook({**dict(zip(self.arg_names, args)), **kwargs, **c.all_kwargs()})
            jobs.append((self.kernel, [_meta_copy(a) for a in args],
                         {**{k: _meta_copy(v) for k, v in kwargs.items()}, **c.all_kwargs()}, target))
        # Those in the cache (or failing before the compiler, as a bad launch) are loaded here:
        # forking workers only to load entries cost seconds.
        errors = [_compile_one(*job, build=False) for job in jobs]
        todo = [i for i, e in enumerate(errors) if e is False]
        workers = min(self.workers or os.cpu_count() or 1, len(todo))
        if workers <= 1:
            built = [_compile_one(*jobs[i]) for i in todo]
        else:
            # fork: children inherit the jobs and the compiler already imported, and the kernel's
            # tree parsed here (each built the parser's tables otherwise); they touch no GPU.
            from ..frontend.parser import parse_function

            try:
                parse_function(self.kernel.fn)
            except TileError:
                pass  # (each worker reports it, and it is raised once)
            _JOBS[:] = [jobs[i] for i in todo]
            try:
                ctx = multiprocessing.get_context("fork")
                with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
                    built = list(pool.map(_compile_job, range(len(_JOBS))))
            finally:
                _JOBS.clear()
        for i, e in zip(todo, built):
            errors[i] = e
        return errors

    def _launch(self, grid, args, kwargs, config: Config):
        return self.kernel[grid](*args, **kwargs, **config.all_kwargs())

    def time_config(self, grid, args, kwargs, config: Config) -> float:
        """One config's time in ms, each launch between the hooks (Triton's `_bench`)."""
        nargs = {**dict(zip(self.arg_names, args)), **kwargs, **config.all_kwargs()}

        def call():
            if config.pre_hook:
                config.pre_hook(nargs)
            self.pre_hook(nargs)
            try:
                self._launch(grid, args, kwargs, config)
            except Exception as e:
                try:
                    self.post_hook(nargs, exception=e)
                finally:
                    raise
            self.post_hook(nargs, exception=None)

        if self._do_bench is not None:
            return _first_of(self._do_bench(call, quantiles=(0.5, 0.2, 0.8)))
        cuda = any(is_tensor(a) and a.is_cuda for a in list(args) + list(kwargs.values()))
        return do_bench(call, self.warmup, self.rep, cuda=cuda)

    def _tune(self, grid, args, kwargs, key: str) -> Config | None:
        """The best config for key: saved, the only one left by pruning, or timed. None for an
        ahead-of-time build, which only compiles them."""
        configs = self.prune_configs(self.nargs, kwargs)
        if len(configs) == 1:
            return configs[0]
        # A choice among these only, as Triton's disk cache keys it; none saved for configs that
        # early_config_prune made anew (the record holds indices into `configs`).
        indices = [self.configs.index(c) if c in self.configs else None for c in configs]
        if len(configs) < len(self.configs):
            key += ";configs=" + ",".join(map(str, indices))
        record = self.cache_results and None not in indices
        index = self._saved_choice(key) if record else None
        if index is not None:
            return self.configs[index]
        errors = self.compile_all(args, kwargs, configs)
        if all(errors):
            raise self._no_config_compiles(configs, errors)
        if read_env()[2]:
            # TILE_COMPILE_ONLY: every config is in the cache; launches that run nothing
            # time nothing, and a choice saved from them would stop the real search.
            return None
        timed, progress = {}, Progress(f"autotuning {self.kernel.name}", len(configs))
        for c, err in zip(configs, errors):
            timed[c] = math.inf if err else self.time_config(grid, args, kwargs, c)
            progress.step(timed[c])
        best = min(timed, key=timed.__getitem__)
        progress.done(best, timed[best])
        self.configs_timings = timed
        self.timings[key] = [timed.get(c, math.inf) for c in self.configs]
        # The trials accumulated into reset_to_zero's tensors: zero them for the real launch.
        self.pre_hook({**self.nargs, **kwargs, **best.all_kwargs()}, reset_only=True)
        if record:
            self._save(key, self.configs.index(best))
        return best

    def _no_config_compiles(self, configs, errors) -> TileError:
        """The error when no config compiles: one error reported once (at the user's line, as
        raised), not once per config; different errors each once, with the configs they hit."""
        by_text: dict = {}
        for c, e in zip(configs, errors):
            by_text.setdefault(str(e), (e, []))[1].append(c)
        if len(by_text) == 1:
            return errors[0]
        return TileError(f"no autotune config of {self.kernel.name} compiles:\n" + "\n".join(
            f"{text}\n  (config{'s' if len(cs) > 1 else ''} {', '.join(map(repr, cs))})"
            for text, (_, cs) in by_text.items()))

    def run(self, grid, args, kwargs):
        if fake_launch(args, kwargs):
            return None  # (tracing: nothing to time or run)
        tuned = {k for c in self.configs for k in c.all_kwargs()}
        given = sorted(tuned & (set(kwargs) | set(self.arg_names[: len(args)])))
        if given:
            raise LaunchError(f"{self.kernel.name}: {', '.join(given)} set by the autotune configs cannot also be "
                              "passed at the launch")
        self.nargs = dict(zip(self.arg_names, args))
        try:
            if len(self.configs) == 1:
                config = self.configs[0]
            else:
                key = self.key_of(args, kwargs)
                config = self.cache.get(key)
                if config is None:
                    config = self._tune(grid, args, kwargs, key)
                    if config is None:
                        return None
                    self.cache[key] = config
            if config.pre_hook is not None:
                config.pre_hook({**self.nargs, **kwargs, **config.all_kwargs()})
            return self._launch(grid, args, kwargs, config)
        finally:
            self.nargs = None

    def best_config(self, *args, **kwargs) -> Config | None:
        """The config chosen for these arguments' key, if one was."""
        return self.configs[0] if len(self.configs) == 1 else self.cache.get(self.key_of(args, kwargs))


def autotune(configs: list[Config], key: list[str], prune_configs_by: dict | None = None,
             reset_to_zero: list[str] | None = None, restore_value: list[str] | None = None, pre_hook=None,
             post_hook=None, warmup: float | None = None, rep: float | None = None, use_cuda_graph: bool = False,
             do_bench=None, cache_results: bool = True, workers: int | None = None):
    """Decorator over a `@tile.kernel`, as `triton.autotune`; see the module docstring.
    `warmup`/`rep` are the ms each config runs for (25/100); `do_bench(fn, quantiles)`
    replaces the measure; `cache_results` keeps choices on disk; `workers` compile processes."""

    def wrap(kernel):
        return Autotuner(kernel, configs, key, prune_configs_by, reset_to_zero, restore_value, pre_hook, post_hook,
                         warmup, rep, use_cuda_graph, do_bench, cache_results, workers)

    return wrap


class Heuristics:
    """`triton.heuristics`: launch parameters computed from the other arguments. Each entry of
    `values` maps a parameter (a constexpr, or a launch option as `num_warps`) to a function of
    the dict of the launch's arguments (and of the parameters earlier entries set); its result
    is passed to the kernel, or to the autotuner, it decorates. Everything else is the wrapped
    kernel's, so an autotuner above it sees its parameters."""

    def __init__(self, kernel, values: dict):
        if not isinstance(values, dict) or not all(callable(f) for f in values.values()):
            raise TileError("tile.heuristics takes a dict of parameter name -> function of the arguments' dict")
        inner = kernel.kernel if isinstance(kernel, Autotuner) else kernel
        names = [p.name for p in inner.params]
        unknown = [k for k in values if k not in names and k not in DEFAULT_OPTIONS]
        if unknown:
            raise TileError(f"heuristics name unknown parameter(s) {unknown} of {inner.name}")
        self.kernel, self.values, self.arg_names, self.name = kernel, dict(values), names, inner.name

    def __getattr__(self, name):
        return getattr(self.kernel, name)

    def __getitem__(self, grid):
        return generic_launch(self.run, grid)

    def with_values(self, args, kwargs) -> dict:
        """kwargs with each heuristic's value set. As in Triton, one the launch passes by keyword
        is seen by the heuristics and replaced by its value (`{"FLAG": lambda a: bool(a["FLAG"])}`);
        passed by position it would be passed twice."""
        given = sorted(set(self.values) & set(self.arg_names[: len(args)]))
        if given:
            raise LaunchError(f"{self.name}: {', '.join(given)} set by tile.heuristics cannot also be "
                              "passed by position")
        kwargs = dict(kwargs)
        for name, fn in self.values.items():
            kwargs[name] = fn({**dict(zip(self.arg_names, args)), **kwargs})
        return kwargs

    def run(self, grid, args, kwargs):
        return self.kernel[grid](*args, **self.with_values(args, kwargs))

    def compiled(self, args, kwargs, target: str | None = None, build: bool = True):
        return self.kernel.compiled(args, self.with_values(args, kwargs), target, build)

    def compile(self, *args, target: str | None = None, **kwargs):
        return self.compiled(args, kwargs, target)


def heuristics(values: dict):
    """Decorator over a `@tile.kernel` (or an autotuner), as `triton.heuristics`: see `Heuristics`."""

    def wrap(kernel):
        return Heuristics(kernel, values)

    return wrap
