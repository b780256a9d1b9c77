// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-trans-loads)' | FileCheck %s

// A load that only a dot in a loop reads transposed becomes a load of the transposed
// offsets, rebuilt from their own shape and elementwise ops: rn[:, None] * s + rk[None, :]
// becomes rn[None, :] * s + rk[:, None], the form of a load through strides.

!buf = memref<?x?xf16, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func.func @dot_of_a_transposed_load
// CHECK-SAME: (%[[B:.*]]: memref<?x?xf16, strided<[?, ?], offset: ?>>, %[[A:.*]]: tensor<64x32xf16>, %[[S:.*]]: i32, %[[N:.*]]: i32)
// CHECK: scf.for %[[K:.*]] = {{.*}} iter_args(%[[ACC:.*]] = {{.*}})
// CHECK: %[[RN:.*]] = "tile.arange"() {{.*}} : () -> tensor<64xi32>
// CHECK: %[[RK:.*]] = "tile.arange"() {{.*}} : () -> tensor<32xi32>
// CHECK: %[[ROWS:.*]] = "tile.reshape"(%[[RN]]) : (tensor<64xi32>) -> tensor<1x64xi32>
// CHECK: %[[SS:.*]] = "tile.splat"(%[[S]]) : (i32) -> tensor<1x64xi32>
// CHECK: %[[SCALED:.*]] = arith.muli %[[ROWS]], %[[SS]] : tensor<1x64xi32>
// CHECK: %[[RB:.*]] = "tile.broadcast"(%[[SCALED]]) : (tensor<1x64xi32>) -> tensor<32x64xi32>
// CHECK: %[[COLS:.*]] = "tile.reshape"(%[[RK]]) : (tensor<32xi32>) -> tensor<32x1xi32>
// CHECK: %[[CB:.*]] = "tile.broadcast"(%[[COLS]]) : (tensor<32x1xi32>) -> tensor<32x64xi32>
// CHECK: %[[OFFS:.*]] = arith.addi %[[RB]], %[[CB]] : tensor<32x64xi32>
// CHECK: %[[MASK:.*]] = "tile.splat"(%{{.*}}) : (i1) -> tensor<32x64xi1>
// CHECK: %[[OTHER:.*]] = "tile.splat"(%{{.*}}) : (f16) -> tensor<32x64xf16>
// CHECK: %[[BT:.*]] = "tile.load"(%[[B]], %[[OFFS]], %[[MASK]], %[[OTHER]]) : ({{.*}}) -> tensor<32x64xf16>
// CHECK-NOT: tile.trans
// CHECK: "tile.dot"(%[[A]], %[[BT]], %[[ACC]])
func.func @dot_of_a_transposed_load(%b: !buf, %a: tensor<64x32xf16>, %s: i32, %n: i32) -> tensor<64x64xf32> {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %true = arith.constant true
  %zero = arith.constant 0.0 : f16
  %fzero = arith.constant 0.0 : f32
  %init = "tile.splat"(%fzero) : (f32) -> tensor<64x64xf32>
  %r = scf.for %k = %c0 to %n step %c32 iter_args(%acc = %init) -> (tensor<64x64xf32>) : i32 {
    %rn = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %rk = "tile.arange"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
    %rows = "tile.reshape"(%rn) : (tensor<64xi32>) -> tensor<64x1xi32>
    %ss = "tile.splat"(%s) : (i32) -> tensor<64x1xi32>
    %scaled = arith.muli %rows, %ss : tensor<64x1xi32>
    %rb = "tile.broadcast"(%scaled) : (tensor<64x1xi32>) -> tensor<64x32xi32>
    %cols = "tile.reshape"(%rk) : (tensor<32xi32>) -> tensor<1x32xi32>
    %cb = "tile.broadcast"(%cols) : (tensor<1x32xi32>) -> tensor<64x32xi32>
    %offs = arith.addi %rb, %cb : tensor<64x32xi32>
    %mask = "tile.splat"(%true) : (i1) -> tensor<64x32xi1>
    %other = "tile.splat"(%zero) : (f16) -> tensor<64x32xf16>
    %v = "tile.load"(%b, %offs, %mask, %other) : (!buf, tensor<64x32xi32>, tensor<64x32xi1>, tensor<64x32xf16>) -> tensor<64x32xf16>
    %vt = "tile.trans"(%v) {permutation = array<i32: 1, 0>} : (tensor<64x32xf16>) -> tensor<32x64xf16>
    %d = "tile.dot"(%a, %vt, %acc) : (tensor<64x32xf16>, tensor<32x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  return %r : tensor<64x64xf32>
}

// -----

// Outside a loop the load stays 16 bytes a thread along its rows and the transpose stays.

!buf = memref<?x?xf16, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func.func @transposed_load_outside_a_loop
// CHECK: %[[V:.*]] = "tile.load"
// CHECK: "tile.trans"(%[[V]])
func.func @transposed_load_outside_a_loop(%b: !buf, %offs: tensor<64x32xi32>, %mask: tensor<64x32xi1>,
                                          %other: tensor<64x32xf16>) -> tensor<32x64xf16> {
  %v = "tile.load"(%b, %offs, %mask, %other) : (!buf, tensor<64x32xi32>, tensor<64x32xi1>, tensor<64x32xf16>) -> tensor<64x32xf16>
  %vt = "tile.trans"(%v) {permutation = array<i32: 1, 0>} : (tensor<64x32xf16>) -> tensor<32x64xf16>
  return %vt : tensor<32x64xf16>
}
