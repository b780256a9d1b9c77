"""The element types a tile can hold, and their MLIR and torch spellings."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class dtype:
    name: str
    mlir: str  # MLIR type spelling
    bits: int
    is_float: bool
    signed: bool = True  # (integers: a uint32's values are unsigned, its MLIR type the signless i32: `unsigned.py`)

    def __repr__(self) -> str:
        return f"tile.{self.name}"

    def to_mlir(self):
        from mlir import ir

        return ir.Type.parse(self.mlir)

    # Triton's dtype queries, as kernels use them on compile-time dtypes (`x.dtype.is_floating()`)
    @property
    def primitive_bitwidth(self) -> int:
        return self.bits

    def is_floating(self) -> bool:
        return self.is_float

    def is_int(self) -> bool:
        return not self.is_float

    def is_int_signed(self) -> bool:
        return not self.is_float and self.signed and self.bits > 1

    def is_int_unsigned(self) -> bool:
        return not self.is_float and (not self.signed or self.bits == 1)

    def is_bool(self) -> bool:
        return self.bits == 1

    def is_fp8(self) -> bool:
        return self.is_float and self.bits == 8

    def is_fp16(self) -> bool:
        return self.name == "float16"

    def is_bf16(self) -> bool:
        return self.name == "bfloat16"

    def is_fp32(self) -> bool:
        return self.name == "float32"

    def is_fp64(self) -> bool:
        return self.name == "float64"

    @property
    def scalar(self) -> dtype:  # (`x.type.scalar`: a 0-d value's type is its dtype)
        return self

    def is_block(self) -> bool:
        return False

    def is_ptr(self) -> bool:
        return False


float32 = dtype("float32", "f32", 32, True)
float16 = dtype("float16", "f16", 16, True)
bfloat16 = dtype("bfloat16", "bf16", 16, True)
float64 = dtype("float64", "f64", 64, True)
int32 = dtype("int32", "i32", 32, False)
int64 = dtype("int64", "i64", 64, False)
int16 = dtype("int16", "i16", 16, False)
int8 = dtype("int8", "i8", 8, False)
int1 = dtype("int1", "i1", 1, False)
uint8 = dtype("uint8", "i8", 8, False, signed=False)
uint16 = dtype("uint16", "i16", 16, False, signed=False)
uint32 = dtype("uint32", "i32", 32, False, signed=False)
uint64 = dtype("uint64", "i64", 64, False, signed=False)
# Not computed on: loaded and converted up with `.to()` (`cvt.rn.f16x2.e4m3x2` on a GPU), or converted
# down to and stored (`cvt.rn.satfinite.e4m3x2.f32`).
float8e4m3 = dtype("float8e4m3", "f8E4M3FN", 8, True)
float8e5m2 = dtype("float8e5m2", "f8E5M2", 8, True)
FLOAT8 = (float8e4m3, float8e5m2)
float8e4nv, float8e5 = float8e4m3, float8e5m2  # (Triton's names)

ALL = (float32, float16, bfloat16, float64, int32, int64, int16, int8, int1, float8e4m3, float8e5m2)
BY_MLIR = {d.mlir: d for d in ALL}
UNSIGNED = {int8: uint8, int16: uint16, int32: uint32, int64: uint64}  # the signless type's unsigned dtype (BY_MLIR gives the signed one)


@dataclass(frozen=True)
class pointer_type:
    """The type of a pointer (Triton's `tl.pointer_type`): `x.dtype` of a tensor argument or of
    `x + offsets`; `x.dtype.element_ty` is its element dtype."""

    element_ty: dtype

    def __repr__(self) -> str:
        return f"tile.pointer_type({self.element_ty!r})"

    @property
    def scalar(self) -> pointer_type:
        return self

    def is_block(self) -> bool:
        return False

    def is_ptr(self) -> bool:
        return True


def from_mlir(ty) -> dtype:
    return BY_MLIR[str(ty)]


def from_torch(t) -> dtype | None:
    """The tile dtype of a torch dtype, or None if tiles can't hold it."""
    return {
        "torch.float32": float32,
        "torch.float16": float16,
        "torch.bfloat16": bfloat16,
        "torch.float64": float64,
        "torch.int32": int32,
        "torch.int64": int64,
        "torch.int16": int16,
        "torch.int8": int8,
        "torch.uint8": uint8,
        "torch.uint16": uint16,
        "torch.uint32": uint32,
        "torch.uint64": uint64,
        "torch.bool": int1,
        "torch.float8_e4m3fn": float8e4m3,
        "torch.float8_e5m2": float8e5m2,
    }.get(str(t))
