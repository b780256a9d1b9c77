"""Launches on several CUDA devices, on the CPU: the driver is faked (test_launch_path's),
with two devices, each with its own current stream, and tensors that say they are on
cuda:0 or cuda:1. A kernel's module is loaded once per device, lazily; a launch takes
the device of its tensors (not the current one), that device's current stream and its
context; tensors of two devices in one launch are a LaunchError naming them."""

import contextlib

import pytest
import torch

import tile
from tile.runtime import arguments, cuda_launcher
from tile.runtime.cuda_launcher import CudaLauncher
from tile.runtime.tensor_maps import TensorMap
from test_launch_path import STREAM, _add, driver  # noqa: F401  (the fake CUDA driver)


_check_tensor = arguments.check_tensor


class OnDevice(torch.Tensor):
    """A CPU tensor that says it is on cuda:`index` (its memory stays the CPU's)."""

    __module__ = "torch.fake_cuda"  # (the binder takes tensors of torch's modules)
    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def of(t, index):
        out = torch.Tensor._make_subclass(OnDevice, t)
        out.index = index
        return out

    @property
    def device(self):
        return torch.device("cuda", self.index)


@pytest.fixture
def two_devices(driver, monkeypatch):  # noqa: F811
    monkeypatch.setattr(cuda_launcher, "_getters", (lambda device: STREAM + device, lambda: driver.current))
    monkeypatch.setattr(arguments, "check_tensor", _check_tensor)  # (these tensors do say cuda)
    return driver


def _args(index, n=100):
    x, y, out = (OnDevice.of(torch.randn(n), index) for _ in range(3))
    return x, y, out, n


@pytest.mark.parametrize("path", ["fast", "general"])
def test_each_device_loads_and_launches_on_its_stream(two_devices, path):
    kernel = tile.kernel(_add)  # its own launchers, loaded by this test's fake driver
    launch = (lambda *a: kernel[(2,)](*a, BLOCK=64)) if path == "fast" else (lambda *a: kernel._generic((2,))(*a, BLOCK=64))
    a0, a1 = _args(0), _args(1)
    for _ in range(2):
        launch(*a0)
        launch(*a1)
    assert two_devices.loaded == [0, 1]  # one module per device, each loaded once
    launches = two_devices.launches
    assert [(l["stream"], l["context"]) for l in launches] == [(STREAM, 0), (STREAM + 1, 1)] * 2
    assert launches[0]["handle"] != launches[1]["handle"] and launches[0]["handle"] == launches[2]["handle"]
    assert launches[1]["params"][1] == a1[0].data_ptr()
    assert two_devices.current == 0  # the context is switched back after a launch on another device
    assert {l["path"] for l in launches} == {"bare" if path == "fast" else "argtypes"}

    two_devices.current = 1  # torch.cuda.set_device(1): a launch on cuda:0 still runs on device 0
    launch(*a0)
    assert (launches[-1]["stream"], launches[-1]["context"], launches[-1]["handle"]) == (STREAM, 0, launches[0]["handle"])
    assert two_devices.current == 1


@pytest.mark.parametrize("path", ["fast", "general"])
def test_tensors_on_two_devices_are_an_error(two_devices, path):
    kernel = tile.kernel(_add)
    x, _, out, n = _args(0)
    y = OnDevice.of(torch.randn(n), 1)
    launch = kernel[(2,)] if path == "fast" else kernel._generic((2,))
    launch(x, x, out, n, BLOCK=64)  # (the binder exists, and has seen cuda:0)
    with pytest.raises(tile.LaunchError, match=r"arguments 'x' \(cuda:0\) and 'y' \(cuda:1\) are on different devices"):
        launch(x, y, out, n, BLOCK=64)
    assert len(two_devices.launches) == 1


def test_tensor_maps_are_kept_per_device(monkeypatch):
    """One descriptor per (tensor, sizes, device): the same address on another device
    (another context's memory) is another descriptor, encoded and uploaded there."""
    made = []

    def upload(self, address, rows, cols, stride, device):
        made.append(device)
        return None, 0x7000 + 0x100 * len(made)

    monkeypatch.setattr(TensorMap, "_upload", upload)
    entry = {"arg": 0, "part": "tma", "type": "ptr", "dtype": "bf16", "elem_bytes": 2, "rows": ["arg", 1],
             "cols": ["const", 64], "stride": ["arg", 2], "box": [64, 64], "swizzle": 128}
    m = TensorMap(entry, ["a", "m", "s"])
    assert [m(0x1000, 300, 64, 520, d) for d in (0, 1, 0, 1)] == [0x7100, 0x7200, 0x7100, 0x7200]
    assert made == [0, 1]


def test_launcher_general_path_refuses_mixed_devices(two_devices):
    launcher = CudaLauncher({"name": "k", "num_threads": 128, "args": [["a"], ["b"]], "shared_bytes": 0,
                             "abi": [{"arg": 0, "part": "ptr", "type": "ptr"}, {"arg": 1, "part": "ptr", "type": "ptr"}]}, b"")
    a, b = OnDevice.of(torch.zeros(4), 0), OnDevice.of(torch.zeros(4), 1)
    with pytest.raises(tile.LaunchError, match="'a' .* and 'b' .* are on different devices"):
        launcher((1, 1, 1), [a, b], ["a", "b"])
    with pytest.raises(tile.LaunchError, match="different devices"):
        launcher.check([a, b])


def test_on_device_switches_to_the_primary_context_and_back(monkeypatch):
    """Device d's primary context (retained once) is current inside `on_device(d)`, the
    previous one after; already current, nothing is switched."""
    from tile.runtime import cuda_driver

    class Lib:
        current, retained, sets = 0xC0, [], []

        def cuInit(self, flags):
            return 0

        def cuDeviceGet(self, out, ordinal):
            out.value = ordinal
            return 0

        def cuDevicePrimaryCtxRetain(self, out, device):
            self.retained.append(device)
            out.value = 0xC0 + device
            return 0

        def cuCtxGetCurrent(self, out):
            out.value = self.current
            return 0

        def cuCtxSetCurrent(self, ctx):
            self.sets.append(ctx.value)
            self.current = ctx.value
            return 0

    lib = Lib()
    monkeypatch.setattr(cuda_driver, "_init", lambda: lib)
    monkeypatch.setattr(cuda_driver, "_primary", {})
    for _ in range(2):
        with cuda_driver.on_device(1):
            assert lib.current == 0xC1
        assert lib.current == 0xC0
        with cuda_driver.on_device(0):
            assert lib.current == 0xC0
    assert lib.retained == [1, 0] and lib.sets == [0xC1, 0xC0] * 2


def test_mixed_devices_are_refused_before_compiling(monkeypatch):
    """Without TILE_TARGET the target comes from the tensors' device: two devices are the
    LaunchError there, before any build (a host with only the cache could not compile)."""
    from tile.runtime import cache

    monkeypatch.delenv("TILE_TARGET", raising=False)
    monkeypatch.setattr(cache, "load_or_build", lambda *a, **k: pytest.fail("compiled"))
    kernel = tile.kernel(_add)
    x, y = OnDevice.of(torch.randn(8), 0), OnDevice.of(torch.randn(8), 1)
    for launch in (kernel[(1,)], kernel._generic((1,))):
        with pytest.raises(tile.LaunchError, match=r"'x' \(cuda:0\) and 'y' \(cuda:1\) are on different devices"):
            launch(x, y, x, 8, BLOCK=64)


def test_tensor_map_staging_during_a_capture(monkeypatch):
    """While a stream is captured no memory is pinned: a descriptor's staging bytes come from
    the slab set aside before; with none, the error says to launch once before capturing."""
    from tile.runtime import tensor_maps

    monkeypatch.setattr(tensor_maps, "_slab", [])
    with pytest.raises(tile.LaunchError, match="argument 'a': a TMA descriptor made during a CUDA graph capture .* "
                                               "launch it once before capturing"):
        tensor_maps._pinned(True, "a")
    slot = torch.empty(128, dtype=torch.uint8)
    tensor_maps._slab.append(slot)
    assert tensor_maps._pinned(True, "a") is slot and tensor_maps._slab == []


def test_module_loads_in_relaxed_capture_mode(monkeypatch):
    """A module loads with the thread's stream-capture mode relaxed, then restored: a first
    launch inside torch.cuda.graph (global mode) may load it."""
    from tile.runtime import cuda_driver

    class Lib:
        mode, seen = 0, []

        def cuThreadExchangeStreamCaptureMode(self, mode):
            mode._obj.value, self.mode = self.mode, mode._obj.value
            return 0

        def cuModuleLoadData(self, handle, image):
            self.seen.append(self.mode)
            handle.value = 0x77
            return 0

    lib = Lib()
    monkeypatch.setattr(cuda_driver, "_init", lambda: lib)
    monkeypatch.setattr(cuda_driver, "_load", lambda: lib)
    monkeypatch.setattr(cuda_driver, "on_device", lambda device: contextlib.nullcontext())
    assert cuda_driver.Module(b"cubin", 1).handle == 0x77
    assert lib.seen == [cuda_driver.CU_STREAM_CAPTURE_MODE_RELAXED] and lib.mode == 0
