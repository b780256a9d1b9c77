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
    r = torch.randn(1000, dtype=torch.float64).to(dtype) * 10
    s = torch.randn(1000, dtype=torch.float64).to(dtype) + 0.5
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
