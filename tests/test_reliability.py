"""Reliability: float // and % agree with each other (Python's and torch's), ill-formed
stores and shapes are compile errors at their line, and messages name what they check."""

import pytest
import torch

import tile


@tile.kernel
def division_kernel(x, y, out, n, BLOCK: tile.constexpr):
    o = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    m = o < n
    a, b = tile.load(x + o, mask=m, other=1.0), tile.load(y + o, mask=m, other=1.0)
    tile.store(out + o, a // b, mask=m)
    tile.store(out + n + o, a % b, mask=m)
    tile.store(out + 2 * n + o, (a // b) * b + a % b, mask=m)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_float_remainder_takes_the_divisor_sign(dtype, gpu_target):
    """Float % was C's fmod while // floored, so (a // b) * b + a % b != a for negative
    operands (-5.5 % 2 gave -1.5). % is now Python's and torch's: the divisor's sign."""
    x = torch.tensor([-5.5, 5.5, -5.5, 5.5, -4.0, 7.25, -0.75, 3.0, 0.0, -1.0, 9.5], dtype=dtype)
    y = torch.tensor([2.0, -2.0, -2.0, 2.0, 2.0, -0.5, 0.25, float("inf"), -3.0, float("inf"), 4.0], dtype=dtype)
    n = x.numel()
    out = torch.zeros(3 * n, dtype=dtype)
    division_kernel[(2,)](x, y, out, n, BLOCK=8)
    torch.testing.assert_close(out[:n], x // y, rtol=0, atol=0)
    torch.testing.assert_close(out[n:2 * n], x % y, rtol=0, atol=0)
    assert out[n].item() == 0.5
    finite = y.isfinite()
    assert torch.equal(out[2 * n:][finite], x[finite])
    g = torch.Generator().manual_seed(0)
    r = (torch.randn(1000, generator=g, dtype=torch.float64) * 10).to(dtype)
    s = ((torch.rand(1000, generator=g, dtype=torch.float64) * 4 + 0.25) * torch.randn(1000, generator=g).sign()).to(dtype)
    out = torch.zeros(3000, dtype=dtype)
    division_kernel[(tile.cdiv(1000, 256),)](r, s, out, 1000, BLOCK=256)
    torch.testing.assert_close(out[1000:2000], r % s, rtol=0, atol=0)
    torch.testing.assert_close(out[2000:], r, rtol=4 * torch.finfo(dtype).eps, atol=4 * torch.finfo(dtype).eps)
    gpu_target()
    ptx = division_kernel.compile(r.to("meta"), s.to("meta"), out.to("meta"), 1000, BLOCK=256).asm["ptx"]
    assert "cvt.rzi" in ptx or "cvt.rmi" in ptx  # (fmod's truncated quotient)


def test_compile_time_remainder_is_the_run_time_one():
    """A float % folded at compile time (constexpr operands) floors as the run-time one."""
    @tile.kernel
    def folded_kernel(out, A: tile.constexpr, B: tile.constexpr):
        tile.store(out + tile.arange(0, 2), tile.full((2,), A % B, tile.float32) + tile.arange(0, 2) * (A // B))

    out = torch.zeros(2)
    folded_kernel[(1,)](out, A=-5.5, B=2.0)
    assert out.tolist() == [0.5, 0.5 - 3.0]


@pytest.mark.parametrize("body, message", [
    ("tile.store(out, tile.load(x + o))", r"store's value of shape \[16\] given for a scalar pointer"),
    ("tile.store(out + o, tile.load(x + o[:, None] * 16 + o[None, :]))",
     r"store's value of shape \[16, 16\] does not broadcast to the pointer's shape \[16\]"),
    ("tile.store(out + o[:, None], tile.load(x + o[:, None] * 16 + o[None, :]))",
     r"store's value of shape \[16, 16\] does not broadcast to the pointer's shape \[16, 1\]"),
    ("tile.store(out + o, tile.load(x + o), mask=o[:, None] < o[None, :])",
     r"mask of shape \[16, 16\] does not broadcast to the pointer's shape \[16\]"),
    ("tile.store(out + tile.arange(0, 1), tile.load(x + o), mask=o < 3,)", r"mask of shape \[16\] does not broadcast"),
    ("tile.load(x + tile.arange(0, 1), mask=o < 3)", r"mask of shape \[16\] does not broadcast to the pointer's shape \[1\]"),
    ("tile.atomic_add(out, tile.load(x + o))", r"atomic_add's value of shape \[16\] given for a scalar pointer"),
    ("tile.atomic_max(out + o, tile.load(x + o[:, None] * 16 + o[None, :]), mask=o < 5)",
     r"atomic_max's value of shape \[16, 16\] does not broadcast"),
    ("tile.atomic_xchg(out + 1, tile.load(x + o))", r"atomic_xchg's value of shape \[16\] given for a scalar"),
    ("tile.atomic_cas(out, 0.0, tile.load(x + o))", r"atomic_cas's val of shape \[16\] given for a scalar"),
    ("tile.broadcast_to(tile.load(x + o), (1,))", r"cannot broadcast a tile of shape \[16\] to \[1\]"),
])
def test_a_value_must_broadcast_to_the_pointer(tmp_path, body, message):
    """A [16] value stored through a scalar pointer, or a [B, B] one through a [B] pointer,
    compiled (the last write won on the CPU; a race on a GPU). As Triton, the value (and the
    mask) must broadcast to the pointer's shape, never widen it: an error at the line."""
    _expect_error(tmp_path, body, message)


def _expect_error(tmp_path, body, message, arguments=(torch.zeros(256), torch.zeros(256))):
    """`body` at line 7 of a kernel `bad_kernel(x, out)` in a file of its own raises
    CompilationError matching `message` at that line."""
    import importlib.util
    src = tmp_path / "bad_kernel.py"
    src.write_text(f"""import tile


@tile.kernel
def bad_kernel(x, out):
    o = tile.arange(0, 16)
    {body}
""")
    spec = importlib.util.spec_from_file_location(src.stem, src)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(tile.CompilationError, match=rf"bad_kernel.py:7:\d+: .*{message}"):
        module.bad_kernel[(1,)](*arguments)


@tile.kernel
def broadcast_store_kernel(x, out, counts, n, B: tile.constexpr):
    r = tile.arange(0, B)
    rows = tile.load(x + r[:, None] * n + r[None, :], mask=(r[:, None] < n) & (r[None, :] < n), other=0.0)
    p = out + r[:, None] * n + r[None, :]
    tile.store(p, tile.sum(rows, axis=1)[:, None], mask=(r[:, None] < n) & (r[None, :] < n))  # [B, 1] to [B, B]
    tile.store(out + n * n + r, 2.0, mask=r < n,)  # a scalar to [B]
    tile.atomic_add(counts + r, 1, mask=r < n)
    tile.atomic_add(counts + n, tile.sum(tile.where(r < n, 1, 0), axis=0))


def test_values_that_broadcast_still_store(gpu_target):
    n = 5
    x, out, counts = torch.randn(n, n), torch.zeros(n * n + n), torch.zeros(n + 1, dtype=torch.int32)
    broadcast_store_kernel[(1,)](x, out, counts, n, B=8)
    torch.testing.assert_close(out[:n * n].view(n, n), x.sum(1, keepdim=True).expand(n, n))
    assert out[n * n:].tolist() == [2.0] * n and counts.tolist() == [1] * n + [n]
    gpu_target()
    broadcast_store_kernel.compile(x.to("meta"), out.to("meta"), counts.to("meta"), n, B=8)


@pytest.mark.parametrize("dims", ["(1, 2)", "(0, 2)", "(-3, 0)", "(2, 3)", "(0,)", "(0, 1, 0)"])
def test_permute_dims_must_be_a_permutation(tmp_path, dims):
    """permute(x2d, (1, 2)) took its dims modulo the rank (a transpose)."""
    _expect_error(tmp_path, f"tile.permute(tile.load(x + o[:, None] * 16 + o[None, :]), {dims})",
                  r"permute's dims .* are not a permutation of the 2 dims of a tile of shape \[16, 16\]")


@tile.kernel
def negative_dims_kernel(x, out, A: tile.constexpr, B: tile.constexpr, C: tile.constexpr):
    a, b, c = tile.arange(0, A), tile.arange(0, B), tile.arange(0, C)
    v = tile.load(x + a[:, None, None] * B * C + b[None, :, None] * C + c[None, None, :])
    p = tile.permute(v, (-1, 0, -2),)
    tile.store(out + c[:, None, None] * A * B + a[None, :, None] * B + b[None, None, :], p)


def test_permute_takes_torch_negative_dims():
    x = torch.randn(2, 4, 8)
    out = torch.zeros(8, 2, 4)
    negative_dims_kernel[(1,)](x, out, A=2, B=4, C=8)
    assert torch.equal(out, x.permute(-1, 0, -2))


@pytest.mark.parametrize("body, message", [
    ("tile.store(out + o, tile.full((16,), 1e40, tile.float32))", r"1e\+40 does not fit in tile.float32: it would round to inf"),
    ("tile.store(out + o, tile.full((16,), -70000.0, tile.float16))", r"-70000.0 does not fit in tile.float16"),
    ("tile.store(out + o, tile.full((16,), 65520, tile.float16))", r"65520 does not fit in tile.float16"),
    ("tile.store(out + o, tile.full((16,), 2**128, tile.float32))", r"\d+ does not fit in tile.float32"),
    ("tile.store(out + o, tile.full((16,), 10**400, tile.float64))", r"\d+ does not fit in tile.float64"),
    ("tile.store(out + o, tile.load(x + o, mask=o < 3, other=1e39))", r"1e\+39 does not fit in tile.float32"),
    ("tile.store(out + o, tile.full_like(o.to(tile.bfloat16), 4e38))", r"4e\+38 does not fit in tile.bfloat16"),
    ("tile.store(out + o, tile.full((16,), 465.0, tile.float8e4m3).to(tile.float32))",
     r"465.0 does not fit in tile.float8e4m3: it would round to NaN"),
    ("tile.store(out + o, tile.load(x + o) * 10**400)", r"constant \d+ does not fit in float64"),
])
def test_float_constants_that_overflow_their_type(tmp_path, body, message):
    """A finite float constant past its explicit type's range became inf (or NaN) silently;
    it is an error, as an int constant that its type cannot hold."""
    _expect_error(tmp_path, body, message)


@tile.kernel
def large_constants_kernel(x, y, out, B: tile.constexpr):
    o = tile.arange(0, B)
    tile.store(out + o, tile.full((B,), 65504.0, tile.float16) * 0 + tile.load(x + o) * 1e40)  # (f16 * 1e40 is f64)
    tile.store(out + B + o, tile.full((B,), float("-inf"), tile.float16) + tile.arange(0, B) * 1e39)  # (int * 1e39 f64)
    tile.store(out + 2 * B + o, tile.load(y + o, mask=o < 2, other=448.0).to(tile.float32) + 1e39)
    tile.store(out + 3 * B + o, tile.full((B,), 464.0, tile.float8e4m3).to(tile.float32) + tile.full((B,), 3e38, tile.float32))


def test_constants_that_fit_their_type():
    x = torch.tensor([1.0, -2.0, 0.0, 0.5], dtype=torch.float16)
    y = torch.tensor([1.0, -2.0, 0.0, 0.5]).to(torch.float8_e4m3fn)
    out = torch.zeros(16, dtype=torch.float64)
    large_constants_kernel[(1,)](x, y, out, B=4)
    assert out[:4].tolist() == [1e40, -2e40, 0.0, 5e39]
    assert out[4:8].tolist() == [float("-inf")] * 4
    assert out[8:12].tolist() == [1e39 + 1.0, 1e39 - 2.0, 1e39 + 448.0, 1e39 + 448.0]
    assert out[12:].tolist() == [torch.tensor(448.0 + 3e38, dtype=torch.float32).item()] * 4


@pytest.mark.parametrize("target", ["cpu", "sm_90a"])
@pytest.mark.parametrize("body, message", [
    ("tile.store_tile(out, (0,), tile.load_tile(x, (0,), (12,)))", r"tile shape must be powers of two, got \(12,\)"),
    ("tile.store(out + o, tile.sum(tile.full((12, 16), 1.0, tile.float32), axis=0))",
     r"shape must be powers of two, got \(12, 16\)"),
    ("tile.store(out + o, tile.sum(tile.zeros((16, 6), tile.float32), axis=1))", r"shape must be powers of two, got \(16, 6\)"),
    ("tile.store(out + o, tile.sum(tile.broadcast_to(o, (3, 16)), axis=0))", r"shape must be powers of two, got \(3, 16\)"),
    ("tile.store(out + tile.arange(0, 12), 1.0)", r"arange length must be a power of two, got 12"),
])
def test_shapes_must_be_powers_of_two(tmp_path, monkeypatch, target, body, message):
    """A shape of 12 ran on the CPU but failed for sm_90a inside the layout pass ("puts 24
    lanes in a warp"), at the kernel's def line. As Triton's, shapes must be powers of two:
    an error at the user's line on every target."""
    if target != "cpu":
        monkeypatch.setenv("TILE_TARGET", target)
        monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    _expect_error(tmp_path, body, message)


@pytest.mark.parametrize("body, message", [
    ("tile.store(out + o, tile.sqrt(x))", r"sqrt's operand must be a tile or a number, got tensor argument 'x'"),
    ("tile.store(out + o, tile.exp(x + o))", r"exp's operand must be a tile or a number, got a pointer into tensor argument 'x'"),
    ("tile.store(out + o, tile.sigmoid(None))", r"sigmoid's operand must be a tile or a number, got None"),
    ("tile.store(out + o, tile.maximum(x, 1.0))", r"maximum's operand must be a tile or a number, got tensor argument 'x'"),
    ("tile.store(out + o, tile.clamp(tile.load(x + o), out, 1.0))", r"clamp's operand must be .* got tensor argument 'out'"),
    ("tile.store(out + o, tile.fma(o, 2, x))", r"fma's operand must be a tile or a number, got tensor argument 'x'"),
    ("tile.store(out + o, tile.extra.libdevice.atan2(x + o, 1.0))", r"atan2's operand must be .* got a pointer into"),
    ("tile.store(out + o, tile.where(x, 1.0, 2.0))", r"where's condition must be a tile or a number, got tensor argument 'x'"),
    ("tile.store(out + o, tile.where(o < 3, 'a', 2.0))", r"where's operand must be a tile or a number, got 'a'"),
    ("tile.store(out + o, tile.minimum(1.0, 2.0))", r"minimum's operands are both compile-time numbers"),
    ("while tile.load(x + o) > 0: pass", r"a while condition must be a scalar, not a tile of shape \[16\] \(reduce it"),
    ("if tile.load(x + o) > 0: pass", r"an if condition must be a scalar, not a tile of shape \[16\] \(tile.where"),
    ("if x + 1: pass", r"an if condition must be a scalar or a compile-time value, got a pointer into tensor argument 'x'"),
])
def test_messages_name_the_construct_and_the_argument(tmp_path, body, message):
    """tile.sqrt(pointer) said "argument must be a string or a real number" (Python's float());
    a `while` on a tile said "an if condition must be..."."""
    _expect_error(tmp_path, body, message)


@tile.kernel
def interrupted_kernel(x, out, n, BLOCK: tile.constexpr):
    o = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    tile.store(out + o, tile.load(x + o, mask=o < n) * 3.0, mask=o < n)


def _interrupt_in_a_walk(monkeypatch, exception):
    """tile-fuse walks the IR with a callback that raises `exception`, as a Ctrl-C arriving there does."""
    from tile.passes import registry

    def run(self, op):
        def visit(o):
            raise exception
        op.walk(visit)  # (the bindings' own walk: what a pass of one's own calls)

    monkeypatch.setattr(registry.load_all()["tile-fuse"], "run", run)


@pytest.mark.parametrize("exception, block", [(KeyboardInterrupt, 128), (SystemExit(3), 256)])
def test_ctrl_c_during_a_compile_is_not_a_compiler_error(tmp_path, monkeypatch, exception, block):
    """A KeyboardInterrupt raised in an MLIR walk's callback came back as `CompilationError:
    internal compiler error ... Exception raised in callback` (the bindings made it a
    RuntimeError), and was saved in the cache as the kernel's error. It is raised as itself."""
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    x, out = torch.rand(100), torch.zeros(100)
    with monkeypatch.context() as m:
        _interrupt_in_a_walk(m, exception)
        with pytest.raises(type(exception) if isinstance(exception, BaseException) else exception) as caught:
            interrupted_kernel[(1,)](x, out, 100, BLOCK=block)
    if isinstance(exception, SystemExit):
        assert caught.value.code == 3
    interrupted_kernel[(1,)](x, out, 100, BLOCK=block)  # (nothing cached: it compiles now)
    torch.testing.assert_close(out, 3 * x)


def test_ctrl_c_reaches_the_autotuner(tmp_path, monkeypatch):
    """In the autotuner's compile workers too: an interrupted config is no config that fails."""
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    _interrupt_in_a_walk(monkeypatch, KeyboardInterrupt)
    tuner = tile.autotune([tile.Config(BLOCK=32), tile.Config(BLOCK=64)], key=["n"], workers=2)(interrupted_kernel)
    with pytest.raises(KeyboardInterrupt):
        tuner[lambda meta: (tile.cdiv(100, meta["BLOCK"]),)](torch.rand(100), torch.zeros(100), 100)


def test_walks_raise_their_callbacks_errors_as_themselves():
    from mlir import ir

    from tile.passes.walk import walk
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse("func.func @f() { return }")

        def visit(op):
            raise ValueError("from the callback")

        with pytest.raises(ValueError, match="from the callback"):
            walk(module.operation, visit)


_CACHED_SOURCE = '''import tile


@tile.kernel
def cached_kernel(x, out, n, BLOCK: tile.constexpr):
    o = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    tile.store(out + o, tile.load(x + o, mask=o < n) + 2.0, mask=o < n)


@tile.kernel
def failing_kernel(x):
    tile.store(x + tile.arange(0, 4), tile.sqrt(x))
'''


def _fresh_module(tmp_path):
    """The kernels above in a module loaded anew (no launcher in memory: the disk cache answers)."""
    import importlib.util
    src = tmp_path / "cached_kernels.py"
    if not src.exists():
        src.write_text(_CACHED_SOURCE)
    spec = importlib.util.spec_from_file_location("cached_kernels", src)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_cached(module):
    x, out = torch.rand(50), torch.zeros(50)
    module.cached_kernel[(1,)](x, out, 50, BLOCK=64)
    torch.testing.assert_close(out, x + 2.0)


def _entries(cache):
    return [p for p in cache.iterdir() if p.name not in ("parser", "autotune") and not p.name.endswith(".error.json")]


@pytest.mark.parametrize("umask, folders, files", [(0o022, 0o755, 0o644), (0o027, 0o750, 0o640)])
def test_cache_entries_follow_the_umask(tmp_path, monkeypatch, umask, folders, files):
    """Entries were made by tempfile.mkdtemp, 0700 (and saved errors and parse trees 0600):
    in a cache shared by several users the others missed every entry. They take the modes
    open() and makedirs give, under the umask."""
    import os

    from tile.frontend import parser
    cache = tmp_path / "cache"
    monkeypatch.setenv("TILE_CACHE_DIR", str(cache))
    monkeypatch.setattr(parser, "_trees", {})  # (so that the parse trees are written here)
    old = os.umask(umask)
    try:
        module = _fresh_module(tmp_path)
        _run_cached(module)
        with pytest.raises(tile.CompilationError):
            module.failing_kernel[(1,)](torch.zeros(4))
    finally:
        os.umask(old)
    modes = {p.relative_to(cache): (p.is_dir(), p.stat().st_mode & 0o777) for p in cache.rglob("*")}
    assert any(str(p).endswith(".error.json") for p in modes) and any(str(p).startswith("parser/") for p in modes)
    assert all(mode == (folders if is_dir else files) for is_dir, mode in modes.values()), modes


def test_a_dangling_link_in_place_of_an_entry_is_repaired(tmp_path, monkeypatch):
    """An entry replaced by a link to nowhere was never rebuilt in place (os.path.exists says
    False for it, and the rename onto it failed as a lost race): every process compiled again."""
    import os
    cache = tmp_path / "cache"
    monkeypatch.setenv("TILE_CACHE_DIR", str(cache))
    _run_cached(_fresh_module(tmp_path))
    (entry,) = _entries(cache)
    import shutil
    shutil.rmtree(entry)
    os.symlink(tmp_path / "nowhere", entry)
    _run_cached(_fresh_module(tmp_path))
    assert entry.is_dir() and not entry.is_symlink() and (entry / "metadata.json").exists()
    assert _entries(cache) == [entry]


def test_a_full_disk_leaves_no_partial_entry(tmp_path, monkeypatch):
    """A write that fails (ENOSPC) left the entry's temporary folder, half written, in the cache."""
    import errno
    from tile.runtime import cache as cache_module
    cache = tmp_path / "cache"
    monkeypatch.setenv("TILE_CACHE_DIR", str(cache))

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache_module.json, "dump", full)
    with pytest.warns(UserWarning, match="No space left on device"):
        _run_cached(_fresh_module(tmp_path))  # (it runs, uncached)
    assert _entries(cache) == []


@tile.kernel
def unrolled_kernel(x, out, N: tile.constexpr):
    o = tile.arange(0, 2)
    acc = tile.zeros((2,), tile.int32)
    for i in tile.static_range(N):
        acc += tile.load(x + i + o) * i
    tile.store(out + o, acc)


def test_static_range_compiles_in_linear_time(gpu_target):
    """1024 unrolled iterations took a minute for sm_90a (512: 21 s): every look through a
    fusion group (`through_groups`, the axis analysis, the layout pass) listed the group's
    ops to find its terminator, and the constants canonicalize hoists to the top form one
    group as long as the loop. It now takes a few seconds."""
    import time
    x, out = torch.arange(130, dtype=torch.int32), torch.zeros(2, dtype=torch.int32)
    unrolled_kernel[(1,)](x, out, N=128)
    i = torch.arange(128)
    assert out.tolist() == [int((i * i).sum()), int(((i + 1) * i).sum())]
    gpu_target()
    start = time.perf_counter()
    unrolled_kernel.compile(torch.empty(1026, dtype=torch.int32, device="meta"), out.to("meta"), N=1024)
    assert time.perf_counter() - start < 30


@tile.kernel
def bounds_kernel(x, out, n, B: tile.constexpr):
    o = tile.arange(0, B)
    v = tile.load(x + o * x.stride(0))  # (unmasked: reads past x where B > its size)
    tile.store(out + o, v, mask=o < n)
    tile.atomic_add(out + n + o, 1.0, mask=o < 2,)


@pytest.mark.parametrize("debug", ["1", ""])
def test_tile_debug_checks_bounds(monkeypatch, capfd, debug):
    """With TILE_DEBUG=1 an unmasked load past its tensor fails as a device_assert naming the
    tensor and the line (the offset printed); without it the kernel holds no check."""
    monkeypatch.setenv("TILE_DEBUG", debug)
    x = torch.arange(20, dtype=torch.float32)[::2]  # (10 elements of stride 2: offsets 0 to 18)
    out = torch.zeros(20)
    bounds_kernel[(1,)](x, out, 8, B=8)  # (in bounds: runs either way)
    assert out[:8].tolist() == x[:8].tolist() and out[8:10].tolist() == [1.0, 1.0]
    launcher = bounds_kernel.compile(x, out, 8, B=8)
    assert ("tile.assert_fail" in launcher.asm["tile"]) == bool(debug)
    if not debug:
        return
    with pytest.raises(tile.DeviceAssertionError, match=r"test_reliability.py:\d+: load of tensor argument 'x' out of bounds"):
        bounds_kernel[(1,)](x, out, 8, B=16)  # (offsets up to 30 of 18)
    printed = capfd.readouterr().out
    assert "load of tensor argument 'x' out of bounds at offset 30" in printed and "offsets below 19" in printed
    with pytest.raises(tile.DeviceAssertionError, match="atomic of tensor argument 'out' out of bounds"):
        bounds_kernel[(1,)](x, out, 19, B=8)  # (out + 19 + 1 is past out)


def test_tile_debug_checks_bounds_on_a_gpu(monkeypatch, gpu_target):
    monkeypatch.setenv("TILE_DEBUG", "1")
    gpu_target()
    m = lambda n: torch.empty(n, device="meta")  # noqa: E731
    ptx = bounds_kernel.compile(m(10), m(20), 8, B=16).asm["ptx"]
    assert "__assertfail" in ptx and "vprintf" in ptx
