// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-column-loads{divisible-args=2})' | FileCheck %s

// A 16-bit dot's A read down its columns through rows wrapped by `% M` (the tutorial GEMM on
// A = X.T): M, kernel argument 2, is a multiple of 16 (`divisible-args`), so the wrapped rows
// keep runs of 16; the load becomes the transpose of a load of A's K x M transpose, M
// contiguous, and the dot reads that transpose in place as an M-major A (m_major_a).

!buf = memref<?x?xbf16, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func.func @wrapped_column_major_a
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = {{.*}})
// CHECK: %[[AT:.*]] = "tile.load"({{.*}}) : ({{.*}}) -> tensor<32x64xbf16>
// CHECK: %[[A:.*]] = "tile.trans"(%[[AT]]) {permutation = array<i32: 1, 0>} : (tensor<32x64xbf16>) -> tensor<64x32xbf16>
// CHECK: "tile.dot"(%[[A]], %{{.*}}, %[[ACC]]) {m_major_a}
func.func @wrapped_column_major_a(%x: !buf, %b: tensor<32x64xbf16>, %m: i32, %ld: i32, %n: i32) -> tensor<64x64xf32> {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %true = arith.constant true
  %zero = arith.constant 0.0 : bf16
  %fzero = arith.constant 0.0 : f32
  %init = "tile.splat"(%fzero) : (f32) -> tensor<64x64xf32>
  %r = scf.for %k = %c0 to %n step %c32 iter_args(%acc = %init) -> (tensor<64x64xf32>) : i32 {
    %rm = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %rk = "tile.arange"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
    %mm = "tile.splat"(%m) : (i32) -> tensor<64xi32>
    %wrapped = arith.remsi %rm, %mm : tensor<64xi32>
    %rows = "tile.reshape"(%wrapped) : (tensor<64xi32>) -> tensor<64x1xi32>
    %rb = "tile.broadcast"(%rows) : (tensor<64x1xi32>) -> tensor<64x32xi32>
    %cols = "tile.reshape"(%rk) : (tensor<32xi32>) -> tensor<1x32xi32>
    %ss = "tile.splat"(%ld) : (i32) -> tensor<1x32xi32>
    %scaled = arith.muli %cols, %ss : tensor<1x32xi32>
    %cb = "tile.broadcast"(%scaled) : (tensor<1x32xi32>) -> tensor<64x32xi32>
    %offs = arith.addi %rb, %cb : tensor<64x32xi32>
    %mask = "tile.splat"(%true) : (i1) -> tensor<64x32xi1>
    %other = "tile.splat"(%zero) : (bf16) -> tensor<64x32xbf16>
    %a = "tile.load"(%x, %offs, %mask, %other) : (!buf, tensor<64x32xi32>, tensor<64x32xi1>, tensor<64x32xbf16>) -> tensor<64x32xbf16>
    %d = "tile.dot"(%a, %b, %acc) : (tensor<64x32xbf16>, tensor<32x64xbf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  return %r : tensor<64x64xf32>
}

// -----

// Without M known a multiple of 16 (argument 2 here is not M), `% M` may end a run anywhere:
// the load stays as it is.

!buf = memref<?x?xbf16, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func.func @wrapped_unknown_m
// CHECK-NOT: tile.trans
// CHECK: "tile.dot"
// CHECK-NOT: m_major_a
func.func @wrapped_unknown_m(%x: !buf, %b: tensor<32x64xbf16>, %ld: i32, %m: i32, %n: i32) -> tensor<64x64xf32> {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %true = arith.constant true
  %zero = arith.constant 0.0 : bf16
  %fzero = arith.constant 0.0 : f32
  %init = "tile.splat"(%fzero) : (f32) -> tensor<64x64xf32>
  %r = scf.for %k = %c0 to %n step %c32 iter_args(%acc = %init) -> (tensor<64x64xf32>) : i32 {
    %rm = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %rk = "tile.arange"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
    %mm = "tile.splat"(%m) : (i32) -> tensor<64xi32>
    %wrapped = arith.remsi %rm, %mm : tensor<64xi32>
    %rows = "tile.reshape"(%wrapped) : (tensor<64xi32>) -> tensor<64x1xi32>
    %rb = "tile.broadcast"(%rows) : (tensor<64x1xi32>) -> tensor<64x32xi32>
    %cols = "tile.reshape"(%rk) : (tensor<32xi32>) -> tensor<1x32xi32>
    %ss = "tile.splat"(%ld) : (i32) -> tensor<1x32xi32>
    %scaled = arith.muli %cols, %ss : tensor<1x32xi32>
    %cb = "tile.broadcast"(%scaled) : (tensor<1x32xi32>) -> tensor<64x32xi32>
    %offs = arith.addi %rb, %cb : tensor<64x32xi32>
    %mask = "tile.splat"(%true) : (i1) -> tensor<64x32xi1>
    %other = "tile.splat"(%zero) : (bf16) -> tensor<64x32xbf16>
    %a = "tile.load"(%x, %offs, %mask, %other) : (!buf, tensor<64x32xi32>, tensor<64x32xi1>, tensor<64x32xbf16>) -> tensor<64x32xbf16>
    %d = "tile.dot"(%a, %b, %acc) : (tensor<64x32xbf16>, tensor<32x64xbf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  return %r : tensor<64x64xf32>
}

// -----

// A paged cache's K^T (head dim down dim 0, tokens gathered through a block table) as a dot's
// B: the transpose of a load of K's rows, which the dot reads in place, K-major (k_major_b).

!buf = memref<?x?xbf16, strided<[?, ?], offset: ?>>
!table = memref<?xi32, strided<[?], offset: ?>>

// CHECK-LABEL: func.func @paged_keys
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = {{.*}})
// CHECK: %[[KT:.*]] = "tile.load"({{.*}}) : ({{.*}}) -> tensor<32x64xbf16>
// CHECK: %[[K:.*]] = "tile.trans"(%[[KT]]) {permutation = array<i32: 1, 0>} : (tensor<32x64xbf16>) -> tensor<64x32xbf16>
// CHECK: "tile.dot"(%{{.*}}, %[[K]], %[[ACC]]) {k_major_b}
func.func @paged_keys(%kc: !buf, %bt: !table, %q: tensor<16x64xbf16>, %s: i32, %n: i32) -> tensor<16x32xf32> {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %true = arith.constant true
  %zero = arith.constant 0.0 : bf16
  %fzero = arith.constant 0.0 : f32
  %init = "tile.splat"(%fzero) : (f32) -> tensor<16x32xf32>
  %r = scf.for %k = %c0 to %n step %c32 iter_args(%acc = %init) -> (tensor<16x32xf32>) : i32 {
    %rd = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %rn = "tile.arange"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
    %tmask = "tile.splat"(%true) : (i1) -> tensor<32xi1>
    %tzero = "tile.splat"(%c0) : (i32) -> tensor<32xi32>
    %blocks = "tile.load"(%bt, %rn, %tmask, %tzero) : (!table, tensor<32xi32>, tensor<32xi1>, tensor<32xi32>) -> tensor<32xi32>
    %ss = "tile.splat"(%s) : (i32) -> tensor<32xi32>
    %tok = arith.muli %blocks, %ss : tensor<32xi32>
    %rows = "tile.reshape"(%rd) : (tensor<64xi32>) -> tensor<64x1xi32>
    %rb = "tile.broadcast"(%rows) : (tensor<64x1xi32>) -> tensor<64x32xi32>
    %cols = "tile.reshape"(%tok) : (tensor<32xi32>) -> tensor<1x32xi32>
    %cb = "tile.broadcast"(%cols) : (tensor<1x32xi32>) -> tensor<64x32xi32>
    %offs = arith.addi %rb, %cb : tensor<64x32xi32>
    %mask = "tile.splat"(%true) : (i1) -> tensor<64x32xi1>
    %other = "tile.splat"(%zero) : (bf16) -> tensor<64x32xbf16>
    %kk = "tile.load"(%kc, %offs, %mask, %other) : (!buf, tensor<64x32xi32>, tensor<64x32xi1>, tensor<64x32xbf16>) -> tensor<64x32xbf16>
    %d = "tile.dot"(%q, %kk, %acc) : (tensor<16x64xbf16>, tensor<64x32xbf16>, tensor<16x32xf32>) -> tensor<16x32xf32>
    scf.yield %d : tensor<16x32xf32>
  }
  return %r : tensor<16x32xf32>
}
