"""The narrowing float conversions a CPU-target kernel may call, carried in its own module.

x86 has no instruction for f32 -> bf16 or f64 -> f16/bf16: LLVM calls `__truncsfbf2`,
`__truncdfhf2` and `__truncdfbf2`, which libgcc has only from GCC 13 on (Debian 12 has
12), so the JIT failed to find them and the kernel could not load. The module defines
them instead, in LLVM IR:

- f32 -> bf16 rounds to nearest even on the bits, NaN kept quiet;
- f64 -> f16/bf16 first rounds to f32 *to odd* (truncate, then set the last bit if
  anything was dropped), then to nearest even: with f32's 13 or more extra bits, the
  two roundings give the correctly rounded result of one (Boldo and Melquiond).
"""

from __future__ import annotations

_F32_TO_BF16 = """
llvm.func @__truncsfbf2(%x: f32) -> bf16 {
  %bits = llvm.bitcast %x : f32 to i32
  %c16 = llvm.mlir.constant(16 : i32) : i32
  %c1 = llvm.mlir.constant(1 : i32) : i32
  %half = llvm.mlir.constant(32767 : i32) : i32
  %quiet = llvm.mlir.constant(64 : i32) : i32
  %high = llvm.lshr %bits, %c16 : i32
  %odd = llvm.and %high, %c1 : i32
  %biased = llvm.add %bits, %half : i32
  %rounded = llvm.add %biased, %odd : i32
  %even = llvm.lshr %rounded, %c16 : i32
  %nan = llvm.or %high, %quiet : i32
  %isnan = llvm.fcmp "uno" %x, %x : f32
  %pick = llvm.select %isnan, %nan, %even : i1, i32
  %short = llvm.trunc %pick : i32 to i16
  %out = llvm.bitcast %short : i16 to bf16
  llvm.return %out : bf16
}
"""

_F64_TO_ODD_F32 = """
llvm.func @__tile_f64_to_odd_f32(%x: f64) -> f32 {
  %near = llvm.fptrunc %x : f64 to f32
  %back = llvm.fpext %near : f32 to f64
  %inexact = llvm.fcmp "one" %back, %x : f64
  %ab = llvm.intr.fabs(%back) : (f64) -> f64
  %ax = llvm.intr.fabs(%x) : (f64) -> f64
  %away = llvm.fcmp "ogt" %ab, %ax : f64
  %bits = llvm.bitcast %near : f32 to i32
  %c1 = llvm.mlir.constant(1 : i32) : i32
  %less = llvm.sub %bits, %c1 : i32
  %down = llvm.and %inexact, %away : i1
  %toward = llvm.select %down, %less, %bits : i1, i32
  %sticky = llvm.or %toward, %c1 : i32
  %odd = llvm.select %inexact, %sticky, %toward : i1, i32
  %out = llvm.bitcast %odd : i32 to f32
  llvm.return %out : f32
}
"""

_F64_TO_HALF = """
llvm.func @__truncdfhf2(%x: f64) -> f16 {
  %t = llvm.call @__tile_f64_to_odd_f32(%x) : (f64) -> f32
  %h = llvm.fptrunc %t : f32 to f16
  llvm.return %h : f16
}
llvm.func @__truncdfbf2(%x: f64) -> bf16 {
  %t = llvm.call @__tile_f64_to_odd_f32(%x) : (f64) -> f32
  %b = llvm.call @__truncsfbf2(%t) : (f32) -> bf16
  llvm.return %b : bf16
}
"""


def add_float_runtime(module, text: str) -> None:
    """Append the conversions to `module` (LLVM dialect, `text` its printed form) where it
    uses a type they produce and does not define them already."""
    if "f16" not in text or "@__truncsfbf2" in text:  # (f16 and bf16 alike)
        return
    from mlir import ir

    for op in ir.Module.parse(_F32_TO_BF16 + _F64_TO_ODD_F32 + _F64_TO_HALF).body.operations:
        module.body.append(op.clone())
