// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(expand-float8)' | FileCheck %s

// An e4m3 byte widened to bf16: decoded in i32 (exponent, mantissa, the normal and
// subnormal magnitudes), scaled by 2^-10 in f32, negated by the sign bit, NaN for
// 0x7f and 0xff, then truncated to bf16 (exact). No `arith.extf` from f8 is left.

// CHECK-LABEL: func.func @to_bf16
// CHECK-SAME: (%[[X:.*]]: f8E4M3FN)
// CHECK: %[[B:.*]] = arith.bitcast %[[X]] : f8E4M3FN to i8
// CHECK-NEXT: %[[U:.*]] = arith.extui %[[B]] : i8 to i32
// CHECK: %[[MAG:.*]] = arith.select
// CHECK-NEXT: %[[F:.*]] = arith.uitofp %[[MAG]] : i32 to f32
// CHECK: %[[V:.*]] = arith.mulf %[[F]]
// CHECK: %[[NEG:.*]] = arith.negf %[[V]]
// CHECK: %[[NAN:.*]] = arith.constant 0x7FC00000 : f32
// CHECK: %[[R:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK-NEXT: return %[[R]]
// CHECK-NOT: arith.extf
func.func @to_bf16(%x: f8E4M3FN) -> bf16 {
  %y = arith.extf %x : f8E4M3FN to bf16
  return %y : bf16
}

// -----

// To f32: the decode's value itself; other widenings are left alone.

// CHECK-LABEL: func.func @to_f32
// CHECK: arith.constant 0x7FC00000 : f32
// CHECK-NEXT: %[[V:.*]] = arith.select %{{.*}} : f32
// CHECK-NEXT: %[[H:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK-NEXT: return %[[V]], %[[H]]
func.func @to_f32(%x: f8E4M3FN, %h: f16) -> (f32, f32) {
  %y = arith.extf %x : f8E4M3FN to f32
  %z = arith.extf %h : f16 to f32
  return %y, %z : f32, f32
}

// -----

// An e5m2 byte is the top byte of an f16: shifted up and bitcast, then widened.

// CHECK-LABEL: func.func @e5m2_to_f32
// CHECK: %[[B:.*]] = arith.bitcast %{{.*}} : f8E5M2 to i8
// CHECK-NEXT: %[[W:.*]] = arith.extui %[[B]] : i8 to i16
// CHECK: %[[S:.*]] = arith.shli %[[W]], %{{.*}} : i16
// CHECK-NEXT: %[[H:.*]] = arith.bitcast %[[S]] : i16 to f16
// CHECK-NEXT: %[[F:.*]] = arith.extf %[[H]] : f16 to f32
// CHECK-NEXT: return %[[F]]
func.func @e5m2_to_f32(%x: f8E5M2) -> f32 {
  %y = arith.extf %x : f8E5M2 to f32
  return %y : f32
}
