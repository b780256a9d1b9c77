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

// -----

// A B written as trans(q) of a row-major load (its last dim steps by one; a head's base added
// inside the row term, as attention's backward reads it) that another dot also reads: the
// load stays as it is and the dot is marked, so wgmma reads q's slot K-major in place.
!buf = memref<?x?xf16, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func.func @transposed_shared_load
// CHECK: %[[Q:.*]] = "tile.load"({{.*}}) : ({{.*}}) -> tensor<32x64xf16>
// CHECK: %[[QT:.*]] = "tile.trans"(%[[Q]]) {permutation = array<i32: 1, 0>}
// CHECK: "tile.dot"(%{{.*}}, %[[QT]], %{{.*}}) {k_major_b}
// CHECK: "tile.dot"(%{{.*}}, %[[Q]], %{{.*}}) :
func.func @transposed_shared_load(%w: !buf, %k: tensor<64x64xf16>, %ds: tensor<64x32xf16>, %base: i32, %s: i32, %n: i32) -> (tensor<64x32xf32>, tensor<64x64xf32>) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant 0.0 : f16
  %fzero = arith.constant 0.0 : f32
  %i1 = "tile.splat"(%fzero) : (f32) -> tensor<64x32xf32>
  %i2 = "tile.splat"(%fzero) : (f32) -> tensor<64x64xf32>
  %r:2 = scf.for %m = %c0 to %n step %c32 iter_args(%st = %i1, %dk = %i2) -> (tensor<64x32xf32>, tensor<64x64xf32>) : i32 {
    %rm = "tile.arange"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
    %rd = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %rows = "tile.reshape"(%rm) : (tensor<32xi32>) -> tensor<32x1xi32>
    %ss = "tile.splat"(%s) : (i32) -> tensor<32x1xi32>
    %scaled = arith.muli %rows, %ss : tensor<32x1xi32>
    %bb = "tile.splat"(%base) : (i32) -> tensor<32x1xi32>
    %based = arith.addi %bb, %scaled : tensor<32x1xi32>
    %rb = "tile.broadcast"(%based) : (tensor<32x1xi32>) -> tensor<32x64xi32>
    %cols = "tile.reshape"(%rd) : (tensor<64xi32>) -> tensor<1x64xi32>
    %cb = "tile.broadcast"(%cols) : (tensor<1x64xi32>) -> tensor<32x64xi32>
    %offs = arith.addi %rb, %cb : tensor<32x64xi32>
    %true = arith.constant true
    %mask = "tile.splat"(%true) : (i1) -> tensor<32x64xi1>
    %other = "tile.splat"(%zero) : (f16) -> tensor<32x64xf16>
    %q = "tile.load"(%w, %offs, %mask, %other) : (!buf, tensor<32x64xi32>, tensor<32x64xi1>, tensor<32x64xf16>) -> tensor<32x64xf16>
    %qt = "tile.trans"(%q) {permutation = array<i32: 1, 0>} : (tensor<32x64xf16>) -> tensor<64x32xf16>
    %s2 = "tile.dot"(%k, %qt, %st) : (tensor<64x64xf16>, tensor<64x32xf16>, tensor<64x32xf32>) -> tensor<64x32xf32>
    %d2 = "tile.dot"(%ds, %q, %dk) : (tensor<64x32xf16>, tensor<32x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
    scf.yield %s2, %d2 : tensor<64x32xf32>, tensor<64x64xf32>
  }
  return %r#0, %r#1 : tensor<64x32xf32>, tensor<64x64xf32>
}
