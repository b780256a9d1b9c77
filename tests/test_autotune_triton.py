"""tile.autotune with triton.autotune's surface: `Config({...}, num_warps=, num_stages=, pre_hook=)`,
`prune_configs_by`, `reset_to_zero`, `restore_value`, `pre_hook`/`post_hook`, `do_bench`,
`warmup`/`rep`; the key holding every tensor's dtype; one compile error reported once."""

import re

import pytest
import torch

import tile
from tile.runtime.autotune import do_bench


@tile.kernel
def column_sum_kernel(x, dw, rows, cols, stride_row, BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr):
    """dw[j] += sum of x[i, j] over this program's rows, as a weight gradient is accumulated."""
    row_block = tile.program_id(0)
    r = row_block * BLOCK_M + tile.arange(0, BLOCK_M)
    c = tile.arange(0, BLOCK_N)
    ptrs = x + r[:, None] * stride_row + c[None, :]
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    part = tile.sum(tile.load(ptrs, mask=mask, other=0.0), axis=0)
    tile.atomic_add(dw + c, part, mask=c < cols)


@tile.kernel
def add_one_kernel(x, n, BLOCK: tile.constexpr):
    """x += 1 in place, walking with a pointer increment."""
    offs = tile.arange(0, BLOCK)
    p = x + tile.program_id(0) * BLOCK
    mask = tile.program_id(0) * BLOCK + offs < n
    tile.store(p + offs, tile.load(p + offs, mask=mask) + 1.0, mask=mask)


@tile.kernel
def scale_kernel(x, out, n, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    tile.store(out + offs, tile.load(x + offs, mask=mask) * 3, mask=mask)


def _rows_grid(meta):
    return (tile.cdiv(meta["rows"], meta["BLOCK_M"]),)


def _grid(meta):
    return (tile.cdiv(meta["n"], meta["BLOCK"]),)


ROW_CONFIGS = [tile.Config({"BLOCK_M": m, "BLOCK_N": 32}, num_warps=w, num_stages=2)
               for m, w in ((8, 2), (16, 4), (32, 4))]


# ---- 1. Config ----------------------------------------------------------------------------
def test_config_forms():
    positional = tile.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=3, pre_hook=None)
    assert positional.kwargs == {"BLOCK_M": 128, "BLOCK_N": 64}
    assert (positional.num_warps, positional.num_stages, positional.pre_hook) == (8, 3, None)
    assert positional.all_kwargs() == {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 3}
    keywords = tile.Config(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=3)
    assert keywords == positional and hash(keywords) == hash(positional)
    assert tile.Config(kwargs={"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=3) == positional
    assert tile.Config({"BLOCK_M": 128}) != tile.Config({"BLOCK_M": 128}, num_warps=8)
    default = tile.Config({"B": 1})
    assert (default.num_warps, default.num_stages) == (4, 2)  # the kernel defaults
    assert "BLOCK_M: 128" in str(positional) and "num_warps: 8" in str(positional)
    with pytest.raises(tile.TileError, match="num_ctas=2 is not supported"):
        tile.Config({"B": 1}, num_ctas=2)
    with pytest.raises(tile.TileError, match="takes a dict"):
        tile.Config([("B", 1)])
    with pytest.raises(tile.TileError, match=r"sets \['B'\] both"):
        tile.Config({"B": 1}, B=2)


def test_positional_configs_run(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    tuner = tile.autotune([tile.Config({"BLOCK": 64}, num_warps=2, num_stages=1),
                           tile.Config({"BLOCK": 256}, num_warps=4, num_stages=3)], key=["n"], warmup=1, rep=1)(scale_kernel)
    x = torch.randn(1000)  # not a multiple of either block
    out = torch.empty_like(x)
    tuner[_grid](x, out, x.numel())
    torch.testing.assert_close(out, 3 * x)
    assert tuner.best_config(x, out, x.numel()) in tuner.configs
    with pytest.raises(tile.LaunchError, match="num_warps set by the autotune configs"):
        tuner[_grid](x, out, x.numel(), num_warps=4)


def test_config_options_reach_the_gpu_build(gpu_target, tmp_path, monkeypatch):
    """Each config's num_warps is its block size in the PTX (compile only, sm_90a)."""
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    gpu_target()
    configs = [tile.Config({"BLOCK": 128}, num_warps=2), tile.Config({"BLOCK": 256}, num_warps=8, num_stages=3)]
    x = torch.empty(1000, device="meta")
    tile.autotune(configs, key=["n"], workers=1)(scale_kernel)[_grid](x, torch.empty_like(x), 1000)
    for c in configs:
        ptx = scale_kernel.compile(x, torch.empty_like(x), 1000, **c.all_kwargs()).asm["ptx"]
        assert re.search(rf"\.maxntid {c.num_warps * 32}\b", ptx), c


# ---- 2. reset_to_zero, restore_value, hooks, pruning, do_bench ---------------------------
def test_reset_to_zero_first_launch_is_right(tmp_path, monkeypatch):
    """An atomic_add into a weight gradient summed every tuning trial into the first
    launch's output: with reset_to_zero it is zeroed before each trial and the real launch."""
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    tuner = tile.autotune(ROW_CONFIGS, key=["rows", "cols"], reset_to_zero=["dw"], warmup=1, rep=1,
                          workers=2)(column_sum_kernel)
    base = torch.randn(45, 40)
    x = base[:, 3:30]  # a strided view, odd sizes
    dw = torch.zeros(27)
    tuner[_rows_grid](x, dw, 45, 27, x.stride(0))
    torch.testing.assert_close(dw, x.sum(0), rtol=1e-5, atol=1e-5)
    dw2 = torch.zeros(27)
    tuner[_rows_grid](x, dw2, 45, 27, x.stride(0))  # the chosen config, no trials
    torch.testing.assert_close(dw2, x.sum(0), rtol=1e-5, atol=1e-5)


def test_reset_to_zero_compiles_for_the_gpu(gpu_target, tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    gpu_target()
    x, dw = torch.empty(45, 27, device="meta"), torch.empty(27, device="meta")
    tuner = tile.autotune(ROW_CONFIGS, key=["rows"], reset_to_zero=["dw"], workers=1)(column_sum_kernel)
    tuner[_rows_grid](x, dw, 45, 27, 27)
    ptx = column_sum_kernel.compile(x, dw, 45, 27, 27, **ROW_CONFIGS[0].all_kwargs()).asm["ptx"]
    assert re.search(r"\b(atom|red)(\.\w+)*\.global\.add", ptx)


def test_restore_value_and_hooks(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    seen = []
    configs = [tile.Config({"BLOCK": 32}, pre_hook=lambda nargs: seen.append(("config", nargs["BLOCK"]))),
               tile.Config({"BLOCK": 128})]
    tuner = tile.autotune(configs, key=["n"], restore_value=["x"], warmup=1, rep=1)(add_one_kernel)
    x = torch.randn(300)
    want = x + 1
    tuner[_grid](x, 300)
    torch.testing.assert_close(x, want)  # the trials' updates were undone; only the real launch's stays
    assert ("config", 32) in seen

    calls = {"pre": 0, "post": 0, "reset_only": 0}

    def pre(nargs, reset_only=False):
        calls["reset_only" if reset_only else "pre"] += 1
        assert nargs["n"] == 300 and "BLOCK" in nargs and "num_warps" in nargs

    def post(nargs, exception):
        assert exception is None
        calls["post"] += 1

    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "again"))  # (no saved choice)
    hooked = tile.autotune(configs, key=["n"], pre_hook=pre, post_hook=post, warmup=1, rep=1)(add_one_kernel)
    hooked[_grid](torch.randn(300), 300)
    assert calls["pre"] == calls["post"] >= 2 and calls["reset_only"] == 1


def test_prune_configs_by(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    configs = [tile.Config({"BLOCK": b}) for b in (16, 32, 64, 128, 1024)]
    pruned_args = []

    def early(configs, nargs, **kwargs):
        pruned_args.append(nargs["n"])
        return [c for c in configs if c.kwargs["BLOCK"] <= nargs["n"]]

    def model(x, out, n, BLOCK, num_warps, num_stages):
        return abs(BLOCK - 50)  # 64 first, then 32

    tuner = tile.autotune(configs, key=["n"], workers=1, warmup=1, rep=1,
                          prune_configs_by={"early_config_prune": early, "perf_model": model, "top_k": 2})(scale_kernel)
    timed = []
    real = tuner.time_config
    monkeypatch.setattr(tuner, "time_config", lambda *a: timed.append(a[-1].kwargs["BLOCK"]) or real(*a))
    x = torch.randn(200)
    out = torch.empty_like(x)
    tuner[_grid](x, out, 200)
    torch.testing.assert_close(out, 3 * x)
    assert pruned_args == [200] and sorted(timed) == [32, 64]
    assert tuner.best_config(x, out, 200).kwargs["BLOCK"] in (32, 64)
    timed.clear()
    one = tile.autotune(configs, key=["n"], prune_configs_by={"perf_model": model, "top_k": 0.2})(scale_kernel)
    monkeypatch.setattr(one, "time_config", lambda *a: timed.append(a[-1]))
    one[_grid](x, out, 200)  # one config left: launched without timing
    torch.testing.assert_close(out, 3 * x)
    assert timed == [] and one.best_config(x, out, 200).kwargs["BLOCK"] == 64
    # Pruning may make configs anew (Triton's matmul lowers num_stages so): tuned, not saved.
    remade = tile.autotune(configs, key=["n"], workers=1, warmup=1, rep=1, prune_configs_by={
        "early_config_prune": lambda cs, nargs: [tile.Config(c.kwargs, num_stages=1) for c in cs[:2]]})(scale_kernel)
    saved = remade._load_record()
    remade[_grid](x, out, 200)
    torch.testing.assert_close(out, 3 * x)
    assert remade.best_config(x, out, 200).num_stages == 1
    assert remade._load_record() == saved
    with pytest.raises(tile.TileError, match="early_config_prune left no config"):
        tile.autotune(configs, key=["n"], prune_configs_by={"early_config_prune": lambda c, a: []})(scale_kernel)[_grid](
            x, out, 7)


def test_do_bench_and_its_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    times = iter([3.0, 1.0, 2.0])
    configs = [tile.Config({"BLOCK": b}) for b in (32, 64, 128)]

    def bench(fn, quantiles):
        fn()
        t = next(times)
        return [t, t * 0.9, t * 1.1]

    tuner = tile.autotune(configs, key=["n"], do_bench=bench, workers=1)(scale_kernel)
    x = torch.randn(100)
    out = torch.empty_like(x)
    tuner[_grid](x, out, 100)
    torch.testing.assert_close(out, 3 * x)
    assert tuner.best_config(x, out, 100).kwargs["BLOCK"] == 64
    runs = []
    assert do_bench(lambda: runs.append(1), warmup=0, rep=0) >= 0
    assert len(runs) == 1 + 5 + 1 + 1  # first call, estimate, at least one warmup and one timed run
    q = do_bench(lambda: None, warmup=1, rep=2, quantiles=(0.5, 0.2, 0.8))
    assert len(q) == 3 and q[1] <= q[0] <= q[2]
    with pytest.raises(tile.TileError, match="reset_to_zero names unknown"):
        tile.autotune(configs, key=["n"], reset_to_zero=["dw"])(scale_kernel)
    with pytest.raises(tile.TileError, match="unknown field"):
        tile.autotune(configs, key=["n"], prune_configs_by={"topk": 1})(scale_kernel)


# ---- 3. the key holds every tensor's dtype -----------------------------------------------
def test_key_holds_tensor_dtypes(tmp_path, monkeypatch):
    """An fp16 launch reused the fp32 winner: the key had only the key= arguments."""
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    configs = [tile.Config({"BLOCK": 64}), tile.Config({"BLOCK": 256})]
    tuner = tile.autotune(configs, key=["n"], warmup=1, rep=1, workers=1)(scale_kernel)
    timed = []
    real = tuner.time_config
    monkeypatch.setattr(tuner, "time_config", lambda *a: timed.append(a[1][0].dtype) or real(*a))
    for dtype in (torch.float32, torch.float16, torch.float32):
        x = torch.randn(300).to(dtype)
        out = torch.empty_like(x)
        tuner[_grid](x, out, 300)
        torch.testing.assert_close(out, 3 * x)
    assert timed == [torch.float32] * 2 + [torch.float16] * 2  # tuned once per dtype
    assert tuner.key_of((torch.zeros(3), torch.zeros(3, dtype=torch.float16), 3), {}) != \
        tuner.key_of((torch.zeros(3), torch.zeros(3), 3), {})


def test_key_dtypes_compile_for_the_gpu(gpu_target, tmp_path, monkeypatch):
    """Ahead of time, each dtype's launch compiles every config (two dtypes: twice as many builds)."""
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    gpu_target()
    tuner = tile.autotune([tile.Config({"BLOCK": 64}), tile.Config({"BLOCK": 256})], key=["n"], workers=1)(scale_kernel)
    for dtype in (torch.float32, torch.float16):
        x = torch.empty(300, dtype=dtype, device="meta")
        tuner[_grid](x, torch.empty_like(x), 300)
    assert len([p for p in tmp_path.iterdir() if p.name not in ("autotune", "parser")]) == 4


# ---- 5. a compile error once ------------------------------------------------------------
@tile.kernel
def broken_kernel(x, out, n, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    tile.store(out + offs, tile.load(x + offs, mask=offs < n) * no_such_name, mask=offs < n)  # noqa: F821


@pytest.mark.parametrize("workers", [1, 2])
def test_one_compile_error_reported_once(workers, tmp_path, monkeypatch):
    """Each of the 6 configs repeated the same error: it is raised once, as itself, at its line."""
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    configs = [tile.Config({"BLOCK": b}, num_warps=w) for b in (32, 64, 128) for w in (2, 4)]
    tuner = tile.autotune(configs, key=["n"], workers=workers)(broken_kernel)
    x = torch.randn(100)
    with pytest.raises(tile.CompilationError) as e:
        tuner[_grid](x, torch.empty_like(x), 100)
    text = str(e.value)
    assert text.count("no_such_name") == 2  # the message and the source line under it, once each
    assert e.value.line == broken_kernel.fn.__code__.co_firstlineno + 3


def test_different_compile_errors_each_once(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    configs = [tile.Config({"BLOCK": 100}), tile.Config({"BLOCK": 100}, num_warps=2), tile.Config({"BLOCK": 48})]
    x = torch.randn(100)
    with pytest.raises(tile.TileError) as e:
        tile.autotune(configs, key=["n"], workers=1)(scale_kernel)[_grid](x, torch.empty_like(x), 100)
    text = str(e.value)
    assert text.count("power of two") == 2 and "configs Config({'BLOCK': 100}" in text


# ---- 4. reloading configs already in the disk cache ---------------------------------------
def test_reload_of_cached_configs_is_fast(tmp_path, monkeypatch):
    """Every config already compiled (a later process): each used to be loaded in a forked
    worker and JIT-compiled for the CPU, 13-36 s for 16-48 configs. Now each is a cache read
    here, with no worker and no JIT until a config runs."""
    import multiprocessing
    import time

    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    configs = [tile.Config({"BLOCK": b}, num_warps=w) for b in (32, 64, 128, 256) for w in (1, 2, 4, 8)]
    x = torch.randn(1000)
    args = (x, torch.empty_like(x), 1000)
    # (new kernel objects: none has launchers in memory, which another test's cache dir filled)
    assert not any(tile.autotune(configs, key=["n"], workers=2)(tile.kernel(scale_kernel.fn)).compile_all(args, {}))
    fresh = tile.kernel(scale_kernel.fn)  # as a new process sees it: nothing in memory
    monkeypatch.setattr(multiprocessing, "get_context", lambda *a: pytest.fail("forked workers for cached configs"))
    t0 = time.perf_counter()
    errors = tile.autotune(configs, key=["n"], workers=2)(fresh).compile_all(args, {})
    seconds = time.perf_counter() - t0
    assert errors == [None] * len(configs)
    assert len(fresh._launchers) == len(configs)
    assert all(launcher._engine is None for launcher in fresh._launchers.values())  # no JIT yet
    assert seconds < 3, f"{len(configs)} cached configs took {seconds:.2f} s to load"


def test_compile_errors_are_kept_in_the_cache(tmp_path, monkeypatch):
    """Configs that do not compile (past the shared memory, a block arange refuses) were
    compiled again by every process, seconds each: their error is kept beside the entry and
    raised again without compiling, at the kernel's line where it lies now."""
    import importlib.util

    from tile.runtime import cache

    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "cache"))
    source = ("import tile\n\n\n@tile.kernel\ndef odd_kernel(x, n, BLOCK: tile.constexpr):\n"
              "    o = tile.arange(0, BLOCK)\n    tile.store(x + o, 1.0, mask=o < n)\n")

    def load(name, text):
        (tmp_path / f"{name}.py").write_text(text)
        spec = importlib.util.spec_from_file_location(name, tmp_path / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.odd_kernel

    x = torch.zeros(8)
    configs = [tile.Config({"BLOCK": 12}), tile.Config({"BLOCK": 24})]
    with pytest.raises(tile.TileError, match="power of two, got 24"):  # (each config its own message)
        tile.autotune(configs, key=["n"], workers=1)(load("first", source))[(1,)](x, 8)
    with pytest.raises(tile.CompilationError, match="power of two, got 12") as first:
        load("first", source)[(1,)](x, 8, BLOCK=12)
    assert first.value.line == 6
    monkeypatch.setattr(cache, "_compiler", lambda *a: pytest.fail("compiled again"))
    moved = load("moved", "\n\n\n" + source)  # the same kernel, three lines lower in another file
    with pytest.raises(tile.CompilationError, match="power of two") as again:
        moved[(1,)](x, 8, BLOCK=12)
    assert (again.value.filename, again.value.line) == (str(tmp_path / "moved.py"), 9)
    assert str(again.value).split("\n")[1:] == str(first.value).split("\n")[1:]  # the line, and the caret under it
    errors = tile.autotune(configs, key=["n"], workers=2)(moved).compile_all((x, 8), {})
    assert [e.line for e in errors] == [9, 9]


def test_compile_errors_in_helpers_are_kept_in_the_cache(tmp_path, monkeypatch):
    """A config that fails in a helper the kernel calls (tutorial 06's past the shared memory,
    at its inner loop's line) is kept too: a GPU machine with the cache built elsewhere, and no
    parser, found it missing and tried to compile it."""
    import importlib.util

    from tile.runtime import cache

    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "cache"))
    source = ("import tile\n\n\n@tile.jit\ndef fill(x, n, BLOCK: tile.constexpr):\n"
              "    o = tile.arange(0, BLOCK)\n    tile.store(x + o, 1.0, mask=o < n)\n\n\n"
              "@tile.kernel\ndef outer_kernel(x, n, BLOCK: tile.constexpr):\n    fill(x, n, BLOCK)\n")
    (tmp_path / "helper_mod.py").write_text(source)
    spec = importlib.util.spec_from_file_location("helper_mod", tmp_path / "helper_mod.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = torch.zeros(8)
    with pytest.raises(tile.CompilationError, match="power of two, got 12") as first:
        module.outer_kernel[(1,)](x, 8, BLOCK=12)
    assert first.value.line == 6
    monkeypatch.setattr(cache, "_compiler", lambda *a: pytest.fail("compiled again"))
    fresh = tile.kernel(module.outer_kernel.fn)  # as a new process sees it: nothing in memory
    with pytest.raises(tile.CompilationError, match="power of two, got 12") as again:
        fresh[(1,)](x, 8, BLOCK=12)
    assert (again.value.filename, again.value.line) == (str(tmp_path / "helper_mod.py"), 6)
