// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-small-int-to-float)' | FileCheck %s

// INT4 nibbles, (byte & 15) - 8 in [-8, 7]: converted through the f32's bits,
// q + 0x4B400000 read as an f32, minus 1.5 * 2^23.

// CHECK-LABEL: func.func @nibbles
// CHECK: %[[Q:.*]] = arith.subi
// CHECK: %[[MAGIC:.*]] = arith.constant 1262485504 : i32
// CHECK-NEXT: %[[M:.*]] = "tile.splat"(%[[MAGIC]])
// CHECK-NEXT: %[[S:.*]] = arith.addi %[[Q]], %[[M]] : tensor<64x128xi32>
// CHECK-NEXT: %[[B:.*]] = arith.bitcast %[[S]] : tensor<64x128xi32> to tensor<64x128xf32>
// CHECK-NEXT: %[[OFF:.*]] = arith.constant 0x4B400000 : f32
// CHECK-NEXT: %[[O:.*]] = "tile.splat"(%[[OFF]])
// CHECK-NEXT: %[[F:.*]] = arith.subf %[[B]], %[[O]] : tensor<64x128xf32>
// CHECK-NEXT: return %[[F]]
// CHECK-NOT: sitofp
func.func @nibbles(%p: tensor<64x128xi8>) -> tensor<64x128xf32> {
  %w = arith.extsi %p : tensor<64x128xi8> to tensor<64x128xi32>
  %c15 = arith.constant 15 : i32
  %m = "tile.splat"(%c15) : (i32) -> tensor<64x128xi32>
  %a = arith.andi %w, %m : tensor<64x128xi32>
  %c8 = arith.constant 8 : i32
  %e = "tile.splat"(%c8) : (i32) -> tensor<64x128xi32>
  %q = arith.subi %a, %e : tensor<64x128xi32>
  %f = arith.sitofp %q : tensor<64x128xi32> to tensor<64x128xf32>
  return %f : tensor<64x128xf32>
}

// -----

// The high nibble, (byte >> 4) & 15, and a byte as it is, unsigned: both small.

// CHECK-LABEL: func.func @high_nibble_and_bytes
// CHECK-NOT: itofp
// CHECK: arith.bitcast
// CHECK: arith.bitcast
// CHECK-NOT: itofp
func.func @high_nibble_and_bytes(%p: tensor<64xi8>) -> (tensor<64xf32>, tensor<64xf32>) {
  %w = arith.extsi %p : tensor<64xi8> to tensor<64xi32>
  %c4 = arith.constant 4 : i32
  %four = "tile.splat"(%c4) : (i32) -> tensor<64xi32>
  %h = arith.shrsi %w, %four : tensor<64xi32>
  %c15 = arith.constant 15 : i32
  %m = "tile.splat"(%c15) : (i32) -> tensor<64xi32>
  %n = arith.andi %h, %m : tensor<64xi32>
  %f = arith.sitofp %n : tensor<64xi32> to tensor<64xf32>
  %u = arith.extui %p : tensor<64xi8> to tensor<64xi32>
  %g = arith.uitofp %u : tensor<64xi32> to tensor<64xf32>
  return %f, %g : tensor<64xf32>, tensor<64xf32>
}

// -----

// Positions, an arange halved: [0, 63] -> [0, 31], small.

// CHECK-LABEL: func.func @positions
// CHECK: %[[H:.*]] = arith.divsi
// CHECK: arith.addi %[[H]]
// CHECK-NEXT: arith.bitcast
// CHECK-NOT: itofp
func.func @positions() -> tensor<64xf32> {
  %r = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
  %c2 = arith.constant 2 : i32
  %two = "tile.splat"(%c2) : (i32) -> tensor<64xi32>
  %h = arith.divsi %r, %two : tensor<64xi32>
  %f = arith.sitofp %h : tensor<64xi32> to tensor<64xf32>
  return %f : tensor<64xf32>
}

// -----

// Left alone: an i32 of unknown range, a range past 2^22, and a possibly negative
// value converted as unsigned.

// CHECK-LABEL: func.func @not_small
// CHECK: arith.sitofp %{{.*}} : tensor<64xi32> to tensor<64xf32>
// CHECK: arith.sitofp %{{.*}} : tensor<64xi32> to tensor<64xf32>
// CHECK: arith.uitofp %{{.*}} : tensor<64xi32> to tensor<64xf32>
// CHECK-NOT: arith.bitcast
func.func @not_small(%x: tensor<64xi32>, %p: tensor<64xi8>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %a = arith.sitofp %x : tensor<64xi32> to tensor<64xf32>
  %c = arith.constant 8388607 : i32
  %m = "tile.splat"(%c) : (i32) -> tensor<64xi32>
  %big = arith.andi %x, %m : tensor<64xi32>
  %b = arith.sitofp %big : tensor<64xi32> to tensor<64xf32>
  %w = arith.extsi %p : tensor<64xi8> to tensor<64xi32>
  %u = arith.uitofp %w : tensor<64xi32> to tensor<64xf32>
  return %a, %b, %u : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// A conversion to a 16-bit float goes through the exact f32, then one truncf.

// CHECK-LABEL: func.func @to_half
// CHECK: %[[B:.*]] = arith.bitcast %{{.*}} : tensor<64xi32> to tensor<64xf32>
// CHECK: %[[F:.*]] = arith.subf %[[B]]
// CHECK: arith.truncf %[[F]] : tensor<64xf32> to tensor<64xf16>
// CHECK: %[[B2:.*]] = arith.bitcast %{{.*}} : tensor<64xi32> to tensor<64xf32>
// CHECK: %[[F2:.*]] = arith.subf %[[B2]]
// CHECK: arith.truncf %[[F2]] : tensor<64xf32> to tensor<64xbf16>
// CHECK-NOT: itofp
func.func @to_half(%p: tensor<64xi8>) -> (tensor<64xf16>, tensor<64xbf16>) {
  %w = arith.extsi %p : tensor<64xi8> to tensor<64xi32>
  %h = arith.sitofp %w : tensor<64xi32> to tensor<64xf16>
  %b = arith.sitofp %w : tensor<64xi32> to tensor<64xbf16>
  return %h, %b : tensor<64xf16>, tensor<64xbf16>
}
