"""Conversion to float8 (`x.to(tile.float8e4m3)`, `.to(tile.float8e5m2)`, or a store into a
float8 tensor): rounded to nearest even, bit for bit as torch's `.to(torch.float8_e4m3fn)` /
`.to(torch.float8_e5m2)` (e4m3 saturates to ±448, infinities too; e5m2 overflows to ±inf;
NaN stays NaN with its sign); on the CPU and sm_80 by integer encode, on sm_89+ by
`cvt.rn.satfinite.e4m3x2.f32` (`.e5m2x2`)."""

import pytest
import torch

import tile

FORMATS = {"e4m3": (torch.float8_e4m3fn, tile.float8e4m3), "e5m2": (torch.float8_e5m2, tile.float8e5m2)}


@tile.kernel
def narrow_kernel(x, o4, o5, n, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    m = offs < n
    v = tile.load(x + offs, mask=m)
    tile.store(o4 + offs, v.to(tile.float8e4m3, fp_downcast_rounding="rtne"), mask=m)
    tile.store(o5 + offs, v.to(tile.float8e5m2), mask=m)


def _narrow(x):
    """(x as e4m3, x as e5m2) by the kernel, as bytes."""
    n = x.numel()
    o4, o5 = torch.empty(n, dtype=torch.float8_e4m3fn), torch.empty(n, dtype=torch.float8_e5m2)
    narrow_kernel[(tile.cdiv(n, 1024),)](x, o4, o5, n, BLOCK=1024)
    return o4.view(torch.uint8), o5.view(torch.uint8)


def _torch_bytes(x):
    return x.to(torch.float8_e4m3fn).view(torch.uint8), x.to(torch.float8_e5m2).view(torch.uint8)


def _f32_cases():
    """Every float8 value of both formats, the midpoints between neighbours (the ties), each a
    few f32 ulps either side, the subnormals' range, the overflow thresholds, specials and
    random values over the whole f32 range."""
    values = [torch.arange(256, dtype=torch.int32).to(torch.uint8).view(t).float() for t, _ in FORMATS.values()]
    cases = []
    for v in values:
        v = v[torch.isfinite(v)].unique()
        mid = (v[1:] + v[:-1]) / 2  # (exact in f32: float8 values have four significant bits)
        cases += [v, mid, mid.nextafter(mid + 1), mid.nextafter(mid - 1), mid + 4e-45 * (mid == 0)]
    special = torch.tensor([float("inf"), float("-inf"), float("nan"), -float("nan"), 0.0, -0.0, 1e-45, -1e-45,
                            448.0, 464.0, 464.00003, 480.0, 57344.0, 61439.996, 61440.0, 65504.0, 1e38, 3.4e38])
    g = torch.Generator().manual_seed(0)
    random = torch.randn(20000, generator=g) * torch.exp2(torch.randint(-30, 30, (20000,), generator=g).float())
    x = torch.cat([*cases, special, -special, random])
    return torch.cat([x, -x])


def test_f32_narrows_as_torch_bit_for_bit():
    x = _f32_cases()
    got, want = _narrow(x), _torch_bytes(x)
    for g, w, fmt in zip(got, want, FORMATS):
        bad = (g != w).nonzero().flatten()
        assert bad.numel() == 0, f"{fmt}: {x[bad[:8]].tolist()} gave {g[bad[:8]].tolist()}, torch {w[bad[:8]].tolist()}"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_every_16_bit_value_narrows_as_torch(dtype):
    """All 65536 f16 (bf16) values; f64 ones rounded to f32 first, as torch rounds them."""
    if dtype == torch.float64:
        x = _f32_cases().double() * (1 + 2.0**-30)  # (f32 ties, nudged off them in f64 only)
    else:
        x = torch.arange(-2**15, 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
    got, want = _narrow(x), _torch_bytes(x)
    for g, w in zip(got, want):
        assert torch.equal(g, w)


def test_every_code_round_trips():
    """A float8 code widened and narrowed again is itself (a NaN a NaN of its sign)."""
    @tile.kernel
    def round_trip_kernel(a, b, out_a, out_b):
        offs = tile.arange(0, 256)
        pa, pb = a + offs, b + offs
        tile.store(out_a + offs, tile.load(pa).to(tile.float32).to(tile.float8e4m3))
        tile.store(out_b + offs, tile.load(pb).to(tile.float16).to(tile.float8e5m2))

    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    a, b = codes.view(torch.float8_e4m3fn), codes.view(torch.float8_e5m2)
    out_a, out_b = torch.empty_like(a), torch.empty_like(b)
    round_trip_kernel[(1,)](a, b, out_a, out_b)
    assert torch.equal(out_a.view(torch.uint8), codes)
    got_b = out_b.view(torch.uint8)
    nan = (codes & 0x7F) > 0x7C  # (e5m2 has several NaN codes; the compiler may keep the one it read)
    assert torch.equal(got_b[~nan], codes[~nan])
    assert ((got_b[nan] & 0x7F) > 0x7C).all() and torch.equal(got_b[nan] & 0x80, codes[nan] & 0x80)


@tile.kernel
def quantize_kernel(x, scale, out, M, N, stride_xm, stride_om, BM: tile.constexpr, BN: tile.constexpr):
    """out = (x * scale[col]).to(e4m3): quantizing a 2-D strided tensor, masked at both edges,
    stored through the store's implicit conversion."""
    rm = tile.program_id(0) * BM + tile.arange(0, BM)
    rn = tile.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    v = tile.load(x + rm[:, None] * stride_xm + rn[None, :], mask=m, other=0.0)
    s = tile.load(scale + rn, mask=rn < N, other=1.0)
    tile.store(out + rm[:, None] * stride_om + rn[None, :], v * s[None, :], mask=m)


def test_quantize_strided_views():
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(37, 80, generator=g) * 200).to(torch.bfloat16)[:, :29]  # (a strided view, odd sizes)
    scale = torch.rand(29, generator=g) * 4
    out = torch.zeros(37, 64, dtype=torch.float8_e4m3fn)
    view = out[:, 3:32]
    quantize_kernel[(tile.cdiv(37, 16),)](x, scale, view, 37, 29, x.stride(0), view.stride(0), BM=16, BN=32)
    want = (x.float() * scale).to(torch.float8_e4m3fn)  # (bf16 * f32 is f32, in both)
    assert torch.equal(view.view(torch.uint8), want.view(torch.uint8))
    assert not out.view(torch.uint8)[:, :3].any() and not out.view(torch.uint8)[:, 32:].any()


def test_constants_narrow_as_values_do():
    @tile.kernel
    def constant_kernel(o4, o5):
        offs = tile.arange(0, 4)
        tile.store(o4 + offs, tile.full([4], 1000.0, tile.float32).to(tile.float8e4m3))
        tile.store(o5 + offs, tile.full([4], -70000.0, tile.float32).to(tile.float8e5m2))

    o4, o5 = torch.empty(4, dtype=torch.float8_e4m3fn), torch.empty(4, dtype=torch.float8_e5m2)
    constant_kernel[(1,)](o4, o5)
    assert o4.float().tolist() == [448.0] * 4 and o5.float().tolist() == [float("-inf")] * 4


def test_other_rounding_is_an_error():
    @tile.kernel
    def rtz_kernel(x, out):
        offs = tile.arange(0, 16)
        tile.store(out + offs, tile.load(x + offs).to(tile.float8e5m2, fp_downcast_rounding="rtz"))

    with pytest.raises(tile.CompilationError, match="fp_downcast_rounding='rtz' is not supported") as info:
        rtz_kernel[(1,)](torch.zeros(16), torch.empty(16, dtype=torch.float8_e5m2))
    assert 'fp_downcast_rounding="rtz"' in str(info.value)


@tile.kernel
def exact_dot_kernel(a, b, out):
    """An exact f32 dot (the GPU's linalg path) quantized to e4m3."""
    r = tile.arange(0, 16)
    acc = tile.dot(tile.load(a + r[:, None] * 16 + r[None, :]), tile.load(b + r[:, None] * 16 + r[None, :]))
    tile.store(out + r[:, None] * 16 + r[None, :], acc.to(tile.float8e4m3))


def test_exact_dot_quantized(gpu_target):
    g = torch.Generator().manual_seed(4)
    a, b = torch.randn(16, 16, generator=g) * 8, torch.randn(16, 16, generator=g) * 8
    out = torch.empty(16, 16, dtype=torch.float8_e4m3fn)
    exact_dot_kernel[(1,)](a, b, out)
    want = (a.double() @ b.double()).float().to(torch.float8_e4m3fn)  # (an f32 sum's last bit rarely moves a code)
    assert (out.view(torch.uint8) != want.view(torch.uint8)).sum() <= 2 and (out.float().abs() == 448).any()
    gpu_target("sm_90a")
    exact_dot_kernel.compile(a.to("meta"), b.to("meta"), out.to("meta"))  # (integer encode on that path)


@pytest.mark.parametrize("src", [torch.float32, torch.float16])
@pytest.mark.parametrize("target, cvt", [("sm_90a", True), ("sm_80", False)])
def test_gpu_narrowing(target, cvt, src, gpu_target):
    gpu_target(target)
    x = torch.empty(1000, dtype=src, device="meta")
    outs = [torch.empty(1000, dtype=t, device="meta") for t, _ in FORMATS.values()]
    ptx = narrow_kernel.compile(x, *outs, 1000, BLOCK=1024).asm["ptx"]
    for fmt in FORMATS:
        assert (f"cvt.rn.satfinite.{fmt}x2.f32" in ptx) == cvt, fmt
    assert "st.global" in ptx
