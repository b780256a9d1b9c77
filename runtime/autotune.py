"""`tile.autotune`: pick the fastest of several launch configurations, once per key.

    @tile.autotune(configs=[tile.Config(BLOCK=128, num_warps=4), tile.Config(BLOCK=256, num_warps=8)],
                   key=["n_cols"])
    @tile.kernel
    def kernel(x, out, n_cols, BLOCK: tile.constexpr): ...

    kernel[grid](x, out, n_cols)      # BLOCK and num_warps come from the chosen config

The first launch with a new key compiles every configuration in parallel
processes (into the disk cache), times each on the real arguments (CUDA events
on a GPU, the wall clock on the CPU), and keeps the winner in memory and on
disk (`<TILE_CACHE_DIR>/autotune/`), so that later processes skip the search.
An ahead-of-time build (`TILE_COMPILE_ONLY`) compiles every config and saves no
choice: its launches run nothing to time.
Like Triton's autotuner, the kernel runs several times on the caller's
arguments while tuning: a kernel that updates its inputs in place sees that.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import inspect
import json
import multiprocessing
import os
import statistics
import time
import warnings

from ..frontend.errors import LaunchError, TileError
from . import cache
from .launch_binder import read_env


class Config:
    """One candidate: constexpr values and launch options (num_warps, num_stages)."""

    def __init__(self, **kwargs):
        self.kwargs = kwargs

    def __repr__(self):
        return "Config(" + ", ".join(f"{k}={v!r}" for k, v in sorted(self.kwargs.items())) + ")"


def _meta_copy(v):
    """Arguments for a compile-only launch in another process: tensors become 'meta' tensors of the same layout."""
    if hasattr(v, "data_ptr"):
        import torch

        return torch.empty_strided(tuple(v.shape), tuple(v.stride()), dtype=v.dtype, device="meta")
    return v


_JOBS: list = []  # set before the worker processes fork, so nothing needs pickling


def _compile_one(kernel, args, kwargs, target) -> str | None:
    """None, or why this configuration does not compile (it is then left out, as in Triton)."""
    try:
        kernel.compile(*args, target=target, **kwargs)
        return None
    except TileError as e:
        return str(e)


def _compile_job(i: int) -> str | None:
    return _compile_one(*_JOBS[i])


class Autotuner:
    def __init__(self, kernel, configs: list[Config], key: list[str], warmup: int = 3, rep: int = 10, workers: int | None = None):
        if not configs:
            raise TileError("autotune needs at least one Config")
        names = [p.name for p in kernel.params]
        unknown = [k for k in key if k not in names]
        if unknown:
            raise TileError(f"autotune key names unknown parameter(s) {unknown} of {kernel.name}")
        self.kernel, self.configs, self.key = kernel, configs, key
        self.warmup, self.rep, self.workers = warmup, rep, workers
        self.best: dict = {}
        self.timings: dict = {}

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(grid, args, kwargs)

    # ---- the key and its on-disk record ---------------------------------------------
    def key_of(self, args, kwargs) -> str:
        bound = dict(zip([p.name for p in self.kernel.params], args), **kwargs)
        parts = []
        for k in self.key:
            v = bound.get(k)
            parts.append(f"{k}={tuple(v.shape)}:{v.dtype}" if hasattr(v, "data_ptr") else f"{k}={v!r}")
        return ";".join(parts) + f";target={self.kernel.target_for(list(bound.values()))}"

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
            warnings.warn(f"tile: cannot save the autotune choice to {path} ({e})", stacklevel=2)

    # ---- tuning ------------------------------------------------------------------------
    def compile_all(self, args, kwargs) -> list[str | None]:
        """Compile every configuration into the disk cache, in parallel processes;
        per configuration, None or its compile error."""
        target = self.kernel.target_for(list(args) + list(kwargs.values()))
        meta_args = [_meta_copy(a) for a in args]
        meta_kwargs = {k: _meta_copy(v) for k, v in kwargs.items()}
        workers = self.workers or min(len(self.configs), os.cpu_count() or 1)
        if workers <= 1:
            return [_compile_one(self.kernel, meta_args, {**meta_kwargs, **c.kwargs}, target) for c in self.configs]
        # fork: children inherit the jobs and the compiler already imported; they touch no GPU.
        _JOBS[:] = [(self.kernel, meta_args, {**meta_kwargs, **c.kwargs}, target) for c in self.configs]
        try:
            ctx = multiprocessing.get_context("fork")
            with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
                return list(pool.map(_compile_job, range(len(_JOBS))))
        finally:
            _JOBS.clear()

    def time_config(self, grid, args, kwargs, config: Config) -> float:
        launch = self.kernel[grid]
        call = lambda: launch(*args, **kwargs, **config.kwargs)  # noqa: E731
        cuda = any(hasattr(a, "is_cuda") and a.is_cuda for a in list(args) + list(kwargs.values()))
        for _ in range(self.warmup):
            call()
        times = []
        if cuda:
            import torch

            for _ in range(self.rep):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                call()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
        else:
            for _ in range(self.rep):
                t0 = time.perf_counter()
                call()
                times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)

    def run(self, grid, args, kwargs):
        tuned = {k for c in self.configs for k in c.kwargs}
        names = [p.name for p in self.kernel.params]
        given = sorted(tuned & (set(kwargs) | set(names[: len(args)])))
        if given:
            raise LaunchError(f"{self.kernel.name}: {', '.join(given)} set by the autotune configs cannot also be "
                              "passed at the launch")
        key = self.key_of(args, kwargs)
        index = self.best.get(key)
        if index is None:
            index = self._saved_choice(key)
            if index is None:
                errors = self.compile_all(args, kwargs)
                if all(errors):
                    raise TileError(f"no autotune config of {self.kernel.name} compiles: "
                                    + "; ".join(f"{c}: {e}" for c, e in zip(self.configs, errors)))
                if read_env()[2]:
                    # TILE_COMPILE_ONLY: every config is in the cache; launches that run nothing
                    # time nothing, and a choice saved from them would stop the real search.
                    return None
                self.timings[key] = [float("inf") if err else self.time_config(grid, args, kwargs, c)
                                     for c, err in zip(self.configs, errors)]
                index = min(range(len(self.configs)), key=self.timings[key].__getitem__)
                self._save(key, index)
            self.best[key] = index
        return self.kernel[grid](*args, **kwargs, **self.configs[index].kwargs)

    def best_config(self, *args, **kwargs) -> Config | None:
        index = self.best.get(self.key_of(args, kwargs))
        return None if index is None else self.configs[index]


def autotune(configs: list[Config], key: list[str], warmup: int = 3, rep: int = 10, workers: int | None = None):
    """Decorator over a `@tile.kernel`; see the module docstring."""

    def wrap(kernel):
        return Autotuner(kernel, configs, key, warmup, rep, workers)

    return wrap
