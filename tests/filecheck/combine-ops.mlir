// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-verify, convert-tile-to-linalg)' | FileCheck %s

// tile.scan and tile.reduce_region (dialects/combine_ops.py) on the CPU: loops over the tile
// with the combine region inlined in the innermost one (codegen/cpu/linalg_combines.py).

// CHECK-LABEL: func.func @cumsum_rows
// CHECK: scf.for
// CHECK: tensor.extract
// CHECK: tensor.insert
// CHECK: scf.for
// CHECK: arith.addf
// CHECK: tensor.insert
// CHECK-NOT: tile.scan
func.func @cumsum_rows(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = "tile.scan"(%x) ({
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    gpu.yield %c : f32
  }) {axis = 1 : i32, reverse = false, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>,
      resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @argmax
// CHECK: scf.for
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: arith.select
// CHECK: scf.yield
// CHECK-NOT: tile.reduce_region
func.func @argmax(%v: tensor<64xf32>, %i: tensor<64xi32>) -> (f32, i32) {
  %m:2 = "tile.reduce_region"(%v, %i) ({
  ^bb0(%v0: f32, %i0: i32, %v1: f32, %i1: i32):
    %gt = arith.cmpf ogt, %v1, %v0 : f32
    %vv = arith.select %gt, %v1, %v0 : f32
    %ii = arith.select %gt, %i1, %i0 : i32
    gpu.yield %vv, %ii : f32, i32
  }) {axis = 0 : i32, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>,
      resultSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<64xf32>, tensor<64xi32>) -> (f32, i32)
  return %m#0, %m#1 : f32, i32
}
