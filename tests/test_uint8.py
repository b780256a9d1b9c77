"""uint8 tensors and tiles (Triton's `tl.uint8`; tutorial 10's e8m0 scales): loads, stores,
wrapping arithmetic, unsigned division, shifts, comparisons, extrema and casts, checked
against torch on the CPU (with masks, odd sizes, a strided view and a loop-carried value),
the unsigned signedness kept through shape ops; compiled for sm_90a, where the PTX uses
unsigned instructions; and the reductions, typed as Triton types them (a sum is a uint32)."""

import re

import pytest
import torch

import tile

OPS = ["add", "sub", "mul", "floordiv", "mod", "shr", "shl", "gt", "le", "max", "min", "and", "or", "xor", "not",
       "to_f32", "from_f32", "to_i32", "to_i8", "from_i32", "bitcast", "where", "mixed", "neg", "abs"]


@tile.jit
def _binary(x, y, out, n, OP: tile.constexpr, BLOCK: tile.constexpr, ):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    m = offs < n
    a = tile.load(x + offs, mask=m, other=7)
    b = tile.load(y + offs, mask=m)
    if OP == "add":
        r = a + b
    elif OP == "sub":
        r = a - b
    elif OP == "mul":
        r = a * b + 3
    elif OP == "floordiv":
        r = a // b
    elif OP == "mod":
        r = a % (b + 1)  # (b + 1 wraps at 255: a % 0 == 0)
    elif OP == "shr":
        r = (a >> (b % 12)) + (a >> 2)
    elif OP == "shl":
        r = a << (b % 12)
    elif OP == "gt":
        r = (a > b).to(tile.uint8) + (a > 100)
    elif OP == "le":
        r = tile.where(a <= b, a, b)
    elif OP == "max":
        r = tile.maximum(a, b)
    elif OP == "min":
        r = min(a, b)
    elif OP == "and":
        r = a & b
    elif OP == "or":
        r = a | 0x81
    elif OP == "xor":
        r = a ^ b
    elif OP == "not":
        r = ~a
    elif OP == "to_f32":
        r = (a.to(tile.float32) * 0.25 + b.to(tile.float32)).to(tile.int32) % 256
    elif OP == "from_f32":
        r = (a.to(tile.float32) * 0.5).to(tile.uint8)
    elif OP == "to_i32":
        r = a.to(tile.int32) - b.to(tile.int32)
    elif OP == "to_i8":
        r = a.to(tile.int8).to(tile.int32)  # (200 is -56 as an int8)
    elif OP == "from_i32":
        r = (a.to(tile.int32) * 3 - 500).to(tile.uint8)
    elif OP == "bitcast":  # (>> of an int8, then of a uint8)
        r = (a.to(tile.int8, bitcast=True) >> 1).to(tile.uint8, bitcast=True) >> 1
    elif OP == "where":
        r = tile.where(b > 127, a, 255)
    elif OP == "mixed":
        r = a + offs  # (uint8 with int32: int32)
    elif OP == "neg":
        r = -a
    else:
        r = tile.abs(a)
    tile.store(out + offs, r, mask=m)


def _reference(op, a, b, offs):
    a32, b32 = a.int(), b.int()
    return {
        "add": a32 + b32, "sub": a32 - b32, "mul": a32 * b32 + 3,
        "floordiv": torch.where(b32 == 0, a32, a32 // b32.clamp(min=1)),
        "mod": torch.where((b32 + 1) % 256 == 0, 0, a32 % ((b32 + 1) % 256).clamp(min=1)),
        "shr": (a32 >> (b32 % 12)) * ((b32 % 12) < 8) + (a32 >> 2), "shl": a32 << (b32 % 12),
        "gt": (a32 > b32).int() + (a32 > 100).int(), "le": torch.where(a32 <= b32, a32, b32),
        "max": torch.maximum(a32, b32), "min": torch.minimum(a32, b32), "and": a32 & b32, "or": a32 | 0x81,
        "xor": a32 ^ b32, "not": 255 - a32, "to_f32": (a.float() * 0.25 + b.float()).int() % 256,
        "from_f32": (a.float() * 0.5).int(), "to_i32": a32 - b32, "to_i8": a.view(torch.int8).int(),
        "from_i32": a32 * 3 - 500, "bitcast": ((a.view(torch.int8).int() >> 1) % 256) >> 1, "where": torch.where(b32 > 127, a32, 255), "mixed": a32 + offs, "neg": -a32, "abs": a32,
    }[op]


@pytest.mark.parametrize("op", OPS)
def test_cpu_against_torch(op):
    n = 1000
    a = torch.randint(0, 256, (n, ), dtype=torch.uint8)
    a[:4] = torch.tensor([0, 255, 128, 200], dtype=torch.uint8)
    b = torch.randint(0, 256, (2 * n, ), dtype=torch.uint8)[::2]  # (a strided view)
    b[:4] = torch.tensor([0, 1, 255, 127], dtype=torch.uint8)
    wide = op in ("to_i32", "to_i8", "mixed", "to_f32")
    out = torch.zeros(n, dtype=torch.int32 if wide else torch.uint8)
    _binary[(tile.cdiv(n, 256), )](a, b.contiguous(), out, n, OP=op, BLOCK=256)
    ref = _reference(op, a, b, torch.arange(n, dtype=torch.int32))
    assert torch.equal(out.int() if wide else out, ref.int() if wide else (ref % 256).to(torch.uint8)), op


@tile.jit
def _kept_through_shapes(x, out, ROWS: tile.constexpr, COLS: tile.constexpr):
    """Signedness through reshape, trans, join/split, broadcast and a loop-carried value:
    each result compared and shifted as unsigned."""
    r, c = tile.arange(0, ROWS), tile.arange(0, COLS)
    x_ptrs = x + r[:, None] * COLS + c[None, :]
    t = tile.load(x_ptrs)
    acc = t.trans().reshape(COLS * ROWS)
    for i in range(3):
        acc = acc + tile.load(x + tile.arange(0, ROWS * COLS))  # (wrapping: 3 * 200 % 256)
        x_ptrs += 0
    lo, hi = tile.split(tile.join(acc, acc >> 1))
    tile.store(out + tile.arange(0, ROWS * COLS), (hi > 64).to(tile.uint8) * 100 + (lo >> 4))


def test_cpu_signedness_through_shapes_and_loops():
    x = torch.randint(0, 256, (8, 16), dtype=torch.uint8)
    out = torch.empty(128, dtype=torch.uint8)
    _kept_through_shapes[(1, )](x, out, ROWS=8, COLS=16)
    acc = (x.t().reshape(-1).int() + 3 * x.reshape(-1).int()) % 256
    assert torch.equal(out, ((acc >> 1 > 64).int() * 100 + (acc >> 4)).to(torch.uint8))


@tile.jit
def _reduce(x, out, KIND: tile.constexpr):
    v = tile.load(x + tile.arange(0, 16))
    if KIND == 0:
        s = tile.sum(v)
        tile.static_assert(s.dtype == tile.uint32, "Triton's sum of uint8 is a uint32")
        tile.store(out, s)
    else:
        tile.store(out, tile.max(v, axis=0))


@pytest.mark.parametrize("kind", [0, 1])
def test_reductions_as_triton_types_them(kind):
    x = torch.tensor([200, 3, 255, 7] * 4, dtype=torch.uint8)
    out = torch.zeros(1, dtype=torch.int32 if kind == 0 else torch.uint8)
    _reduce[(1, )](x, out, KIND=kind)
    assert out.item() == (x.int().sum().item() if kind == 0 else 255)


def test_constants_a_uint8_cannot_hold():
    @tile.jit
    def k(x, V: tile.constexpr):
        tile.store(x + tile.arange(0, 4), tile.full((4, ), V, tile.uint8))

    x = torch.zeros(4, dtype=torch.uint8)
    k[(1, )](x, V=255)
    assert x.tolist() == [255] * 4
    with pytest.raises(tile.CompilationError, match="does not fit in tile.uint8"):
        k[(1, )](x, V=-1)


@pytest.mark.parametrize("op, instruction", [("shr", r"shr\.u16"), ("floordiv", r"div\.u16"), ("gt", r"setp\.[gl][te]\.u(16|32)"),
                                             ("to_f32", r"cvt\.rn\.f32\.u(16|32)"), ("max", r"max\.u16")])
def test_sm90a_uses_unsigned_instructions(op, instruction, gpu_target):
    gpu_target("sm_90a")
    x = torch.empty(4096, dtype=torch.uint8, device="meta")
    wide = op == "to_f32"
    out = torch.empty(4096, dtype=torch.int32 if wide else torch.uint8, device="meta")
    launcher = _binary.compile(x, x, out, 4096, OP=op, BLOCK=1024)
    ptx = launcher.asm["ptx"]
    assert re.search(instruction, ptx), op
    # (no instruction whose result depends on the sign: mul.lo and sub take either)
    assert not re.search(r"\b((shr|div|rem|max|min)\.s|setp\.[gl][te]\.s|cvt\.rn\.f32\.s|cvt\.s32\.s)(8|16)\b", ptx), op
    assert launcher.metadata["ptxas"]["spill_stores"] == 0
