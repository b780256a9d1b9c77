"""Bad kernels and bad launches raise a `tile.TileError` subclass naming the
argument or the kernel's source line; none may crash the process."""

import inspect
import os

import pytest
import torch

import tile


@tile.kernel
def copy_kernel(x, out, n, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    tile.store(out + offs, tile.load(x + offs, mask=offs < n), mask=offs < n)


@tile.kernel
def while_kernel(x, n):
    i = 0
    while i < n:
        i += 1
    else:
        tile.store(x, i)


@tile.kernel
def stages_kernel(x, out, n, S: tile.constexpr):
    for i in tile.range(0, n, num_stages=S):
        tile.store(out + i, tile.load(x + i))


@tile.kernel
def odd_arange_kernel(x, out):
    offs = tile.arange(0, 100)
    tile.store(out + offs, tile.load(x + offs))


@tile.kernel
def shape_mismatch_kernel(x, out):
    a = tile.load(x + tile.arange(0, 64))
    b = tile.load(x + tile.arange(0, 128))
    tile.store(out + tile.arange(0, 64), a + b)


@tile.kernel
def precision_kernel(x, out, P: tile.constexpr):
    r = tile.arange(0, 16)
    t = tile.load(x + r[:, None] * 16 + r[None, :])
    tile.store(out + r[:, None] * 16 + r[None, :], tile.dot(t, t, input_precision=P))


@tile.kernel
def float_index_kernel(x, out):
    r = tile.arange(0, 16)
    v = tile.load(x + r)
    tile.store(out + r, tile.gather(v, v, 0))


def _line_of(kernel, text: str) -> int:
    """The file line number of the first line of `kernel`'s source containing `text`."""
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _tensors(n=16):
    return torch.zeros(n), torch.zeros(n)


def test_too_few_arguments():
    x, out = _tensors()
    with pytest.raises(tile.LaunchError, match=r"copy_kernel\(\) is missing argument\(s\): n, BLOCK"):
        copy_kernel[(1,)](x, out)


def test_too_many_arguments():
    x, out = _tensors()
    with pytest.raises(tile.LaunchError, match=r"copy_kernel\(\) takes 4 arguments but 5 were given"):
        copy_kernel[(1,)](x, out, 16, 16, 3)


def test_unknown_keyword_argument():
    x, out = _tensors()
    with pytest.raises(tile.LaunchError, match="unexpected argument 'size'"):
        copy_kernel[(1,)](x, out, 16, BLOCK=16, size=3)


@pytest.mark.parametrize("bad", ["abc", [1, 2], object()])
def test_non_tensor_argument(bad):
    x, _ = _tensors()
    with pytest.raises(tile.LaunchError, match="argument 'out' has type"):
        copy_kernel[(1,)](x, bad, 16, BLOCK=16)


def test_none_argument_used_as_a_tensor():
    """None is Triton's optional pointer: a compile-time None, an error where it is used."""
    x, _ = _tensors()
    with pytest.raises(tile.CompilationError, match=r":16:16: cannot use None in a tile expression .*if X is not None"):
        copy_kernel[(1,)](x, None, 16, BLOCK=16)


def test_unsupported_dtype():
    x, out = torch.zeros(16, dtype=torch.complex64), torch.zeros(16, dtype=torch.complex64)
    with pytest.raises(tile.LaunchError, match=r"argument 'x': dtype torch.complex64 is not supported"):
        copy_kernel[(1,)](x, out, 16, BLOCK=16)


def test_missing_constexpr():
    x, out = _tensors()
    with pytest.raises(tile.LaunchError, match=r"missing constexpr\(s\): BLOCK"):
        copy_kernel[(1,)](x, out, 16)


def test_tensor_as_constexpr():
    x, out = _tensors()
    with pytest.raises(tile.LaunchError, match="'BLOCK' is a constexpr"):
        copy_kernel[(1,)](x, out, 16, BLOCK=x)


def _compile_error(kernel, *args, **kwargs) -> tile.CompilationError:
    with pytest.raises(tile.CompilationError) as info:
        kernel[(1,)](*args, **kwargs)
    return info.value


def _assert_points_at(err: tile.CompilationError, kernel, text: str):
    line = _line_of(kernel, text)
    assert os.path.samefile(err.filename, __file__)
    assert err.line == line
    assert f"{os.path.basename(__file__)}:{line}:" in str(err)
    assert text in str(err)  # the offending source line is shown


def test_while_else_is_rejected():
    x, _ = _tensors()
    err = _compile_error(while_kernel, x, 16)
    assert "while ... else" in err.message
    _assert_points_at(err, while_kernel, "while i < n:")


def test_non_power_of_two_arange():
    err = _compile_error(odd_arange_kernel, *_tensors())
    assert "power of two" in err.message and "100" in err.message
    _assert_points_at(err, odd_arange_kernel, "tile.arange(0, 100)")


def test_bad_num_stages():
    x, out = _tensors()
    err = _compile_error(stages_kernel, x, out, 4, S=0)
    assert "num_stages must be a compile-time int of at least 1, got 0" in err.message
    _assert_points_at(err, stages_kernel, "tile.range(0, n, num_stages=S)")


def test_mismatched_tile_shapes():
    err = _compile_error(shape_mismatch_kernel, *_tensors(128))
    assert "[64]" in err.message and "[128]" in err.message
    _assert_points_at(err, shape_mismatch_kernel, "a + b")


def test_unknown_dot_precision():
    err = _compile_error(precision_kernel, *_tensors(256), P="fp64")
    assert "input_precision" in err.message and "'fp64'" in err.message
    _assert_points_at(err, precision_kernel, "tile.dot(t, t, input_precision=P)")


def test_gather_needs_an_integer_index():
    err = _compile_error(float_index_kernel, *_tensors())
    assert "gather's index must be integers" in err.message and "float32" in err.message
    _assert_points_at(err, float_index_kernel, "tile.gather(v, v, 0)")


def test_errors_are_tile_errors():
    for cls in (tile.LaunchError, tile.CompilationError):
        assert issubclass(cls, tile.TileError)


def test_cpu_tensor_for_a_gpu_target(monkeypatch):
    """A GPU build launched with CPU tensors names the argument (the driver is faked:
    the check runs before anything reaches it)."""
    from tile.runtime import cuda_driver

    class FakeModule:
        def __init__(self, image):
            pass

        def function(self, name):
            return object()  # never launched: the argument check fails first

    import vector_add

    monkeypatch.setenv("TILE_TARGET", "sm_90")
    monkeypatch.setattr(cuda_driver, "available", lambda: True)
    monkeypatch.setattr(cuda_driver, "Module", FakeModule)
    with pytest.raises(tile.LaunchError, match="argument 'x' is on cpu"):
        vector_add.add_kernel[(1,)](torch.rand(64), torch.rand(64), torch.empty(64), 64, BLOCK=64)


def test_cache_miss_without_the_compiler(monkeypatch, tmp_path):
    """On a host that has only a cache built elsewhere (no MLIR), a launch that cache lacks
    names the kernel and what to do, instead of failing on the compiler's import; a launch
    it has still runs there."""
    import sys

    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    x, out = _tensors()
    copy_kernel._launchers.clear()
    copy_kernel[(1,)](x, out, 16, BLOCK=16)  # compiled into the fresh cache
    copy_kernel._launchers.clear()
    monkeypatch.setitem(sys.modules, "tile.codegen.build", None)  # the import now fails, as without MLIR
    copy_kernel[(1,)](x, out, 16, BLOCK=16)
    with pytest.raises(tile.CompilationError, match="kernel copy_kernel has no compiled entry") as info:
        copy_kernel[(1,)](x, out, 16, BLOCK=32)
    assert "TILE_COMPILE_ONLY=1" in info.value.message
    _assert_points_at(info.value, copy_kernel, "def copy_kernel")
