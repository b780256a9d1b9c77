"""Kernels a fuzzer of the GPU code generation found that failed to compile for sm_90a or
sm_80 (an MLIR verifier error leaking out, a crash) or that the CPU target got wrong; each
now compiles (meta tensors, compile only) and matches torch on the CPU target. Their GPU
runs are in benchmarks/regressions_on_device.py."""

import pytest
import torch

import tile


@tile.kernel
def int64_offsets_kernel(x, out, n, s, BLOCK: tile.constexpr):
    o = tile.arange(0, BLOCK)
    tile.store(out + o, tile.load(x + o.to(tile.int64) * s, mask=o < n, other=-1.0))


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_int64_offsets_of_a_predicated_access(target, gpu_target):
    """int64 offsets of a 4-byte access (a predicated `ld.global`) were sign-extended to i64
    again: 'arith.extsi' op ... 'i64' and result type 'i64' are cast incompatible."""
    x, out = torch.arange(32, dtype=torch.float32), torch.zeros(8)
    int64_offsets_kernel[(1,)](x, out, 7, 3, BLOCK=8)
    assert out.tolist() == [0.0, 3.0, 6.0, 9.0, 12.0, 15.0, 18.0, -1.0]
    gpu_target(target)
    ptx = int64_offsets_kernel.compile(x.to("meta"), out.to("meta"), 7, 3, BLOCK=8).asm["ptx"]
    assert "ld.global" in ptx


def test_a_kernel_that_spills_gets_every_register(gpu_target):
    """A 256x128 f32 accumulator on 4 warps (sm_80) cannot fit its registers; left to
    itself ptxas gave it 32 and spilled several times more than with the 255 it may use."""
    from tile.benchmarks.regressions_on_device import wide_dot_kernel

    gpu_target("sm_80")
    a = torch.empty(256, 32, dtype=torch.bfloat16, device="meta")
    b = torch.empty(32, 123, dtype=torch.bfloat16, device="meta")
    launcher = wide_dot_kernel.compile(a, b, torch.empty(256, 123, device="meta"), 256, 123, 32, BM=256, BN=128, BK=32,
                                       num_warps=4)
    ptxas = launcher.metadata["ptxas"]
    assert ptxas["registers"] == 255 and ptxas["spill_stores"] < 2000  # (32 registers, 7600 bytes)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_int8_abs(target, gpu_target):
    """abs of an int8 tile left 'math.absi' unlowered on a GPU (libdevice has __nv_abs for
    i32 only): it is now LLVM's abs intrinsic (PTX abs.s16 of the sign-extended byte)."""
    from tile.benchmarks.regressions_on_device import int8_abs_kernel

    x = torch.arange(-128, 128, dtype=torch.int32).to(torch.int8)
    out = torch.zeros(256, dtype=torch.int8)
    int8_abs_kernel[(1,)](x, out, BLOCK=256)
    assert torch.equal(out, x.abs())
    gpu_target(target)
    assert "abs.s16" in int8_abs_kernel.compile(x.to("meta"), out.to("meta"), BLOCK=256, num_warps=2).asm["ptx"]
