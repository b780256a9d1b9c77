// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-column-loads)' | FileCheck %s

// A 2-D load or store whose offsets step by one down dim 0 (rows[:, None] + cols[None, :] * ld)
// becomes the transpose of one through the transposed offsets, contiguous along the last dim.

!buf = memref<?x?xbf16, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func.func @column_major_load
// CHECK-SAME: (%[[X:.*]]: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %[[Y:.*]]: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %[[LD:.*]]: i32)
// CHECK: %[[RM:.*]] = "tile.arange"() {{.*}} : () -> tensor<64xi32>
// CHECK: %[[RN:.*]] = "tile.arange"() {{.*}} : () -> tensor<32xi32>
// CHECK: %[[ROWS:.*]] = "tile.reshape"(%[[RM]]) : (tensor<64xi32>) -> tensor<1x64xi32>
// CHECK: %[[RB:.*]] = "tile.broadcast"(%[[ROWS]]) : (tensor<1x64xi32>) -> tensor<32x64xi32>
// CHECK: %[[COLS:.*]] = "tile.reshape"(%[[RN]]) : (tensor<32xi32>) -> tensor<32x1xi32>
// CHECK: %[[SS:.*]] = "tile.splat"(%[[LD]]) : (i32) -> tensor<32x1xi32>
// CHECK: %[[SCALED:.*]] = arith.muli %[[COLS]], %[[SS]] : tensor<32x1xi32>
// CHECK: %[[CB:.*]] = "tile.broadcast"(%[[SCALED]]) : (tensor<32x1xi32>) -> tensor<32x64xi32>
// CHECK: %[[OFFS:.*]] = arith.addi %[[RB]], %[[CB]] : tensor<32x64xi32>
// CHECK: %[[XT:.*]] = "tile.load"(%[[X]], %[[OFFS]], %{{.*}}, %{{.*}}) : ({{.*}}) -> tensor<32x64xbf16>
// CHECK: %[[V:.*]] = "tile.trans"(%[[XT]]) {permutation = array<i32: 1, 0>} : (tensor<32x64xbf16>) -> tensor<64x32xbf16>
// CHECK: %[[TWICE:.*]] = arith.addf %[[V]], %[[V]] : tensor<64x32xbf16>
// CHECK: "tile.store"(%[[Y]], %{{.*}}, %[[TWICE]], %{{.*}})
func.func @column_major_load(%x: !buf, %y: !buf, %ld: i32) {
  %true = arith.constant true
  %zero = arith.constant 0.0 : bf16
  %rm = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
  %rn = "tile.arange"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
  %rows = "tile.reshape"(%rm) : (tensor<64xi32>) -> tensor<64x1xi32>
  %rb = "tile.broadcast"(%rows) : (tensor<64x1xi32>) -> tensor<64x32xi32>
  %cols = "tile.reshape"(%rn) : (tensor<32xi32>) -> tensor<1x32xi32>
  %ss = "tile.splat"(%ld) : (i32) -> tensor<1x32xi32>
  %scaled = arith.muli %cols, %ss : tensor<1x32xi32>
  %cb = "tile.broadcast"(%scaled) : (tensor<1x32xi32>) -> tensor<64x32xi32>
  %offs = arith.addi %rb, %cb : tensor<64x32xi32>
  %mask = "tile.splat"(%true) : (i1) -> tensor<64x32xi1>
  %other = "tile.splat"(%zero) : (bf16) -> tensor<64x32xbf16>
  %v = "tile.load"(%x, %offs, %mask, %other) : (!buf, tensor<64x32xi32>, tensor<64x32xi1>, tensor<64x32xbf16>) -> tensor<64x32xbf16>
  %twice = arith.addf %v, %v : tensor<64x32xbf16>
  %rowoffs = arith.muli %rb, %rb : tensor<64x32xi32>
  "tile.store"(%y, %rowoffs, %twice, %mask) : (!buf, tensor<64x32xi32>, tensor<64x32xbf16>, tensor<64x32xi1>) -> ()
  return
}

// -----

// A store down the columns stores the value's transpose through the transposed offsets.

!buf = memref<?x?xf32, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func.func @column_major_store
// CHECK-SAME: (%[[Y:.*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>, %[[V:.*]]: tensor<64x32xf32>, %[[LD:.*]]: i32, %[[N:.*]]: i32)
// CHECK: %[[OFFS:.*]] = arith.addi %{{.*}}, %{{.*}} : tensor<32x64xi32>
// CHECK: %[[MASK:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : tensor<32x64xi32>
// CHECK: %[[VT:.*]] = "tile.trans"(%[[V]]) {permutation = array<i32: 1, 0>} : (tensor<64x32xf32>) -> tensor<32x64xf32>
// CHECK: "tile.store"(%[[Y]], %[[OFFS]], %[[VT]], %[[MASK]]) : ({{.*}}, tensor<32x64xi32>, tensor<32x64xf32>, tensor<32x64xi1>) -> ()
func.func @column_major_store(%y: !buf, %v: tensor<64x32xf32>, %ld: i32, %n: i32) {
  %rm = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
  %rn = "tile.arange"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
  %rows = "tile.reshape"(%rm) : (tensor<64xi32>) -> tensor<64x1xi32>
  %rb = "tile.broadcast"(%rows) : (tensor<64x1xi32>) -> tensor<64x32xi32>
  %cols = "tile.reshape"(%rn) : (tensor<32xi32>) -> tensor<1x32xi32>
  %ss = "tile.splat"(%ld) : (i32) -> tensor<1x32xi32>
  %scaled = arith.muli %cols, %ss : tensor<1x32xi32>
  %cb = "tile.broadcast"(%scaled) : (tensor<1x32xi32>) -> tensor<64x32xi32>
  %offs = arith.addi %rb, %cb : tensor<64x32xi32>
  %nn = "tile.splat"(%n) : (i32) -> tensor<64x32xi32>
  %mask = arith.cmpi slt, %rb, %nn : tensor<64x32xi32>
  "tile.store"(%y, %offs, %v, %mask) : (!buf, tensor<64x32xi32>, tensor<64x32xf32>, tensor<64x32xi1>) -> ()
  return
}

// -----

// Rows contiguous along the last dim stay as they are.

!buf = memref<?x?xf16, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func.func @row_major_load
// CHECK: %[[V:.*]] = "tile.load"({{.*}}) : ({{.*}}) -> tensor<64x32xf16>
// CHECK-NOT: tile.trans
// CHECK: return %[[V]]
func.func @row_major_load(%x: !buf, %ld: i32) -> tensor<64x32xf16> {
  %true = arith.constant true
  %zero = arith.constant 0.0 : f16
  %rm = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
  %rn = "tile.arange"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32>
  %rows = "tile.reshape"(%rm) : (tensor<64xi32>) -> tensor<64x1xi32>
  %ss = "tile.splat"(%ld) : (i32) -> tensor<64x1xi32>
  %scaled = arith.muli %rows, %ss : tensor<64x1xi32>
  %rb = "tile.broadcast"(%scaled) : (tensor<64x1xi32>) -> tensor<64x32xi32>
  %cols = "tile.reshape"(%rn) : (tensor<32xi32>) -> tensor<1x32xi32>
  %cb = "tile.broadcast"(%cols) : (tensor<1x32xi32>) -> tensor<64x32xi32>
  %offs = arith.addi %rb, %cb : tensor<64x32xi32>
  %mask = "tile.splat"(%true) : (i1) -> tensor<64x32xi1>
  %other = "tile.splat"(%zero) : (f16) -> tensor<64x32xf16>
  %v = "tile.load"(%x, %offs, %mask, %other) : (!buf, tensor<64x32xi32>, tensor<64x32xi1>, tensor<64x32xf16>) -> tensor<64x32xf16>
  return %v : tensor<64x32xf16>
}
