"""Triton's grid dependence control (`tile.extra.cuda.gdc_wait`, `gdc_launch_dependents`) and
the launch option `launch_pdl=` (programmatic dependent launch): the same results on the CPU,
`griddepcontrol.*` where the kernel says on sm_90a, nothing on sm_80, and a PDL launch made
by cuLaunchKernelEx with programmatic stream serialization."""

import ctypes

import pytest
import torch

import tile
from tile.runtime import cuda_driver
from tile.runtime.cuda_launcher import CudaLauncher


@tile.jit
def _scale_shift(x_ptr, out_ptr, n, scale, BLOCK: tile.constexpr, USE_GDC: tile.constexpr, ):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    if USE_GDC:
        tile.extra.cuda.gdc_wait()
    x = tile.load(x_ptr + offs, mask=mask, other=0.0)
    if USE_GDC:
        tile.extra.cuda.gdc_launch_dependents()
    tile.store(out_ptr + offs, x * scale + 1.0, mask=mask)


@tile.jit
def _chained(x_ptr, out_ptr, n, BLOCK: tile.constexpr):
    """Pointer increments, the wait in a loop's first iteration as a persistent kernel does it."""
    pid = tile.program_id(0)
    x_ptr += pid * BLOCK
    out_ptr += pid * BLOCK
    for i in range(2):
        if i == 0:
            tile.extra.cuda.gdc_wait()
        offs = tile.arange(0, BLOCK) + i * (BLOCK // 2)
        mask = (offs < BLOCK) & (pid * BLOCK + offs < n)
        tile.store(out_ptr + offs, tile.load(x_ptr + offs, mask=mask) * 2, mask=mask)
    tile.extra.cuda.gdc_launch_dependents()


@pytest.mark.parametrize("pdl", [True, False])
def test_cpu_results(pdl):
    x = torch.randn(1000)
    out, out2 = torch.empty(1000), torch.empty(1000)
    _scale_shift[(tile.cdiv(1000, 128), )](x, out, 1000, 3.0, BLOCK=128, USE_GDC=pdl, launch_pdl=pdl)
    _chained[(tile.cdiv(1000, 64), )](out, out2, 1000, BLOCK=64, launch_pdl=pdl)
    torch.testing.assert_close(out, x * 3.0 + 1.0)
    torch.testing.assert_close(out2, (x * 3.0 + 1.0) * 2)


def _ptx(target, **meta):
    x, out = torch.empty(4096, device="meta"), torch.empty(4096, device="meta")
    return _scale_shift.compile(x, out, 4096, 2.0, BLOCK=1024, **meta)


def test_sm90a_ptx(gpu_target):
    gpu_target("sm_90a")
    launcher = _ptx("sm_90a", USE_GDC=True, launch_pdl=True)
    lines = [x.strip() for x in launcher.asm["ptx"].splitlines()]
    wait, dependents = lines.index("griddepcontrol.wait;"), lines.index("griddepcontrol.launch_dependents;")
    loads = [i for i, x in enumerate(lines) if x.startswith(("ld.global", "@%p")) and "ld.global" in x]
    stores = [i for i, x in enumerate(lines) if "st.global" in x]
    assert loads and stores and wait < min(loads) and max(loads) < dependents < min(stores)
    assert launcher.metadata["options"]["launch_pdl"] is True
    assert launcher.metadata["ptxas"]["spill_stores"] == 0
    plain = _ptx("sm_90a", USE_GDC=False)
    assert "griddepcontrol" not in plain.asm["ptx"] and "launch_pdl" not in plain.metadata["options"]


def test_sm90a_loop(gpu_target):
    gpu_target("sm_90a")
    x, out = torch.empty(4096, device="meta"), torch.empty(4096, device="meta")
    ptx = _chained.compile(x, out, 4000, BLOCK=64).asm["ptx"]
    assert ptx.count("griddepcontrol.wait;") == 1 and ptx.count("griddepcontrol.launch_dependents;") == 1


def test_sm80_has_no_grid_dependence(gpu_target):
    gpu_target("sm_80")
    assert "griddepcontrol" not in _ptx("sm_80", USE_GDC=True, launch_pdl=True).asm["ptx"]


def test_launch_pdl_is_a_bool():
    x = torch.randn(16)
    with pytest.raises(tile.LaunchError, match="launch_pdl must be True or False"):
        _scale_shift[(1, )](x, x, 16, 1.0, BLOCK=16, USE_GDC=True, launch_pdl=1)


def test_host_call_raises():
    with pytest.raises(tile.TileError, match="inside a @tile.kernel"):
        tile.extra.cuda.gdc_wait()


def test_pdl_launcher_uses_launch_kernel_ex(monkeypatch):
    """A PDL launcher has no generated fast path and launches through cuLaunchKernelEx with
    one attribute, programmatic stream serialization (6) set to 1: the structs as cuda.h lays them out."""
    meta = {"name": "k", "num_threads": 128, "abi": [], "args": [], "options": {"launch_pdl": True}}
    assert CudaLauncher(meta, b"").fast_launch(()) is None
    assert ctypes.sizeof(cuda_driver.LaunchAttribute) == 72 and cuda_driver.LaunchAttribute.value.offset == 8
    assert ctypes.sizeof(cuda_driver.LaunchConfig) == 56 and cuda_driver.LaunchConfig.attrs.offset == 40
    seen = {}

    class Lib:
        def cuLaunchKernelEx(self, config, handle, argv, extra):
            c = ctypes.cast(config, ctypes.POINTER(cuda_driver.LaunchConfig)).contents
            seen.update(grid=(c.gridDimX, c.gridDimY, c.gridDimZ), block=c.blockDimX, n=c.numAttrs,
                        id=c.attrs[0].id, value=bytes(c.attrs[0].value[:4]), handle=handle)
            return 0

    monkeypatch.setattr(cuda_driver, "_load", lambda: Lib())
    cuda_driver.Function(1234).launch_argv((3, 2, 1), (128, 1, 1), None, 0, 0, pdl=True)
    assert seen == {"grid": (3, 2, 1), "block": 128, "n": 1, "id": 6, "value": b"\x01\0\0\0", "handle": 1234}
