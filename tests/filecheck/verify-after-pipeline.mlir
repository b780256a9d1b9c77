// RUN: tile-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(canonicalize)'
// RUN: tile-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(tile-canonicalize, cse)'

// The tile ops' verifiers run after every pipeline (passes/pass_runner.py), not only in
// tile-verify: IR that a pass leaves invalid is reported at the op, whatever the passes were.

func.func @bad_broadcast(%t: tensor<3x64xf32>) -> tensor<32x64xf32> {
  // expected-error @below {{'tile.broadcast' op cannot broadcast [3, 64] to [32, 64]}}
  %b = "tile.broadcast"(%t) : (tensor<3x64xf32>) -> tensor<32x64xf32>
  return %b : tensor<32x64xf32>
}

// -----

func.func @bad_reshape(%t: tensor<64xf32>) -> tensor<8x4xf32> {
  // expected-error @below {{'tile.reshape' op reshape from [64] to [8, 4] changes the number of elements}}
  %r = "tile.reshape"(%t) : (tensor<64xf32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
