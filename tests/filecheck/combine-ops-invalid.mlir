// RUN: tile-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(tile-verify)'

// The verifiers of tile.scan and tile.reduce_region (dialects/combine_ops.py), run by `tile-verify`.

func.func @scan_block_types(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{'tile.scan' op the combine block must take (f32, f32)}}
  %s = "tile.scan"(%x) ({
  ^bb0(%a: i32, %b: i32):
    gpu.yield %a : i32
  }) {axis = 0 : i32, reverse = false, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>,
      resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<8xf32>) -> tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

func.func @scan_yield(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{'tile.scan' op the combine block must end in gpu.yield of (f32)}}
  %s = "tile.scan"(%x) ({
  ^bb0(%a: f32, %b: f32):
    gpu.yield %a, %b : f32, f32
  }) {axis = 0 : i32, reverse = false, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>,
      resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<8xf32>) -> tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

func.func @reduce_axis(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @below {{'tile.reduce_region' op axis 2 is out of range for a rank-2 tile}}
  %s = "tile.reduce_region"(%x) ({
  ^bb0(%a: f32, %b: f32):
    gpu.yield %a : f32
  }) {axis = 2 : i32, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>,
      resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x8xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @reduce_result(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  // expected-error @below {{'tile.reduce_region' op each result must be the operand reduced along the axis (a scalar from a 1-D tile) of its operand's element type}}
  %s = "tile.reduce_region"(%x) ({
  ^bb0(%a: f32, %b: f32):
    gpu.yield %a : f32
  }) {axis = 1 : i32, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>,
      resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x8xf32>) -> tensor<8xf32>
  return %s : tensor<8xf32>
}
