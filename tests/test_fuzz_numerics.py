"""Numerics a fuzzer found wrong on the CPU target, against torch: math functions at
special values, signed zeros, integer edge cases, promotions and casts. Each case
compiled and ran but answered differently from torch; it now matches."""

import pytest
import torch

import tile


@tile.kernel
def unary_kernel(x, out, OP: tile.constexpr, B: tile.constexpr):
    o = tile.arange(0, B)
    a = tile.load(x + o)
    if OP == "tanh":
        r = tile.tanh(a)
    if OP == "exp2":
        r = tile.exp2(a)
    tile.store(out + o, r)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_tanh_and_exp2_to_the_ulp(dtype):
    """math-expand-ops' formulas (tanh from exp, exp2 as exp(x * ln 2)) made tanh(1e-20)
    and tanh of subnormals 0 and tanh(-0.0) +0.0, and exp2(100) 18 ulp off in f32; the CPU
    target now calls libm, as torch does."""
    x = torch.tensor([1e-20, -1e-40, -0.0, 1e-3, 0.5, -3.0, 100.0, -100.0], dtype=dtype)
    for op, ref in (("tanh", torch.tanh), ("exp2", torch.exp2)):
        out = torch.zeros_like(x)
        unary_kernel[(1,)](x, out, OP=op, B=8)
        torch.testing.assert_close(out, ref(x), rtol=2 * torch.finfo(dtype).eps, atol=0)
        assert torch.equal(out.signbit(), ref(x).signbit())


@tile.kernel
def negate_kernel(x, out, B: tile.constexpr):
    o = tile.arange(0, B)
    tile.store(out + o, -tile.load(x + o))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_negation_flips_the_sign_of_zero(dtype):
    """-x was 0 - x, which is +0.0 for x = +0.0 (so 1 / -x was +inf)."""
    x = torch.tensor([0.0, -0.0, 1.5, float("inf")], dtype=dtype)
    out = torch.zeros_like(x)
    negate_kernel[(1,)](x, out, B=4)
    assert torch.equal(out, -x) and torch.equal(out.signbit(), (-x).signbit())


@tile.kernel
def shift_kernel(x, y, out, B: tile.constexpr):
    o = tile.arange(0, B)
    a, b = tile.load(x + o), tile.load(y + o)
    tile.store(out + o, a << b)
    tile.store(out + B + o, a >> b)
    tile.store(out + 2 * B + o, a << 40)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32])
def test_shift_counts_past_the_width(dtype):
    """A shift by the width or more, or by a negative count, is poison in LLVM: x86 took the
    count modulo the width (1 << 32 == 1 in int32, 1 << 8 == 1 in int8). As torch, it now
    shifts everything out: 0, or the sign for >>."""
    x = torch.tensor([1, -8, 5, 3, -1, 7, 1, -3], dtype=dtype)
    y = torch.tensor([32, 33, 8, -1, 100, 2, 0, 64], dtype=dtype)
    out = torch.zeros(24, dtype=dtype)
    shift_kernel[(1,)](x, y, out, B=8)
    assert torch.equal(out, torch.cat([x << y, x >> y, torch.zeros_like(x)]))


@tile.kernel
def floor_division_kernel(x, y, out, B: tile.constexpr):
    o = tile.arange(0, B)
    tile.store(out + o, tile.load(x + o) // tile.load(y + o))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_float_floor_division(dtype):
    """Float // was floor(a / b), one too high where a / b rounds up to an integer:
    1.0 // 0.1 gave 10.0 (torch and Python: 9.0); f16 also divided in f16."""
    x = torch.tensor([1.0, -1.0, 5.0, 7.0, -0.0, 1.0, -3.5, 3.0], dtype=dtype)
    y = torch.tensor([0.1, 0.1, -0.1, -2.0, 3.0, 0.0, 2.0, float("inf")], dtype=dtype)
    out = torch.zeros_like(x)
    floor_division_kernel[(1,)](x, y, out, B=8)
    want = torch.floor_divide(x, y)
    assert torch.equal(out, want) and torch.equal(out.signbit(), want.signbit())


@tile.kernel
def sum_kernel(x, out, B: tile.constexpr):
    tile.store(out, tile.sum(tile.load(x + tile.arange(0, B)), axis=0))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_16_bit_sums_add_up_in_f32(dtype, gpu_target):
    """A 16-bit float sum added up in its own type: on the CPU 4096 ones summed to 2048 in
    f16 and 256 in bf16 (where adding 1 no longer changes the sum). It now adds in f32, as torch."""
    x, out = torch.ones(4096, dtype=dtype), torch.zeros(1, dtype=dtype)
    sum_kernel[(1,)](x, out, B=4096)
    assert out.item() == 4096
    gpu_target()
    sum_kernel.compile(x.to("meta"), out.to("meta"), B=4096)


@tile.kernel
def other_kernel(x, out, OTHER: tile.constexpr, B: tile.constexpr):
    o = tile.arange(0, B)
    tile.store(out + o, tile.load(x + o, mask=o < 2, other=OTHER))


@pytest.mark.parametrize("dtype, other", [(torch.int8, 300), (torch.int32, 2**40), (torch.int32, float("nan")),
                                          (torch.int32, 1e10), (torch.int64, 1.5)])
def test_constants_a_type_cannot_hold(dtype, other):
    """A constant was cut to its type's bits: other=300 read 44 from an int8 tensor, 2**40
    read 0 from an int32 one, and nan or 1e10 read garbage (fptosi's poison)."""
    x = torch.zeros(4, dtype=dtype)
    with pytest.raises(tile.CompilationError, match=rf"test_fuzz_numerics.py:\d+:\d+: {other!r} does not fit in tile"):
        other_kernel[(1,)](x, x, OTHER=other, B=4)
    b = torch.zeros(4, dtype=torch.bool)
    other_kernel[(1,)](b, b, OTHER=other, B=4)  # (nonzero is True, as a conversion to bool)
    assert b.tolist() == [False, False, True, True]


@tile.kernel
def wide_range_kernel(out):
    n = tile.zeros((), tile.int64)
    for i in range(2**32, 2**32 + 3 * 2**31, 2**31):
        n = n * 1000 + (i >> 31)
    tile.store(out, n)


def test_range_bounds_past_int32():
    """Constant range bounds were made int32, cut to their low bits: this loop ran 0 times."""
    out = torch.zeros(1, dtype=torch.int64)
    wide_range_kernel[(1,)](out)
    assert out.item() == 2003004


@tile.kernel
def strided_rows_kernel(x, out, sizes, R: tile.constexpr, C: tile.constexpr):
    r, c = tile.arange(0, R)[:, None], tile.arange(0, C)[None, :]
    tile.store(out + r * C + c, tile.load(x + r * x.stride(0) + c * x.stride(1)))
    tile.store(sizes, x.size(0))


def test_strides_and_sizes_past_int32():
    """x.stride(d) and x.size(d) were cut to int32: a row 2**32 + 8 elements on read
    element 8 (further strides segfaulted), and a size of 2**31 + 5 read negative. A tensor
    whose offsets may pass int32 is now specialized, its strides and sizes int64."""
    out, sizes = torch.zeros(2, 4, dtype=torch.int8), torch.zeros(1, dtype=torch.int64)
    for _ in range(3):  # the launch binder's key tells the wide tensors below from these
        strided_rows_kernel[(1,)](torch.arange(8, dtype=torch.int8).view(2, 4), out, sizes, R=2, C=4)
    store = torch.empty(2**32 + 16, dtype=torch.int8)  # (never touched but for these: 4 GB unmapped)
    store[:16] = torch.arange(16)
    store[2**32 + 8 : 2**32 + 12] = torch.arange(100, 104)
    x = store.as_strided((2, 4), (2**32 + 8, 1))
    strided_rows_kernel[(1,)](x, out, sizes, R=2, C=4)
    assert torch.equal(out, x) and sizes.item() == 2
    strided_rows_kernel[(1,)](torch.zeros(1, dtype=torch.int8).expand(2**31 + 5)[None, :].t(), out, sizes, R=1, C=1)
    assert sizes.item() == 2**31 + 5


@tile.kernel
def mask_times_one_kernel(x, out, B: tile.constexpr):
    o = tile.arange(0, B)
    m = tile.load(x + o) > 0
    tile.store(out + o, ~(m * 1))
    tile.store(out + B + o, ~(1 * m))


def test_bool_times_one_is_int32():
    """x * 1 was folded to x, so a mask times 1 stayed a bool: ~(mask * 1) was a logical not
    (0 and 1) where bools multiply as int32 (-2 and -1)."""
    x, out = torch.tensor([1.0, -1.0]), torch.zeros(4, dtype=torch.int32)
    mask_times_one_kernel[(1,)](x, out, B=2)
    assert out.tolist() == [-2, -1, -2, -1]


@tile.kernel
def runtime_step_kernel(out, a, b, k):
    n = tile.zeros((), tile.int32)
    for i in range(a, b, k):
        n = n * 10 + i
    tile.store(out, n)
    m = tile.zeros((), tile.int32)
    for i in range(3, 0, k):  # (constant bounds)
        m = m * 10 + i
    tile.store(out + 1, m)


@pytest.mark.parametrize("a, b, k", [(5, 0, -1), (5, 0, -2), (0, 5, -1), (0, 5, 0), (0, 5, 2), (1, 8, 3)])
def test_runtime_loop_steps(a, b, k):
    """A run-time step went to scf.for as it was: a negative one ran no iteration where Python
    counts down (or ~2**32 of them from 0 to 5), and a zero one never ended. Such steps now
    loop over the trip count (none for a zero step)."""
    out = torch.zeros(2, dtype=torch.int32)
    runtime_step_kernel[(1,)](out, a, b, k)
    want = [0, 0]
    for i in range(a, b, k) if k else []:
        want[0] = want[0] * 10 + i
    for i in range(3, 0, k) if k else []:
        want[1] = want[1] * 10 + i
    assert out.tolist() == want


@tile.kernel
def f16_constants_kernel(x, out, B: tile.constexpr):
    o = tile.arange(0, B)
    v = tile.load(x + o)
    tile.store(out + o, v * 100000.0)
    tile.store(out + B + o, v * 1e-8 * 1e8)


def test_float_constants_that_overflow_the_tile_type():
    """A Python float next to an f16 tile took f16 even where it overflows: 1e5 became inf,
    so 0 * 1e5 was NaN (torch: 0). Such a constant now takes the first wider type, as an int does."""
    x = torch.tensor([0.001, 1.0, 0.0, -0.5], dtype=torch.float16)
    out = torch.zeros(8, dtype=torch.float16)
    f16_constants_kernel[(1,)](x, out, B=4)
    assert torch.equal(out, torch.cat([x * 100000.0, x * 1e-8 * 1e8]))


def test_long_float_sums_as_accurate_as_torch():
    """The CPU target added a float sum's elements in one running sum: 65536 values in
    [0, 1) came out 5e-6 off (torch: 1e-7), past assert_close's f32 tolerance. The axis is
    now folded in halves first, as a GPU's shuffle tree adds."""
    torch.manual_seed(0)
    x, out = torch.rand(65536), torch.zeros(1)
    sum_kernel[(1,)](x, out, B=65536)
    torch.testing.assert_close(out[0], x.sum())


@tile.kernel
def signed_zero_kernel(x, y, out, B: tile.constexpr):
    o = tile.arange(0, B)
    a, b = tile.load(x + o), tile.load(y + o)
    tile.store(out + o, tile.maximum(a, b))
    tile.store(out + B + o, tile.minimum(a, b))
    tile.store(out + 2 * B, tile.max(a, axis=0))
    tile.store(out + 2 * B + 1, tile.min(b, axis=0))


def test_maximum_and_minimum_order_signed_zeros():
    """arith-expand (the CPU pipeline's, for bf16 rounding) made maximumf `a > b ? a : b`:
    maximum(0.0, -0.0) and the max of [0.0, -0.0] were -0.0, minimum(-0.0, 0.0) +0.0. As
    maximumf promises (and a GPU's max.f32 gives), -0.0 < +0.0 again; NaN still wins."""
    x = torch.tensor([0.0, -0.0, float("nan"), 1.0])
    y = torch.tensor([-0.0, 0.0, 1.0, 0.0])
    out = torch.zeros(10)
    signed_zero_kernel[(1,)](x[:2], y[:2], out[:6], B=2)
    assert out[:6].tolist() == [0.0, 0.0, -0.0, -0.0, 0.0, -0.0]
    assert out[:6].signbit().tolist() == [False, False, True, True, False, True]
    signed_zero_kernel[(1,)](x[2:], y[2:], out[:6], B=2)
    assert out[:6].isnan().tolist() == [True, False, True, False, True, False]
