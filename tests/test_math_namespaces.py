"""Triton's math namespaces, `tile.math` and `tile.extra.libdevice`: every function against
torch (computed in f64, then rounded) on the CPU target, special values included, and
compiled for sm_90a / sm_80, whose LLVM IR calls the libdevice function meant (`__nv_asinf`,
`__nv_tanhf`: full precision, where `tile.tanh` is `tanh.approx.f32`)."""

import functools
import re

import pytest
import torch

import tile
from tile.extra import libdevice
from tile.extra.cuda import libdevice as cuda_libdevice


def _cbrt(x):
    return torch.sign(x) * x.abs().pow(1 / 3)


def _round_half_away(x):
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


# name: the torch reference, on f64 inputs; the kernel computes them in this order
UNARY = {
    "acos": torch.acos, "acosh": torch.acosh, "asin": torch.asin, "asinh": torch.asinh, "atan": torch.atan,
    "atanh": torch.atanh, "cbrt": _cbrt, "cos": torch.cos, "cosh": torch.cosh, "erf": torch.erf, "erfc": torch.erfc,
    "erfinv": torch.erfinv, "exp": torch.exp, "exp10": lambda x: torch.pow(10.0, x), "exp2": torch.exp2,
    "expm1": torch.expm1, "log": torch.log, "log10": torch.log10, "log1p": torch.log1p, "log2": torch.log2,
    "sin": torch.sin, "sinh": torch.sinh, "sqrt": torch.sqrt, "sqrt_rn": torch.sqrt, "rsqrt": torch.rsqrt,
    "tan": torch.tan, "tanh": torch.tanh, "floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc,
    "round": _round_half_away, "rint": torch.round, "nearbyint": torch.round, "abs": torch.abs, "fabs": torch.abs,
}
BINARY = {
    "atan2": torch.atan2, "copysign": torch.copysign, "fmod": torch.fmod, "fmin": torch.fmin, "fmax": torch.fmax,
    "div_rn": torch.div, "pow": torch.pow, "hypot": torch.hypot,
}
PREDICATES = {"isnan": torch.isnan, "isinf": torch.isinf, "isfinite": torch.isfinite, "signbit": torch.signbit}


@tile.kernel
def unary_kernel(x, out, n, BLOCK: tile.constexpr):
    """Row i of out is UNARY's function i of x (libdevice's; sqrt_rn is tile.math's)."""
    offs = tile.arange(0, BLOCK)
    m = offs < n
    v = tile.load(x + offs, mask=m, other=0.5)
    results = (
        libdevice.acos(v), libdevice.acosh(v), libdevice.asin(v), libdevice.asinh(v), libdevice.atan(v),
        libdevice.atanh(v), libdevice.cbrt(v), libdevice.cos(v), libdevice.cosh(v), libdevice.erf(v),
        libdevice.erfc(v), libdevice.erfinv(v), libdevice.exp(v), libdevice.exp10(v), libdevice.exp2(v),
        libdevice.expm1(v), libdevice.log(v), libdevice.log10(v), libdevice.log1p(v), libdevice.log2(v),
        libdevice.sin(v), libdevice.sinh(v), libdevice.sqrt(v), tile.math.sqrt_rn(v), libdevice.rsqrt(v),
        libdevice.tan(v), libdevice.tanh(v), libdevice.floor(v), libdevice.ceil(v), libdevice.trunc(v),
        libdevice.round(v), libdevice.rint(v), libdevice.nearbyint(v), libdevice.abs(v), libdevice.fabs(v),
    )
    for i in tile.static_range(len(results)):
        tile.store(out + i * n + offs, results[i], mask=m)


@tile.kernel
def binary_kernel(x, y, out, flags, n, BLOCK: tile.constexpr):
    """Rows of out: BINARY's functions of (x, y), then pow(x, 3) and pow(x, -2); rows of
    flags: PREDICATES' of x."""
    offs = tile.arange(0, BLOCK)
    m = offs < n
    a = tile.load(x + offs, mask=m, other=1.0)
    py = y + offs  # (a pointer increment, as well as the indexing above)
    b = tile.load(py, mask=m, other=1.0)
    results = (
        libdevice.atan2(a, b), libdevice.copysign(a, b), libdevice.fmod(a, b), libdevice.fmin(a, b),
        libdevice.fmax(a, b), tile.math.div_rn(a, b), libdevice.pow(a, b), libdevice.hypot(a, b),
        cuda_libdevice.pow(a, 3), tile.math.pow(a, -2),
    )
    for i in tile.static_range(len(results)):
        tile.store(out + i * n + offs, results[i], mask=m)
    bits = (libdevice.isnan(a), libdevice.isinf(a), libdevice.isfinite(a), libdevice.signbit(a))
    for i in tile.static_range(len(bits)):
        tile.store(flags + i * n + offs, bits[i], mask=m)


SPECIAL = [float("inf"), float("-inf"), float("nan"), -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.5, 1e-30, -1e-9,
           0.9999, -0.99999, 1e-5, 100.0, -100.0, 7.0, 1.5]


def _inputs(dtype, n=203, seed=0):
    """n values (not a multiple of the block): the special ones, then some in [-1, 1]
    (asin, erfinv, atanh's domain) and some wider."""
    g = torch.Generator().manual_seed(seed)
    x = torch.cat([torch.tensor(SPECIAL), torch.rand(90, generator=g) * 2 - 1, torch.randn(n - 90 - len(SPECIAL), generator=g) * 4])
    return x.to(dtype)


TOLERANCE = {torch.float32: 2e-6, torch.float64: 1e-13, torch.float16: 1e-3, torch.bfloat16: 8e-3}
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@functools.cache
def _unary_results(dtype):
    x = _inputs(dtype)
    out = torch.empty(len(UNARY), x.numel(), dtype=dtype)
    unary_kernel[(1,)](x, out, x.numel(), BLOCK=256)
    return x, out


@functools.cache
def _binary_results(dtype):
    x, y = _inputs(dtype), _inputs(dtype, seed=1).flip(0)
    out = torch.empty(len(BINARY) + 2, x.numel(), dtype=dtype)
    flags = torch.empty(len(PREDICATES), x.numel(), dtype=torch.bool)
    binary_kernel[(1,)](x, y, out, flags, x.numel(), BLOCK=256)
    return x, y, out, flags


def _check(got, want, dtype, name):
    tol = TOLERANCE[dtype]
    if name in ("erfinv", "tan") and dtype == torch.float32:  # steep near ±1 and ±pi/2: 2 ulp there
        tol = 3e-6
    torch.testing.assert_close(got, want.to(dtype), equal_nan=True, atol=tol, rtol=tol, msg=name)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
@pytest.mark.parametrize("name", UNARY)
def test_unary_function_matches_torch(name, dtype):
    x, out = _unary_results(dtype)
    _check(out[list(UNARY).index(name)], UNARY[name](x.double()), dtype, name)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
@pytest.mark.parametrize("name", [*BINARY, "powi3", "powi-2"])
def test_binary_function_matches_torch(name, dtype):
    x, y, out, _ = _binary_results(dtype)
    a, b = x.double(), y.double()
    want = {"powi3": a**3, "powi-2": a**-2}[name] if name.startswith("powi") else BINARY[name](a, b)
    got = out[[*BINARY, "powi3", "powi-2"].index(name)]
    if name == "div_rn" and dtype in (torch.float32, torch.float64):  # correctly rounded: bit for bit
        torch.testing.assert_close(got, want.to(dtype), rtol=0, atol=0, equal_nan=True)
    else:
        _check(got, want, dtype, name)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_predicates_match_torch(dtype):
    x, _, _, flags = _binary_results(dtype)
    for row, (name, fn) in zip(flags, PREDICATES.items()):
        assert torch.equal(row, fn(x)), name


def test_edge_values_are_exact():
    """erfinv's poles and domain, expm1 / log1p near 0 (where exp(x) - 1 gives 0), hypot
    without overflow and with an infinite operand beside a NaN (C's hypot: inf)."""
    x, out = _unary_results(torch.float32)
    row = dict(zip(UNARY, out))
    assert row["erfinv"][x == 1.0].item() == float("inf") and row["erfinv"][x == -1.0].item() == float("-inf")
    assert torch.isnan(row["erfinv"][x.abs() > 1]).all()
    tiny = x == torch.tensor(-1e-9)
    assert row["expm1"][tiny].item() == torch.tensor(-1e-9).item() == row["log1p"][tiny].item()

    @tile.kernel
    def hypot_kernel(x, y, out):
        offs = tile.arange(0, 4)
        tile.store(out + offs, libdevice.hypot(tile.load(x + offs), tile.load(y + offs)))

    a = torch.tensor([3e30, float("inf"), float("nan"), -3.0])
    b = torch.tensor([4e30, float("nan"), float("-inf"), 4.0])
    out = torch.empty(4)
    hypot_kernel[(1,)](a, b, out)
    assert out[1:].tolist() == [float("inf"), float("inf"), 5.0]
    torch.testing.assert_close(out, torch.hypot(a.double(), b.double()).float(), rtol=0, atol=0)


@tile.kernel
def namespace_kernel(x, y, i, j, out, hi, n, BLOCK: tile.constexpr):
    """tile.math's own functions (Triton's tl.math), over a 2-D strided view."""
    r = tile.arange(0, BLOCK)[:, None]
    c = tile.arange(0, 4)[None, :]
    m = (r < n) & (c < 4)
    a = tile.load(x + r * 4 + c, mask=m, other=1.0)
    b = tile.load(y + r * 4 + c, mask=m, other=1.0)
    results = (tile.math.fdiv(a, b), tile.math.fdiv(a, b, ieee_rounding=True), tile.math.fma(a, b, a),
               tile.math.exp(a), tile.math.erf(a), tile.math.rsqrt(tile.math.abs(a)))
    for k in tile.static_range(len(results)):
        tile.store(out + k * n * 4 + r * 4 + c, results[k], mask=m)
    u = tile.load(i + r * 4 + c, mask=m, other=0)
    v = tile.load(j + r * 4 + c, mask=m, other=0)
    tile.store(hi + r * 4 + c, tile.math.umulhi(u, v), mask=m)


def test_tile_math_namespace():
    assert tile.math.exp is tile.exp and tile.math.sqrt is tile.sqrt  # the same functions, as in Triton
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(13, 8, generator=g)[:, ::2], torch.randn(13, 4, generator=g)  # x a strided view
    i = torch.randint(-2**31, 2**31, (13, 4), generator=g, dtype=torch.int64).to(torch.int32)
    j = torch.randint(-2**31, 2**31, (13, 4), generator=g, dtype=torch.int64).to(torch.int32)
    out, hi = torch.empty(6, 13, 4), torch.empty(13, 4, dtype=torch.int32)
    namespace_kernel[(1,)](x.contiguous(), y, i, j, out, hi, 13, BLOCK=16)
    a, b = x.double(), y.double()
    torch.testing.assert_close(out[1], (a / b).float(), rtol=0, atol=0)
    for k, want in enumerate([a / b, a / b, a * b + a, a.exp(), a.erf(), a.abs().rsqrt()]):
        torch.testing.assert_close(out[k], want.float(), rtol=2e-6, atol=2e-6)
    unsigned = lambda t: t.to(torch.int64) & 0xFFFFFFFF  # noqa: E731
    want = ((unsigned(i) * unsigned(j)) >> 32).to(torch.int32)  # (as uint64: the product fits 64 bits)
    assert torch.equal(hi, want)


@tile.kernel
def umulhi_kernel(i, j, out, n, BLOCK: tile.constexpr):
    offs = tile.arange(0, BLOCK)
    pi, pj = i + offs, j + offs
    tile.store(out + offs, tile.math.umulhi(tile.load(pi, mask=offs < n), tile.load(pj, mask=offs < n)), mask=offs < n)


def test_umulhi_int64(gpu_target):
    g = torch.Generator().manual_seed(3)
    i, j = (torch.randint(-2**63, 2**63 - 1, (19,), generator=g, dtype=torch.int64) for _ in range(2))
    out = torch.empty_like(i)
    umulhi_kernel[(1,)](i, j, out, 19, BLOCK=32)
    want = [((a % 2**64) * (b % 2**64)) >> 64 for a, b in zip(i.tolist(), j.tolist())]
    assert out.tolist() == [w - 2**64 if w >= 2**63 else w for w in want]
    gpu_target("sm_90a")
    assert "mul.hi.u64" in umulhi_kernel.compile(i.to("meta"), j.to("meta"), out.to("meta"), 19, BLOCK=32).asm["ptx"]


def test_bad_operands_are_errors_at_their_line():
    @tile.kernel
    def bad(x, out):
        offs = tile.arange(0, 4)
        tile.store(out + offs, libdevice.isnan(tile.load(x + offs)))

    with pytest.raises(tile.CompilationError, match=r"isnan needs a float operand.*\n.*libdevice\.isnan"):
        bad[(1,)](torch.zeros(4, dtype=torch.int32), torch.empty(4, dtype=torch.bool))
    with pytest.raises(tile.TileError, match="inside a @tile.kernel"):
        libdevice.tanh(1.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_gpu_calls_libdevice(target, dtype, gpu_target):
    gpu_target(target)
    x = _inputs(dtype).to("meta")
    launcher = unary_kernel.compile(x, torch.empty(len(UNARY), x.numel(), dtype=dtype, device="meta"), x.numel(), BLOCK=256)
    ll, ptx = launcher.asm["llvm"], launcher.asm["ptx"]
    suffix = "f" if dtype == torch.float32 else ""
    for fn in ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "cosh", "erfc", "expm1", "log10", "log1p",
               "sinh", "tan", "tanh", "exp", "log", "exp2", "round", "rint", "pow"):
        assert f"@__nv_{fn}{suffix}(" in ll, fn
    assert "tanh.approx" not in ptx  # (libdevice.tanh: __nv_tanhf, full precision)
    if dtype == torch.float32:
        assert "sqrt.rn.f32" in ptx and "sqrt.approx.f32" in ptx  # sqrt_rn, and libdevice.sqrt as tile.sqrt


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_gpu_binary_functions(target, gpu_target):
    gpu_target(target)
    x = _inputs(torch.float32).to("meta")
    launcher = binary_kernel.compile(x, x, torch.empty(len(BINARY) + 2, x.numel(), device="meta"),
                                     torch.empty(len(PREDICATES), x.numel(), dtype=torch.bool, device="meta"), x.numel(), BLOCK=256)
    ll, ptx = launcher.asm["llvm"], launcher.asm["ptx"]
    for fn in ("atan2f", "fmodf", "powf", "powif", "fminf", "fmaxf"):
        assert f"@__nv_{fn}(" in ll, fn
    assert "div.rn.f32" in ptx and "div.full.f32" not in ptx  # div_rn: IEEE


def test_gpu_exact_forms_on_the_linalg_path(gpu_target):
    """A kernel with an exact f32 dot takes the linalg path, whose scalar ops get sqrt_rn's
    and div_rn's IEEE forms too (`exact-f32-ops`)."""
    gpu_target("sm_90a")

    @tile.kernel
    def dot_kernel(a, out):
        r = tile.arange(0, 16)
        x = tile.load(a + r[:, None] * 16 + r[None, :])
        acc = tile.dot(x, x)
        tile.store(out + r[:, None] * 16 + r[None, :], tile.math.sqrt_rn(acc) + tile.math.div_rn(acc, x))

    a = torch.empty(16, 16, device="meta")
    ptx = dot_kernel.compile(a, a).asm["ptx"]
    assert "sqrt.rn.f32" in ptx and "div.rn.f32" in ptx and "sqrt.approx" not in ptx


def test_gpu_tanh_forms(gpu_target):
    """tile.tanh is the SFU's tanh.approx.f32; libdevice.tanh is __nv_tanhf, full precision."""
    gpu_target("sm_90a")

    @tile.kernel
    def tanh_kernel(x, out, FULL: tile.constexpr):
        offs = tile.arange(0, 128)
        v = tile.load(x + offs)
        tile.store(out + offs, libdevice.tanh(v) if FULL else tile.tanh(v))

    x = torch.empty(128, device="meta")
    fast = tanh_kernel.compile(x, x, FULL=False).asm["ptx"]
    full = tanh_kernel.compile(x, x, FULL=True).asm
    assert "tanh.approx.f32" in fast
    assert "tanh.approx" not in full["ptx"] and "@__nv_tanhf(" in full["llvm"]


@tile.kernel
def to_int_kernel(x, out32, out64, n, BLOCK: tile.constexpr):
    """libdevice's float-to-integer conversions, in the order TO_INT names them."""
    offs = tile.arange(0, BLOCK)
    mask = offs < n
    v = tile.load(x + offs, mask=mask, other=0.0)
    tile.store(out64 + offs, libdevice.llrint(v), mask=mask)
    tile.store(out64 + n + offs, libdevice.llround(v), mask=mask)
    tile.store(out64 + 2 * n + offs, cuda_libdevice.float2ll_rn(v), mask=mask)
    tile.store(out64 + 3 * n + offs, cuda_libdevice.float2ll_rz(v), mask=mask)
    tile.store(out64 + 4 * n + offs, cuda_libdevice.float2ll_rd(v), mask=mask)
    tile.store(out64 + 5 * n + offs, cuda_libdevice.float2ll_ru(v), mask=mask)
    tile.store(out32 + offs, libdevice.float2int_rn(v), mask=mask)
    tile.store(out32 + n + offs, libdevice.float2int_rz(v), mask=mask)
    tile.store(out32 + 2 * n + offs, libdevice.float2int_rd(v), mask=mask)
    tile.store(out32 + 3 * n + offs, libdevice.float2int_ru(v), mask=mask)


def test_float_to_int_conversions(gpu_target):
    """bitsandbytes' `libdevice.llrint(127 * x / absmax)`: halves to even (and the other modes)
    on f32 and f16 inputs, negative ones too; on sm_90a the rounding, then an exact conversion."""
    halves = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, -127.49, 3.7, -3.7, 0.0, 1e9])
    for dtype in (torch.float32, torch.float16):
        x = halves[:-1].to(dtype) if dtype == torch.float16 else halves
        n = x.numel()
        out32, out64 = torch.empty(4 * n, dtype=torch.int32), torch.empty(6 * n, dtype=torch.int64)
        to_int_kernel[(1,)](x, out32, out64, n, BLOCK=16)
        v = x.double()
        want = [torch.round(v), _round_half_away(v), torch.round(v), torch.trunc(v), torch.floor(v), torch.ceil(v)]
        assert torch.equal(out64, torch.cat(want).long())
        assert torch.equal(out32, torch.cat([want[0], want[3], want[4], want[5]]).int())
    gpu_target("sm_90a")
    x = halves.to("meta")
    ptx = to_int_kernel.compile(x, torch.empty(48, dtype=torch.int32, device="meta"),
                                torch.empty(72, dtype=torch.int64, device="meta"), 12, BLOCK=16).asm["ptx"]
    assert {"cvt.rni.f32.f32", "cvt.rzi.s64.f32", "cvt.rzi.s32.f32"} <= set(re.findall(r"\bcvt[\w.]*", ptx))
