"""CPU-only tests for tile.runtime.cuda_driver: no GPU or libcuda needed."""
import ctypes
import importlib.util
import sys
from pathlib import Path

import pytest

_SOURCE = Path(__file__).resolve().parents[1] / "runtime" / "cuda_driver.py"


def _load_by_path(name="_cuda_driver_under_test"):
    spec = importlib.util.spec_from_file_location(name, _SOURCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


try:
    from tile.runtime import cuda_driver
except ImportError:
    cuda_driver = _load_by_path()


class _FakeLib:
    """Stands in for libcuda: error lookups fill their char* out-params."""

    def __init__(self):
        self.launches = []

    def cuGetErrorName(self, result, out):
        out.value = b"CUDA_ERROR_INVALID_VALUE" if result == 1 else None
        return 0 if result == 1 else 1

    def cuGetErrorString(self, result, out):
        out.value = b"invalid argument" if result == 1 else None
        return 0 if result == 1 else 1

    def cuLaunchKernel(self, *args):
        self.launches.append(args)
        return 0


@pytest.fixture
def fake_lib(monkeypatch):
    lib = _FakeLib()
    monkeypatch.setattr(cuda_driver, "_load", lambda: lib)
    return lib


def test_import_does_not_load_libcuda_or_torch():
    before = set(sys.modules)
    fresh = _load_by_path("_cuda_driver_fresh_import")
    assert fresh._lib is None
    assert not any(m == "torch" or m.startswith("torch.") for m in set(sys.modules) - before)


def test_check_success_returns_none():
    assert cuda_driver.check(0, "x") is None


def test_check_failure_names_call_and_error(fake_lib):
    with pytest.raises(cuda_driver.CudaError) as info:
        cuda_driver.check(1, "cuFoo")
    assert str(info.value) == "cuFoo failed: CUDA_ERROR_INVALID_VALUE (invalid argument)"
    assert isinstance(info.value, RuntimeError)


def test_check_failure_with_unknown_code(fake_lib):
    with pytest.raises(cuda_driver.CudaError, match=r"cuBar failed: CUresult 12345"):
        cuda_driver.check(12345, "cuBar")


def _no_driver(monkeypatch):
    monkeypatch.setattr(cuda_driver, "_lib", None)
    monkeypatch.setattr(cuda_driver, "_initialized", False)

    def refuse(*args, **kwargs):
        raise OSError("libcuda.so.1: cannot open shared object file")

    monkeypatch.setattr(ctypes, "CDLL", refuse)


def test_available_false_without_driver(monkeypatch):
    _no_driver(monkeypatch)
    assert cuda_driver.available() is False


def test_missing_driver_raises_cuda_error(monkeypatch):
    _no_driver(monkeypatch)
    with pytest.raises(cuda_driver.CudaError, match=r"no CUDA driver \(libcuda.so.1\) on this host"):
        cuda_driver.check(1, "cuFoo")


def test_load_sets_prototypes_once(monkeypatch):
    class Proto:
        pass

    class FakeCDLL:
        def __init__(self, name):
            assert name == "libcuda.so.1"

        def __getattr__(self, name):
            fn = Proto()
            setattr(self, name, fn)  # CDLL caches its function objects the same way
            return fn

    monkeypatch.setattr(cuda_driver, "_lib", None)
    monkeypatch.setattr(ctypes, "CDLL", FakeCDLL)
    lib = cuda_driver._load()
    assert cuda_driver._load() is lib
    for name, argtypes in cuda_driver._SIGNATURES.items():
        assert getattr(lib, name).argtypes == argtypes
        assert getattr(lib, name).restype is ctypes.c_int
    assert len(cuda_driver._SIGNATURES["cuLaunchKernel"]) == 11


def test_launch_passes_parameter_addresses(fake_lib):
    params = [ctypes.c_void_p(0x1000), ctypes.c_int64(7), ctypes.c_int32(3), ctypes.c_float(1.5)]
    cuda_driver.Function(0xABC).launch((4, 2, 1), (128, 1, 1), params, shared_mem=256, stream=0)
    (args,) = fake_lib.launches
    assert args[:9] == (0xABC, 4, 2, 1, 128, 1, 1, 256, 0)
    assert list(args[9]) == [ctypes.addressof(p) for p in params]
    assert args[10] is None
