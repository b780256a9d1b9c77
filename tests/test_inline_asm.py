"""Triton's `inline_asm_elementwise`: compiled for sm_90a (and sm_80), the asm lands in the PTX
once per `pack` elements a thread holds, its narrow operands packed into 32-bit registers
(Triton's own docstring example: uint8 and float32 in, int32 and float32 out, pack=4), a
scalar argument broadcast, a half2 instruction on pairs of f16; on the CPU target, which
cannot run PTX, and for constraints that do not match the registers, an error at the call's line."""

import re

import pytest
import torch

import tile

DOC_ASM = """
{
    .reg .b8 tmp<4>;
    mov.b32 {tmp0, tmp1, tmp2, tmp3}, $8;
    cvt.u32.u8 $0, tmp0;
    cvt.u32.u8 $1, tmp1;
    cvt.u32.u8 $2, tmp2;
    cvt.u32.u8 $3, tmp3;
}
cvt.rn.f32.s32 $4, $0;
cvt.rn.f32.s32 $5, $1;
cvt.rn.f32.s32 $6, $2;
cvt.rn.f32.s32 $7, $3;
max.f32 $4, $4, $9;
max.f32 $5, $5, $10;
max.f32 $6, $6, $11;
max.f32 $7, $7, $12;
"""


@tile.jit
def _doc_example(A, B, C, D, n, BLOCK: tile.constexpr, ):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    a = tile.load(A + offs, mask=mask)  # uint8
    b = tile.load(B + offs, mask=mask)  # float32
    (c, d) = tile.inline_asm_elementwise(
        asm=DOC_ASM,
        constraints=(
            "=r,=r,=r,=r,=r,=r,=r,=r,"
            "r,r,r,r,r"),
        args=[a, b],
        dtype=(tile.int32, tile.float32),
        is_pure=True,
        pack=4,
    )
    tile.store(C + offs, c, mask=mask)
    tile.store(D + offs, d, mask=mask)


@tile.jit
def _rotate(x, out, n, shift, BLOCK: tile.constexpr, ):
    pid = tile.program_id(0)
    x += pid * BLOCK
    out += pid * BLOCK
    offs = tile.arange(0, BLOCK)
    mask = offs < n - pid * BLOCK
    v = tile.load(x + offs, mask=mask)
    r = tile.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $1, $2;", "=r,r,r", [v, shift], dtype=tile.uint32,
                                    is_pure=True, pack=1)
    tile.static_assert(r.dtype == tile.uint32, "the dtype asked for")
    tile.store(out + offs, r >> 1, mask=mask)


@tile.jit
def _half2(x, out, n, BLOCK: tile.constexpr, ):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    v = tile.load(x + offs, mask=mask, other=0.0)
    e = tile.inline_asm_elementwise("ex2.approx.f16x2 $0, $1;", "=r,r", [v], dtype=tile.float16, is_pure=True, pack=2)
    tile.store(out + offs, e, mask=mask)


def _meta(n, dt):
    return torch.empty(n, dtype=dt, device="meta")


def _instances(ptx: str, text: str) -> int:
    return len(re.findall(re.escape(text), ptx))


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_doc_example_lands_in_the_ptx_once_per_pack(target, gpu_target):
    gpu_target(target)
    launcher = _doc_example.compile(_meta(1000, torch.uint8), _meta(1000, torch.float32), _meta(1000, torch.int32),
                                    _meta(1000, torch.float32), 1000, BLOCK=1024)
    ptx = launcher.asm["ptx"]
    # 1024 elements over 4 warps: 8 a thread, two instances of 4
    assert _instances(ptx, "cvt.u32.u8") == 2 * 4 and _instances(ptx, "max.f32") == 2 * 4
    assert re.search(r"mov\.b32 \{tmp0, tmp1, tmp2, tmp3\}, %r\d+;", ptx)  # (four uint8 in one 32-bit register)
    assert launcher.metadata["ptxas"]["spill_stores"] == 0


def test_scalar_argument_and_unsigned_result(gpu_target):
    gpu_target("sm_90a")
    ptx = _rotate.compile(_meta(1000, torch.uint32), _meta(1000, torch.uint32), 1000, 7, BLOCK=256).asm["ptx"]
    # 256 elements over 4 warps: 2 a thread
    assert len(re.findall(r"shf\.l\.wrap\.b32 %r\d+, %r\d+, %r\d+, %r\d+;", ptx)) == 2
    assert re.search(r"shr\.u32", ptx)  # (the result is a uint32)


def test_half2_packs_two_f16_a_register(gpu_target):
    gpu_target("sm_90a")
    ptx = _half2.compile(_meta(999, torch.float16), _meta(999, torch.float16), 999, BLOCK=512).asm["ptx"]
    # 512 f16 over 4 warps: 4 a thread, two instances of a pair each
    assert len(re.findall(r"ex2\.approx\.f16x2 %r\d+, %r\d+;", ptx)) == 2


def test_cpu_target_is_an_error_at_the_call():
    x = torch.zeros(64, dtype=torch.uint32)
    with pytest.raises(tile.CompilationError, match="runs PTX, which the CPU target cannot") as e:
        _rotate[(1, )](x, x, 64, 3, BLOCK=64)
    assert "test_inline_asm.py" in str(e.value) and "inline_asm_elementwise" in str(e.value)


@tile.jit
def _bad(x, CASE: tile.constexpr):
    v = tile.load(x + tile.arange(0, 128))
    if CASE == 0:  # (pack=4 of uint8: one input register, not four)
        r = tile.inline_asm_elementwise("mov.b32 $0, $1;", "=r,=r,=r,=r,r,r,r,r", [v], dtype=tile.int32, is_pure=True,
                                        pack=4)
    elif CASE == 1:
        r = tile.inline_asm_elementwise("add.s32 $0, $1, $2;", "=r,r", [v], dtype=tile.int32, is_pure=True, pack=1)
    elif CASE == 2:
        r = tile.inline_asm_elementwise("mov.b32 $0, $1;", "r,=r", [v], dtype=tile.int32, is_pure=True, pack=1)
    else:
        r = tile.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [v], dtype=tile.int1, is_pure=True, pack=1)
    tile.store(x + tile.arange(0, 128), r)


@pytest.mark.parametrize("case, message", [(0, "name 8 operands, but its 4 output and 1 input registers need 5"),
                                           (1, r"uses \$2, but it has only 2 operands"),
                                           (2, "outputs .* first"), (3, "not bools")])
def test_bad_constraints_are_errors_at_the_call(case, message, gpu_target):
    gpu_target("sm_90a")
    with pytest.raises(tile.CompilationError, match=message) as e:
        _bad[(1, )](_meta(128, torch.uint8), CASE=case)
    assert "test_inline_asm.py" in str(e.value)
