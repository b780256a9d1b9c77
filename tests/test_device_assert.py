"""`tile.device_assert(cond, msg, mask=)` and `assert` on a run-time value (Triton's): checked
on the CPU target (a failure raises DeviceAssertionError after the launch, naming the line and
a program), compiled to CUDA's __assertfail on a GPU with TILE_DEBUG=1 or
@tile.jit(debug=True), and to nothing without (as Triton without TRITON_DEBUG)."""

import pytest
import torch

import tile


@tile.kernel
def checked_kernel(x, out, n, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    v = tile.load(x + offs, mask=offs < n, other=-1.0)
    tile.device_assert(v >= 0, "x must not be negative", mask=offs < n)  # (the masked lanes read -1)
    assert n % 2 == 0, "n must be even"  # a run-time assert: Triton's device_assert
    tile.store(out + offs, tile.sqrt(v), mask=offs < n)


@tile.jit(debug=True)
def debug_kernel(x, n):
    tile.device_assert(tile.load(x) < n)


def test_device_assert_passes_and_computes():
    x = torch.rand(50)
    out = torch.zeros(50)
    checked_kernel[(4,)](x, out, 50, BLOCK=16)
    torch.testing.assert_close(out, x.sqrt())


def test_device_assert_fails_at_its_line():
    x = torch.rand(50)
    x[37] = -2.0  # program 2's
    with pytest.raises(tile.DeviceAssertionError, match=r"test_device_assert.py:16: device_assert failed: x must not be "
                                                         r"negative in program \(2, 0, 0\)$"):
        checked_kernel[(4,)](x, torch.zeros(50), 50, BLOCK=16)
    with pytest.raises(AssertionError, match=r":17: device_assert failed: n must be even in program \(0, 0, 0\) \(and in "
                                             r"3 other program\(s\)\)"):
        checked_kernel[(4,)](torch.rand(51), torch.zeros(51), 51, BLOCK=16)
    checked_kernel[(4,)](torch.rand(50), torch.zeros(50), 50, BLOCK=16)  # (a failure is not kept for the next launch)


def test_device_assert_needs_a_string_message():
    @tile.kernel
    def bad(x):
        tile.device_assert(tile.load(x) > 0, 3)

    with pytest.raises(tile.CompilationError, match="device_assert's message must be a string"):
        bad[(1,)](torch.ones(1))


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_device_assert_on_the_gpu_only_when_debugging(target, gpu_target, monkeypatch):
    gpu_target(target)
    x, out = torch.empty(50, device="meta"), torch.empty(50, device="meta")
    monkeypatch.delenv("TILE_DEBUG", raising=False)
    assert "__assertfail" not in checked_kernel.compile(x, out, 50, BLOCK=16).asm["ptx"]
    assert "__assertfail" in debug_kernel.compile(x, 50).asm["ptx"]
    monkeypatch.setenv("TILE_DEBUG", "1")
    ptx = checked_kernel.compile(x, out, 50, BLOCK=16).asm["ptx"]
    assert ptx.count("call.uni __assertfail") + ptx.count("call __assertfail") == 4  # (and the load's and store's bounds)
    assert "x must not be negative" in "".join(
        chr(int(c)) for line in ptx.splitlines() if ".global .align 1 .b8 tile_assert" in line
        for c in line.split("{")[1].rstrip("};").split(","))
