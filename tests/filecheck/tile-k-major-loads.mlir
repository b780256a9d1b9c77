// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-k-major-loads)' | FileCheck %s

// A 16-bit dot's B read K-major (offsets step by one along K, dim 0) through columns that are
// no block start + arange (wrapped by % N, as tutorial 03 and vLLM's fused MoE write them)
// becomes the transpose of a load of its N x K transpose, and the dot is marked k_major_b.

!buf = memref<?x?xf16, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func.func @wrapped_columns
// CHECK-SAME: (%[[W:.*]]: memref<?x?xf16, strided<[?, ?], offset: ?>>, %[[A:.*]]: tensor<64x32xf16>, %[[S:.*]]: i32, %[[N:.*]]: i32)
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = {{.*}})
// CHECK: %[[RN:.*]] = "tile.arange"() {{.*}} : () -> tensor<64xi32>
// CHECK: %[[WRAPPED:.*]] = arith.remsi %[[RN]], %{{.*}} : tensor<64xi32>
// CHECK: %[[ROWS:.*]] = "tile.reshape"(%[[WRAPPED]]) : (tensor<64xi32>) -> tensor<64x1xi32>
// CHECK: %[[OFFS:.*]] = arith.addi %{{.*}}, %{{.*}} : tensor<64x32xi32>
// CHECK: %[[BT:.*]] = "tile.load"(%[[W]], %[[OFFS]], %{{.*}}, %{{.*}}) : ({{.*}}) -> tensor<64x32xf16>
// CHECK: %[[B:.*]] = "tile.trans"(%[[BT]]) {permutation = array<i32: 1, 0>} : (tensor<64x32xf16>) -> tensor<32x64xf16>
// CHECK: "tile.dot"(%[[A]], %[[B]], %[[ACC]]) {k_major_b}
func.func @wrapped_columns(%w: !buf, %a: tensor<64x32xf16>, %s: i32, %n: i32) -> tensor<64x64xf32> {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %true = arith.constant true
  %zero = arith.constant 0.0 : f16
  %fzero = arith.constant 0.0 : f32
  %init = "tile.splat"(%fzero) : (f32) -> tensor<64x64xf32>
  %r = scf.for %k = %c0 to %n step %c32 iter_args(%acc = %init) -> (tensor<64x64xf32>) : i32 {
    %rk = "tile.arange"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
    %rn = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %nn = "tile.splat"(%n) : (i32) -> tensor<64xi32>
    %wrapped = arith.remsi %rn, %nn : tensor<64xi32>
    %rows = "tile.reshape"(%rk) : (tensor<32xi32>) -> tensor<32x1xi32>
    %rb = "tile.broadcast"(%rows) : (tensor<32x1xi32>) -> tensor<32x64xi32>
    %cols = "tile.reshape"(%wrapped) : (tensor<64xi32>) -> tensor<1x64xi32>
    %ss = "tile.splat"(%s) : (i32) -> tensor<1x64xi32>
    %scaled = arith.muli %cols, %ss : tensor<1x64xi32>
    %cb = "tile.broadcast"(%scaled) : (tensor<1x64xi32>) -> tensor<32x64xi32>
    %offs = arith.addi %rb, %cb : tensor<32x64xi32>
    %mask = "tile.splat"(%true) : (i1) -> tensor<32x64xi1>
    %other = "tile.splat"(%zero) : (f16) -> tensor<32x64xf16>
    %b = "tile.load"(%w, %offs, %mask, %other) : (!buf, tensor<32x64xi32>, tensor<32x64xi1>, tensor<32x64xf16>) -> tensor<32x64xf16>
    %d = "tile.dot"(%a, %b, %acc) : (tensor<64x32xf16>, tensor<32x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  return %r : tensor<64x64xf32>
}

// -----

// A column-major block (block start + arange along N) is left to tile-pipeline, which copies
// it transposed itself.

!buf = memref<?x?xf16, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func.func @block_columns
// CHECK-NOT: tile.trans
// CHECK: "tile.dot"
// CHECK-NOT: k_major_b
func.func @block_columns(%w: !buf, %a: tensor<64x32xf16>, %s: i32, %n: i32) -> tensor<64x64xf32> {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %true = arith.constant true
  %zero = arith.constant 0.0 : f16
  %fzero = arith.constant 0.0 : f32
  %init = "tile.splat"(%fzero) : (f32) -> tensor<64x64xf32>
  %r = scf.for %k = %c0 to %n step %c32 iter_args(%acc = %init) -> (tensor<64x64xf32>) : i32 {
    %rk = "tile.arange"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
    %rn = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %rows = "tile.reshape"(%rk) : (tensor<32xi32>) -> tensor<32x1xi32>
    %rb = "tile.broadcast"(%rows) : (tensor<32x1xi32>) -> tensor<32x64xi32>
    %cols = "tile.reshape"(%rn) : (tensor<64xi32>) -> tensor<1x64xi32>
    %ss = "tile.splat"(%s) : (i32) -> tensor<1x64xi32>
    %scaled = arith.muli %cols, %ss : tensor<1x64xi32>
    %cb = "tile.broadcast"(%scaled) : (tensor<1x64xi32>) -> tensor<32x64xi32>
    %offs = arith.addi %rb, %cb : tensor<32x64xi32>
    %nn = "tile.splat"(%n) : (i32) -> tensor<32x1xi32>
    %in = arith.cmpi slt, %rows, %nn : tensor<32x1xi32>
    %mask = "tile.broadcast"(%in) : (tensor<32x1xi1>) -> tensor<32x64xi1>
    %other = "tile.splat"(%zero) : (f16) -> tensor<32x64xf16>
    %b = "tile.load"(%w, %offs, %mask, %other) : (!buf, tensor<32x64xi32>, tensor<32x64xi1>, tensor<32x64xf16>) -> tensor<32x64xf16>
    %d = "tile.dot"(%a, %b, %acc) : (tensor<64x32xf16>, tensor<32x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  return %r : tensor<64x64xf32>
}
