"""uint16, uint32 and uint64 tensors and tiles (Triton's `tl.uint16` .. `tl.uint64`): wrapping
arithmetic, unsigned division, shifts, comparisons (against values >= 2**31), extrema, casts
(`uitofp`, `fptoui`, zero extension, bitcasts), Triton's promotion (uint32 + int32 is a
uint32) and reductions, checked against numpy's unsigned arithmetic on the CPU target with
masks, odd sizes and a strided view; a uint32 hash of the kind library kernels build dropout seeds from, with
pointer increments; compiled for sm_90a, where the PTX uses the unsigned instructions; and the
uses Triton rejects (a negative constant, // of mixed signedness) errors at their line."""

import re

import numpy as np
import pytest
import torch

import tile
from as_triton import run_in_triton

DTYPES = {16: (tile.uint16, np.uint16, torch.uint16), 32: (tile.uint32, np.uint32, torch.uint32),
          64: (tile.uint64, np.uint64, torch.uint64)}
OPS = ["add", "sub", "mul", "floordiv", "mod", "shr", "shl", "lt", "ge_half", "max", "min", "xor_not", "where",
       "to_f32", "from_f32", "widen", "to_signed", "mixed", "umulhi", "bitcast"]


@tile.jit
def _unsigned_op(x, y, out, n, stride_y, OP: tile.constexpr, DT: tile.constexpr, WANT: tile.constexpr, BLOCK: tile.constexpr, ):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    m = offs < n
    a = tile.load(x + offs, mask=m, other=7)
    b = tile.load(y + offs * stride_y, mask=m)
    if OP == "add":
        r = a + b
    elif OP == "sub":
        r = a - b
    elif OP == "mul":
        r = a * b + 3
    elif OP == "floordiv":
        r = a // b  # (b == 0: a)
    elif OP == "mod":
        r = a % (b | 1)
    elif OP == "shr":
        r = a >> (b % 13)
    elif OP == "shl":
        r = a << (b % 13)
    elif OP == "lt":
        r = (a < b).to(DT) + (b > a)
    elif OP == "ge_half":  # (a signed compare would take these for negative)
        r = tile.where(a >= (1 << (DT.primitive_bitwidth - 1)), a - 1, b)
    elif OP == "max":
        r = tile.maximum(a, b)
    elif OP == "min":
        r = min(a, b)
    elif OP == "xor_not":
        r = a ^ ~b
    elif OP == "where":
        r = tile.where(a > b, a, b // 2)
    elif OP == "to_f32":
        r = a.to(tile.float32)
    elif OP == "from_f32":
        r = (a.to(tile.float32) * 0.5).to(DT)
    elif OP == "widen":
        r = a.to(tile.uint64) + b
    elif OP == "to_signed":
        r = a.to(tile.int64) - 1
    elif OP == "mixed":
        r = a + offs
    elif OP == "umulhi":
        r = tile.umulhi(a, b)
    else:
        r = (a.to(tile.int32, bitcast=True) >> 3).to(DT, bitcast=True) >> 3
    tile.static_assert(r.dtype == WANT, "the result's dtype")
    tile.store(out + offs, r, mask=m)


def _promoted(op, bits):
    """The dtype Triton gives the result."""
    if op == "to_f32":
        return tile.float32
    if op == "widen":
        return tile.uint64
    if op == "to_signed":
        return tile.int64
    if op == "mixed" and bits == 16:
        return tile.int32
    return DTYPES[bits][0]


def _reference(op, a, b, offs):
    bits = a.dtype.itemsize * 8
    dt = a.dtype
    with np.errstate(over="ignore"):
        return {
            "add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b + dt.type(3),
            "floordiv": lambda: np.where(b == 0, a, a // np.maximum(b, dt.type(1))),
            "mod": lambda: a % (b | dt.type(1)), "shr": lambda: a >> (b % dt.type(13)), "shl": lambda: a << (b % dt.type(13)),
            "lt": lambda: (a < b).astype(dt) + (b > a).astype(dt),
            "ge_half": lambda: np.where(a >= dt.type(1 << (bits - 1)), a - dt.type(1), b),
            "max": lambda: np.maximum(a, b), "min": lambda: np.minimum(a, b), "xor_not": lambda: a ^ ~b,
            "where": lambda: np.where(a > b, a, b // dt.type(2)), "to_f32": lambda: a.astype(np.float32),
            "from_f32": lambda: (a.astype(np.float32) * np.float32(0.5)).astype(dt),
            "widen": lambda: a.astype(np.uint64) + b.astype(np.uint64), "to_signed": lambda: a.astype(np.int64) - 1,
            "mixed": lambda: (a.astype(np.int32) + offs) if bits == 16 else a + offs.astype(dt),
            "umulhi": lambda: ((a.astype(object) * b.astype(object)) >> bits).astype(dt),
            "bitcast": lambda: ((a.view({16: np.int16, 32: np.int32, 64: np.int64}[bits]).astype(np.int32) >> 3)
                                .astype({16: np.int16, 32: np.int32, 64: np.int64}[bits]).view(dt) >> dt.type(3)),
        }[op]()


def _inputs(bits, n):
    _, npdt, _ = DTYPES[bits]
    rng = np.random.default_rng(bits)
    top = (1 << bits) - 1
    a = rng.integers(0, top, n, dtype=np.uint64, endpoint=True).astype(npdt)
    b = rng.integers(0, top, 2 * n, dtype=np.uint64, endpoint=True).astype(npdt)[::2]  # (a strided view)
    a[:5] = [0, top, 1 << (bits - 1), (1 << (bits - 1)) - 1, 12345]
    b[:5] = [0, 1, top, 1 << (bits - 1), 3]
    return a, b


def _skip(op, bits):
    return (op == "umulhi" and bits == 16) or (op == "bitcast" and bits != 32) or (op == "widen" and bits == 64)


@pytest.mark.parametrize("bits", [16, 32, 64])
@pytest.mark.parametrize("op", OPS)
def test_cpu_against_numpy(op, bits):
    if _skip(op, bits):
        pytest.skip("not a case")
    n = 300
    a, b = _inputs(bits, n)
    want = _reference(op, a, b, np.arange(n, dtype=np.int32))
    out = torch.zeros(n, dtype=torch.from_numpy(want[:1]).dtype)
    x, y = torch.from_numpy(a), torch.from_numpy(b)  # (y: a strided view)
    _unsigned_op[(tile.cdiv(n, 128), )](x, y, out, n, y.stride(0), OP=op, DT=DTYPES[bits][0], WANT=_promoted(op, bits), BLOCK=128)
    assert np.array_equal(out.numpy(), want), op


@tile.jit
def _seed_hash(seeds, out, n, salt, BLOCK: tile.constexpr, ):
    """A per-element uint32 hash of a seed and the element's index (murmur3's finalizer), as
    dropout kernels derive their keep masks: uint32 multiplies and xor-shifts."""
    pid = tile.program_id(0)
    out += pid * BLOCK
    offs = pid * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    seed = tile.load(seeds + pid % 3)
    h = offs.to(tile.uint32) * 0x9E3779B1 + seed + salt
    h ^= h >> 16
    h *= 0x85EBCA6B
    h ^= h >> 13
    h *= 0xC2B2AE35
    h ^= h >> 16
    keep = h >= 0x80000000  # (half of them: the top bit)
    tile.store(out + tile.arange(0, BLOCK), tile.where(keep, h, h % 1000), mask=mask, )


def _seed_hash_reference(seeds, n, salt, block):
    offs = np.arange(n, dtype=np.uint32)
    with np.errstate(over="ignore"):
        h = offs * np.uint32(0x9E3779B1) + seeds[(offs // block) % 3] + np.uint32(salt)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return np.where(h >= np.uint32(0x80000000), h, h % np.uint32(1000))


def test_seed_hash_against_numpy():
    n = 1000
    seeds = np.array([0xDEADBEEF, 7, 0xFFFFFFFF], dtype=np.uint32)
    out = torch.zeros(n, dtype=torch.uint32)
    _seed_hash[(tile.cdiv(n, 128), )](torch.from_numpy(seeds), out, n, 12345, BLOCK=128)
    want = _seed_hash_reference(seeds, n, 12345, 128)
    assert np.array_equal(out.numpy(), want)
    assert 0.4 < (want >= 0x80000000).mean() < 0.6


TRITON_SCRIPT = """
from test_unsigned_ints import _seed_hash

seeds = torch.from_numpy(np.array([0xDEADBEEF, 7, 0xFFFFFFFF], dtype=np.uint32))
ours, theirs = torch.zeros(300, dtype=torch.uint32), torch.zeros(300, dtype=torch.uint32)
_seed_hash[(3, )](seeds, ours, 300, 99, BLOCK=128)
as_triton(_seed_hash)[(3, )](seeds, theirs, 300, 99, BLOCK=128)
assert torch.equal(ours, theirs), (ours[:8], theirs[:8])
print("same")
"""


def test_seed_hash_same_as_triton():
    """The same kernel's source as Triton's, run by its interpreter, gives the same bits:
    Triton's promotion rules."""
    pytest.importorskip("triton")
    run = run_in_triton(TRITON_SCRIPT)
    assert run.returncode == 0 and "same" in run.stdout, run.stderr[-2000:]


@tile.jit
def _reductions(x, out, rows, cols, stride_x, BLOCK_R: tile.constexpr, BLOCK_C: tile.constexpr, ):
    """Unsigned sums (wrapping), maxima and minima (of values >= 2**31 too), argmax, along
    each axis and all of them, of a masked 2-D block of a strided tensor."""
    r, c = tile.arange(0, BLOCK_R), tile.arange(0, BLOCK_C)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    v = tile.load(x + r[:, None] * stride_x + c[None, :], mask=mask, other=0)
    lo = tile.where(mask, v, 0xFFFFFFFF)
    tile.store(out + r, tile.max(v, axis=1), mask=r < rows)
    tile.store(out + BLOCK_R + r, tile.min(lo, axis=1), mask=r < rows)
    tile.store(out + 2 * BLOCK_R + c, tile.sum(v, axis=0), mask=c < cols)
    tile.store(out + 2 * BLOCK_R + BLOCK_C + r, tile.argmax(v, axis=1).to(tile.uint32), mask=r < rows)
    everything = tile.sum(v)
    tile.static_assert(everything.dtype == tile.uint32, "a uint32 sum")
    tile.store(out + 2 * BLOCK_R + 2 * BLOCK_C, everything)
    tile.store(out + 2 * BLOCK_R + 2 * BLOCK_C + 1, tile.max(tile.max(v, axis=0, keep_dims=True)))


def test_reductions_against_numpy():
    rows, cols = 13, 27
    rng = np.random.default_rng(3)
    full = rng.integers(0, 2**32, (rows, 40), dtype=np.uint64).astype(np.uint32)
    full[2, 5] = 0xFFFFFFFF
    v = full[:, :cols]  # (a strided view: rows of 40)
    out = torch.zeros(2 * 16 + 2 * 32 + 2, dtype=torch.uint32)
    _reductions[(1, )](torch.from_numpy(full), out, rows, cols, 40, BLOCK_R=16, BLOCK_C=32)
    o = out.numpy()
    assert np.array_equal(o[:rows], v.max(axis=1)) and np.array_equal(o[16:16 + rows], v.min(axis=1))
    with np.errstate(over="ignore"):
        assert np.array_equal(o[32:32 + cols], v.sum(axis=0, dtype=np.uint32))
        assert o[96] == v.sum(dtype=np.uint32)
    assert np.array_equal(o[64:64 + rows], v.argmax(axis=1)) and o[97] == 0xFFFFFFFF


def test_uint64_reductions_against_numpy():
    @tile.jit
    def k(x, out, n, BLOCK: tile.constexpr):
        offs = tile.arange(0, BLOCK)
        v = tile.load(x + offs, mask=offs < n, other=0)
        tile.store(out, tile.max(v))
        tile.store(out + 1, tile.min(tile.where(offs < n, v, 0xFFFFFFFFFFFFFFFF)))
        tile.store(out + 2, tile.sum(v))

    v = np.random.default_rng(4).integers(0, 2**64, 100, dtype=np.uint64)
    out = torch.zeros(3, dtype=torch.uint64)
    k[(1, )](torch.from_numpy(v), out, 100, BLOCK=128)
    with np.errstate(over="ignore"):
        assert out.numpy().tolist() == [v.max(), v.min(), v.sum(dtype=np.uint64)]


def test_sm90a_reductions(gpu_target):
    gpu_target("sm_90a")
    x, out = torch.empty(16 * 40, dtype=torch.uint32, device="meta"), torch.empty(98, dtype=torch.uint32, device="meta")
    launcher = _reductions.compile(x, out, 13, 27, 40, BLOCK_R=16, BLOCK_C=32)
    ptx = launcher.asm["ptx"]
    # (the unsigned max: a signed one of the values with their top bit flipped)
    assert re.search(r"xor\.b32\s+%r\d+, %r\d+, -2147483648", ptx) and re.search(r"max\.s32", ptx)


@tile.jit
def _chains(x, out, N: tile.constexpr):
    """A uint32 and an int32 chain of adds, unrolled: each step's comparison as its dtype's."""
    o = tile.arange(0, 4)
    u = tile.load(x + o)
    s = u.to(tile.int32, bitcast=True)
    for i in tile.static_range(N):
        u += 0x30000000
        s += 0x30000000
        tile.store(out + i * 8 + o, (u > 0x80000000).to(tile.uint32))
        tile.store(out + i * 8 + 4 + o, (s > 0).to(tile.uint32))


def test_signedness_along_unrolled_chains():
    x = np.array([0, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF], dtype=np.uint32)
    out = torch.zeros(8 * 9, dtype=torch.uint32)
    launcher = _chains.compile(torch.from_numpy(x), out, N=9)
    _chains[(1, )](torch.from_numpy(x), out, N=9)
    u = x.astype(np.uint64)[None, :] + np.uint64(0x30000000) * np.arange(1, 10, dtype=np.uint64)[:, None]
    u = (u % 2**32).astype(np.uint32)
    want = np.concatenate([(u > 0x80000000), (u.view(np.int32) > 0)], axis=1).astype(np.uint32).reshape(-1)
    assert np.array_equal(out.numpy(), want)
    assert "tile.signed" not in launcher.asm["tile"]  # (the answers kept while emitting are dropped)


@tile.jit
def _bad(x, out, CASE: tile.constexpr):
    a = tile.load(x + tile.arange(0, 16))
    if CASE == 0:
        r = a + (-1)
    elif CASE == 1:
        r = a // a.to(tile.int32)
    else:
        r = tile.where(a < 5, a, -1)
    tile.store(out + tile.arange(0, 16), r)


@pytest.mark.parametrize("case, message", [(0, "negative constant -1"), (1, "signedness differs"),
                                           (2, "negative constant -1")])
def test_triton_rejects_them_too(case, message):
    x = torch.zeros(16, dtype=torch.uint32)
    with pytest.raises(tile.CompilationError, match=message) as e:
        _bad[(1, )](x, x, CASE=case)
    assert "test_unsigned_ints.py" in str(e.value)


@tile.jit
def _atomic_max(x, v):
    tile.atomic_max(x + tile.arange(0, 16), tile.load(v + tile.arange(0, 16)))


def test_unsigned_atomic_max_is_an_error_not_a_signed_compare():
    x = torch.zeros(16, dtype=torch.uint32)
    with pytest.raises(tile.CompilationError, match="atomic_max of a tile.uint32 tensor"):
        _atomic_max[(1, )](x, x)


@tile.jit
def _atomic_add(x, v, old):
    o = tile.atomic_add(x + tile.arange(0, 16), tile.load(v + tile.arange(0, 16)))
    tile.store(old + tile.arange(0, 16), o > 0x80000000)


def test_unsigned_atomic_add_returns_unsigned_old_values():
    x = torch.from_numpy(np.array([0xF0000000, 5] * 8, dtype=np.uint32))
    old = torch.zeros(16, dtype=torch.bool)
    _atomic_add[(1, )](x, torch.from_numpy(np.ones(16, dtype=np.uint32)), old)
    assert old.tolist() == [True, False] * 8
    assert x.numpy().tolist() == [0xF0000001, 6] * 8


@pytest.mark.parametrize("bits, op, instruction", [
    (32, "lt", r"setp\.(lo|lt)\.u32"), (32, "shr", r"shr\.u32"), (32, "to_f32", r"cvt\.rn\.f32\.u32"),
    (32, "floordiv", r"div\.u32"), (32, "mod", r"rem\.u32"), (32, "max", r"max\.u32"), (32, "umulhi", r"mul\.hi\.u32"),
    (32, "from_f32", r"cvt\.rzi\.u32\.f32"), (64, "shr", r"shr\.u64"), (64, "to_f32", r"cvt\.rn\.f32\.u64"),
    (64, "lt", r"setp\.(lo|lt)\.u64"), (16, "floordiv", r"div\.u16"),
])
def test_sm90a_uses_unsigned_instructions(bits, op, instruction, gpu_target):
    gpu_target("sm_90a")
    _, _, tdt = DTYPES[bits]
    x = torch.empty(4096, dtype=tdt, device="meta")
    out = torch.empty(4096, dtype=torch.float32 if op == "to_f32" else tdt, device="meta")
    launcher = _unsigned_op.compile(x, x, out, 4000, 1, OP=op, DT=DTYPES[bits][0], WANT=_promoted(op, bits), BLOCK=1024)
    ptx = launcher.asm["ptx"]
    assert re.search(instruction, ptx), op
    # (no instruction whose result depends on the sign: add, mul.lo and sub take either; the
    # mask's offs < n compares int32s)
    assert not re.search(r"\b((shr|div|rem|max|min)\.s|cvt\.rn\.f32\.s|cvt\.rzi\.s)(16|32|64)\b", ptx), op


def test_sm90a_seed_hash(gpu_target):
    gpu_target("sm_90a")
    launcher = _seed_hash.compile(torch.empty(3, dtype=torch.uint32, device="meta"),
                                  torch.empty(1000, dtype=torch.uint32, device="meta"), 1000, 5, BLOCK=128)
    ptx = launcher.asm["ptx"]
    # (logical shifts; h % 1000 by the unsigned magic multiply; h >= 2**31 is the sign bit's test)
    assert len(re.findall(r"shr\.u32", ptx)) >= 3 and re.search(r"mul\.hi\.u32", ptx) and not re.search(r"shr\.s32", ptx)
