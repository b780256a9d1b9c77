"""The seed kernels against torch on the CPU target: random sizes (tails that are
not a multiple of the block included), strided views and 16-bit dtypes.

Every case reuses the BLOCK values of the examples, so that the few compiled
specializations are shared with tests/test_examples.py through the cache.
"""

import math

import pytest
import torch

import tile
import add_relu_layernorm
import fused_softmax
import layer_norm
import patch_gather
import vector_add

TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float16: dict(rtol=1e-2, atol=1e-2),
       torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(1234)


@pytest.mark.parametrize("n", [1, 1023, 1024, 5000])
def test_vector_add(n):
    x, y = torch.randn(n), torch.randn(n)
    torch.testing.assert_close(vector_add.add(x, y), x + y)


def test_vector_add_f16():
    x, y = torch.randn(3001).half(), torch.randn(3001).half()
    torch.testing.assert_close(vector_add.add(x, y), x + y)


@pytest.mark.parametrize("rows,cols", [(1, 1), (5, 127), (3, 128), (7, 129), (4, 1000)])
def test_softmax(rows, cols):
    x = torch.randn(rows, cols) * 4
    torch.testing.assert_close(fused_softmax.softmax(x), torch.softmax(x, dim=1))


@pytest.mark.parametrize("cols", [60, 300])
def test_softmax_strided_rows(cols):
    """Every third row of a wider tensor, columns offset by 5: a view read through x.stride(0)."""
    base = torch.randn(30, cols + 11)
    x = base[::3, 5 : 5 + cols]
    assert not x.is_contiguous()
    torch.testing.assert_close(fused_softmax.softmax(x), torch.softmax(x, dim=1))


def test_softmax_large_values_are_stable():
    x = torch.randn(6, 400) * 200
    torch.testing.assert_close(fused_softmax.softmax(x), torch.softmax(x, dim=1))


def test_softmax_f16():
    x = torch.randn(9, 333).half()
    torch.testing.assert_close(fused_softmax.softmax(x), torch.softmax(x.float(), dim=1).half(), **TOL[torch.float16])


def _layer_norm_ref(x, w, b):
    return torch.nn.functional.layer_norm(x.float(), x.shape[-1:], w.float(), b.float()).to(x.dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 256), (5, 257), (2, 1000)])
def test_layer_norm(dtype, rows, cols):
    x = (torch.randn(rows, cols) * 2 - 1).to(dtype)
    w, b = torch.randn(cols).to(dtype), torch.randn(cols).to(dtype)
    torch.testing.assert_close(layer_norm.layer_norm(x, w, b), _layer_norm_ref(x, w, b), **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_layer_norm_strided_rows(dtype):
    x = torch.randn(12, 700).to(dtype)[1::2, 50:663]
    w, b = torch.randn(613).to(dtype), torch.randn(613).to(dtype)
    torch.testing.assert_close(layer_norm.layer_norm(x, w, b), _layer_norm_ref(x, w, b), **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("rows,cols", [(1, 257), (8, 300), (3, 512)])
def test_add_relu_layernorm(dtype, rows, cols):
    x, r = torch.randn(rows, cols).to(dtype), torch.randn(rows, cols).to(dtype)
    w, b = torch.randn(cols).to(dtype), torch.randn(cols).to(dtype)
    got = add_relu_layernorm.add_relu_layernorm(x, r, w, b)
    torch.testing.assert_close(got, add_relu_layernorm.reference(x, r, w, b), **TOL[dtype])


def test_add_relu_layernorm_noncontiguous_inputs():
    x = torch.randn(300, 10).t()  # (10, 300), column-major: the wrapper makes it contiguous
    r = torch.randn(10, 600)[:, ::2]
    w, b = torch.randn(300), torch.randn(300)
    got = add_relu_layernorm.add_relu_layernorm(x, r, w, b)
    torch.testing.assert_close(got, add_relu_layernorm.reference(x, r, w, b), **TOL[torch.float32])


def _videos():
    yield "contiguous", torch.randn(1, 5, 3, 16, 24)
    yield "channels_last", torch.randn(2, 8, 17, 26, 3).permute(0, 1, 4, 2, 3)
    yield "sliced", torch.randn(3, 12, 3, 40, 40)[:, 2::2, :, 3:36, 1:]
    yield "time_major", torch.randn(7, 2, 3, 16, 16).transpose(0, 1)


@pytest.mark.parametrize("name,video", list(_videos()), ids=[n for n, _ in _videos()])
def test_patch_gather(name, video):
    got = patch_gather.patch_gather(video, pt=2, st=3, ph=8, pw=8)
    torch.testing.assert_close(got, patch_gather.reference(video, 2, 3, 8, 8), rtol=0, atol=0)


def test_patch_gather_f16():
    video = torch.randn(2, 9, 3, 20, 20).half().permute(0, 1, 2, 4, 3)
    got = patch_gather.patch_gather(video, pt=2, st=3, ph=8, pw=8)
    torch.testing.assert_close(got, patch_gather.reference(video, 2, 3, 8, 8), rtol=0, atol=0)


@tile.kernel
def flow_kernel(x, keep, out, counts, n, flip, BLOCK: tile.constexpr):
    """Run-time `if` and `for` carrying several tiles (swapped, too), bool tensors in and out, a mask's count."""
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    inside = offs < n
    a = tile.load(x + offs, mask=inside)
    b = a * 2.0
    if flip > 0:
        a = -a
        b = b + 1.0
    for _ in range(flip):
        a, b = b, a
    kept = tile.load(keep + offs, mask=inside)
    tile.store(out + offs, tile.where(kept, a - b, 0.0), mask=inside)
    tile.store(counts + tile.program_id(0), tile.sum(kept & inside, axis=0))
    tile.store(keep + offs, ~kept, mask=inside)


def _flow_reference(x, keep, flip):
    a, b = x.clone(), x * 2
    if flip > 0:
        a, b = -a, b + 1
    if flip % 2:
        a, b = b, a
    return torch.where(keep, a - b, torch.zeros_like(a))


@pytest.mark.parametrize("n,flip", [(100, 0), (300, 1), (1000, 4), (77, 7)])
def test_control_flow_and_bool_tensors(n, flip):
    block = 128
    x, keep = torch.randn(n), torch.rand(n) > 0.5
    programs = tile.cdiv(n, block)
    out, counts = torch.empty(n), torch.empty(programs, dtype=torch.int32)
    want_keep = ~keep
    want = _flow_reference(x, keep, flip)
    want_counts = torch.nn.functional.pad(keep, (0, programs * block - n)).view(programs, block).sum(1, dtype=torch.int32)
    flow_kernel[(programs,)](x, keep, out, counts, n, flip, BLOCK=block)
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(counts, want_counts)
    assert torch.equal(keep, want_keep)


@tile.kernel
def gather_kernel(x, idx, out, ROWS: tile.constexpr, COLS: tile.constexpr, AXIS: tile.constexpr):
    r, c = tile.arange(0, ROWS), tile.arange(0, COLS)
    at = r[:, None] * COLS + c[None, :]
    tile.store(out + at, tile.gather(tile.load(x + at), tile.load(idx + at), AXIS))


@pytest.mark.parametrize("axis", [0, 1])
def test_gather(axis):
    """tile.gather against torch.gather, indices in range, negative and past the end (taken
    modulo the source's extent: wrapped as unsigned 32-bit values, then reduced)."""
    x = torch.randn(8, 16)
    extent = x.shape[axis]
    idx = torch.randint(-3 * extent, 3 * extent, (8, 16), dtype=torch.int32)
    out = torch.empty(8, 16)
    gather_kernel[(1,)](x, idx, out, ROWS=8, COLS=16, AXIS=axis)
    wrapped = (idx.to(torch.int64) % (1 << 32)) % extent
    torch.testing.assert_close(out, torch.gather(x, axis, wrapped), rtol=0, atol=0)


@tile.kernel
def small_ints_kernel(x, out, BLOCK: tile.constexpr):
    """Integers that `tile-small-int-to-float` converts through the f32's bits: a 22-bit
    field and its negation (|v| < 2^22), and an int8's nibbles less 8."""
    offs = tile.arange(0, BLOCK)
    v = tile.load(x + offs)
    field = v & 0x3FFFFF
    tile.store(out + offs, field.to(tile.float32))
    tile.store(out + (BLOCK + offs), (0 - field).to(tile.float32))
    tile.store(out + (2 * BLOCK + offs), ((v.to(tile.int8).to(tile.int32) & 15) - 8).to(tile.float32))


def test_small_ints_to_float_exact():
    """Every converted value exact, the range's ends (0, +-(2^22 - 1)) included."""
    block = 256
    x = torch.randint(-(1 << 31), (1 << 31) - 1, (block,), dtype=torch.int32)
    x[:4] = torch.tensor([0, (1 << 22) - 1, -1, 1 << 22], dtype=torch.int32)
    out = torch.empty(3 * block)
    small_ints_kernel[(1,)](x, out, BLOCK=block)
    field = (x.to(torch.int64) & 0x3FFFFF)
    assert torch.equal(out[:block], field.to(torch.float32))
    assert torch.equal(out[block:2 * block], (-field).to(torch.float32))
    assert torch.equal(out[2 * block:], ((x.to(torch.int8).to(torch.int32) & 15) - 8).to(torch.float32))


@tile.kernel
def to_bf16_kernel(x, out, BLOCK: tile.constexpr):
    offs = tile.arange(0, BLOCK)
    tile.store(out + offs, tile.load(x + offs).to(tile.bfloat16))


def test_f32_to_bf16_rounding():
    """f32 -> bf16 on the CPU target bit for bit as torch: ties to even both ways, the
    carry into the exponent, overflow to inf, NaN, signed zero and subnormals."""
    special = [1.00390625, 1.01171875, -1.00390625, 3.4e38, float("inf"), float("-inf"),
               float("nan"), -0.0, 1e-40, 1.9921875 + 2**-9]
    x = torch.cat([torch.tensor(special), torch.randn(256 - len(special)) * 1e3])
    out = torch.empty(256, dtype=torch.bfloat16)
    to_bf16_kernel[(1,)](x, out, BLOCK=256)
    want = x.to(torch.bfloat16)
    assert torch.equal(out.view(torch.int16)[~want.isnan()], want.view(torch.int16)[~want.isnan()])
    assert out[want.isnan()].isnan().all()


@tile.kernel
def from_f64_kernel(x, half, brain, BLOCK: tile.constexpr):
    offs = tile.arange(0, BLOCK)
    v = tile.load(x + offs)
    tile.store(half + offs, v.to(tile.float16))
    tile.store(brain + offs, v.to(tile.bfloat16))


def _round_nearest_even(x: float, bits: int, min_exp: int, max_exp: int) -> float:
    """x rounded once, to nearest even, to a float with `bits` significand bits after the
    point, normal exponents from min_exp to max_exp (subnormals below), inf past them."""
    if x != x or x in (float("inf"), float("-inf")) or x == 0:
        return x
    _, e = math.frexp(x)  # |x| = m * 2**e, 0.5 <= m < 1
    quantum = 2.0 ** (max(e - 1, min_exp) - bits)
    r = math.copysign(round(x / quantum) * quantum, x)  # exact: a power-of-two quantum; round() ties to even
    return math.copysign(float("inf"), x) if abs(r) >= 2.0 ** (max_exp + 1) else r


def test_f64_to_f16_and_bf16_rounding():
    """f64 -> f16 and -> bf16 on the CPU target (the JIT lacked both libcalls), rounded once
    to nearest even (checked against exact arithmetic; torch's own conversion on the CPU
    rounds through f32 twice): among the inputs, values just off a tie by less than an f32
    ulp, which a plain double rounding gets wrong, and NaN, inf, overflow, subnormals."""
    g = torch.Generator().manual_seed(0)
    ties = []
    for ulp_bits in (10, 7):  # f16 and bf16 significand bits after the point
        base = torch.rand(64, generator=g, dtype=torch.float64) + 1.0
        tie = (torch.floor(base * 2**ulp_bits) + 0.5) / 2**ulp_bits
        ties += [tie, tie + 2.0**-40, tie - 2.0**-40, -tie - 2.0**-40]
    special = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e300, -1e300, 65520.0,
                            65519.99, 6e-8, 3e-8, 1e-45, 5e-324, 3.4e38 * 1.0000001], dtype=torch.float64)
    rand = torch.randn(400, generator=g, dtype=torch.float64) * torch.exp2(torch.randint(-30, 30, (400,), generator=g))
    x = torch.cat(ties + [special, rand])
    x = torch.cat([x, torch.zeros(1024 - x.numel(), dtype=torch.float64)])
    half, brain = torch.empty(1024, dtype=torch.float16), torch.empty(1024, dtype=torch.bfloat16)
    from_f64_kernel[(1,)](x, half, brain, BLOCK=1024)
    for got, bits, lo, hi in ((half, 10, -14, 15), (brain, 7, -126, 127)):
        want = torch.tensor([_round_nearest_even(v, bits, lo, hi) for v in x.tolist()], dtype=torch.float64)
        ok = ~want.isnan()
        assert torch.equal(got.double()[ok], want[ok]) and torch.equal(got.double()[ok].signbit(), want[ok].signbit())
        assert got[~ok].isnan().all()
