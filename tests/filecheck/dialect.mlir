// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-verify)' | FileCheck %s
// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-verify)' | tile-opt - --split-input-file --pass-pipeline='builtin.module(tile-verify)' | FileCheck %s

// Round trip of every tile op (generic form) and of the #tile.blocked encoding.

// CHECK-LABEL: func.func @grid
// CHECK: %[[PID:.*]] = "tile.program_id"() {axis = 0 : i32} : () -> i32
// CHECK: %[[N:.*]] = "tile.num_programs"() {axis = 2 : i32} : () -> i32
// CHECK: %[[S:.*]] = arith.addi %[[PID]], %[[N]] : i32
// CHECK: return %[[S]] : i32
func.func @grid() -> i32 {
  %pid = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %n = "tile.num_programs"() {axis = 2 : i32} : () -> i32
  %s = arith.addi %pid, %n : i32
  return %s : i32
}

// -----

// CHECK-LABEL: func.func @shapes
// CHECK-SAME: (%[[X:.*]]: f32)
// CHECK: %[[R:.*]] = "tile.arange"() {end = 80 : i32, start = 16 : i32} : () -> tensor<64xi32>
// CHECK: %[[SP:.*]] = "tile.splat"(%[[X]]) : (f32) -> tensor<1x64xf32>
// CHECK: %[[B:.*]] = "tile.broadcast"(%[[SP]]) : (tensor<1x64xf32>) -> tensor<32x64xf32>
// CHECK: %[[RS:.*]] = "tile.reshape"(%[[B]]) : (tensor<32x64xf32>) -> tensor<2048xf32>
// CHECK: %[[RED:.*]] = "tile.reduce"(%[[B]]) {axis = 1 : i32, kind = "max"} : (tensor<32x64xf32>) -> tensor<32xf32>
// CHECK: %[[SUM:.*]] = "tile.reduce"(%[[RS]]) {axis = 0 : i32, kind = "sum"} : (tensor<2048xf32>) -> f32
// CHECK: return %[[R]], %[[RED]], %[[SUM]]
func.func @shapes(%x: f32) -> (tensor<64xi32>, tensor<32xf32>, f32) {
  %r = "tile.arange"() {start = 16 : i32, end = 80 : i32} : () -> tensor<64xi32>
  %sp = "tile.splat"(%x) : (f32) -> tensor<1x64xf32>
  %b = "tile.broadcast"(%sp) : (tensor<1x64xf32>) -> tensor<32x64xf32>
  %rs = "tile.reshape"(%b) : (tensor<32x64xf32>) -> tensor<2048xf32>
  %red = "tile.reduce"(%b) {axis = 1 : i32, kind = "max"} : (tensor<32x64xf32>) -> tensor<32xf32>
  %sum = "tile.reduce"(%rs) {axis = 0 : i32, kind = "sum"} : (tensor<2048xf32>) -> f32
  return %r, %red, %sum : tensor<64xi32>, tensor<32xf32>, f32
}

// -----

// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[X:.*]]: memref<?xf32, strided<[?], offset: ?>>, %[[Y:.*]]: memref<?xf32, strided<[?], offset: ?>>, %[[OFFS:.*]]: tensor<128xi32>, %[[MASK:.*]]: tensor<128xi1>, %[[OTHER:.*]]: tensor<128xf32>)
// CHECK: %[[V:.*]] = "tile.load"(%[[X]], %[[OFFS]], %[[MASK]], %[[OTHER]]) : (memref<?xf32, strided<[?], offset: ?>>, tensor<128xi32>, tensor<128xi1>, tensor<128xf32>) -> tensor<128xf32>
// CHECK: "tile.store"(%[[Y]], %[[OFFS]], %[[V]], %[[MASK]]) : (memref<?xf32, strided<[?], offset: ?>>, tensor<128xi32>, tensor<128xf32>, tensor<128xi1>) -> ()
func.func @gather(%x: memref<?xf32, strided<[?], offset: ?>>, %y: memref<?xf32, strided<[?], offset: ?>>,
                  %offs: tensor<128xi32>, %mask: tensor<128xi1>, %other: tensor<128xf32>) {
  %v = "tile.load"(%x, %offs, %mask, %other)
      : (memref<?xf32, strided<[?], offset: ?>>, tensor<128xi32>, tensor<128xi1>, tensor<128xf32>) -> tensor<128xf32>
  "tile.store"(%y, %offs, %v, %mask)
      : (memref<?xf32, strided<[?], offset: ?>>, tensor<128xi32>, tensor<128xf32>, tensor<128xi1>) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @blocks
// CHECK-SAME: (%[[A:.*]]: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %[[B:.*]]: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %[[C:.*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>, %[[I:.*]]: i32, %[[J:.*]]: i32, %[[ACC:.*]]: tensor<64x64xf32>)
// CHECK: %[[TA:.*]] = "tile.load_tile"(%[[A]], %[[I]], %[[J]]) {padding = 0.000000e+00 : bf16} : (memref<?x?xbf16, strided<[?, ?], offset: ?>>, i32, i32) -> tensor<64x32xbf16>
// CHECK: %[[TB:.*]] = "tile.load_tile"(%[[B]], %[[J]], %[[I]]) {padding = 0.000000e+00 : bf16}
// CHECK-SAME: -> tensor<32x64xbf16>
// CHECK: %[[D:.*]] = "tile.dot"(%[[TA]], %[[TB]], %[[ACC]]) : (tensor<64x32xbf16>, tensor<32x64xbf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
// CHECK: "tile.store_tile"(%[[C]], %[[D]], %[[I]], %[[J]]) : (memref<?x?xf32, strided<[?, ?], offset: ?>>, tensor<64x64xf32>, i32, i32) -> ()
func.func @blocks(%a: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %b: memref<?x?xbf16, strided<[?, ?], offset: ?>>,
                  %c: memref<?x?xf32, strided<[?, ?], offset: ?>>, %i: i32, %j: i32, %acc: tensor<64x64xf32>) {
  %ta = "tile.load_tile"(%a, %i, %j) {padding = 0.0 : bf16} : (memref<?x?xbf16, strided<[?, ?], offset: ?>>, i32, i32) -> tensor<64x32xbf16>
  %tb = "tile.load_tile"(%b, %j, %i) {padding = 0.0 : bf16} : (memref<?x?xbf16, strided<[?, ?], offset: ?>>, i32, i32) -> tensor<32x64xbf16>
  %d = "tile.dot"(%ta, %tb, %acc) : (tensor<64x32xbf16>, tensor<32x64xbf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
  "tile.store_tile"(%c, %d, %i, %j) : (memref<?x?xf32, strided<[?, ?], offset: ?>>, tensor<64x64xf32>, i32, i32) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @layouts
// CHECK-SAME: (%[[T:.*]]: tensor<32x64xf32, #tile.blocked<[1, 4], [2, 16], [4, 1], [1, 0]>>)
// CHECK: %[[C:.*]] = "tile.convert_layout"(%[[T]]) : (tensor<32x64xf32, #tile.blocked<[1, 4], [2, 16], [4, 1], [1, 0]>>) -> tensor<32x64xf32, #tile.blocked<[4, 1], [16, 2], [1, 4], [0, 1]>>
// CHECK: return %[[C]] : tensor<32x64xf32, #tile.blocked<[4, 1], [16, 2], [1, 4], [0, 1]>>
func.func @layouts(%t: tensor<32x64xf32, #tile.blocked<[1, 4], [2, 16], [4, 1], [1, 0]>>)
    -> tensor<32x64xf32, #tile.blocked<[4, 1], [16, 2], [1, 4], [0, 1]>> {
  %c = "tile.convert_layout"(%t)
      : (tensor<32x64xf32, #tile.blocked<[1, 4], [2, 16], [4, 1], [1, 0]>>) -> tensor<32x64xf32, #tile.blocked<[4, 1], [16, 2], [1, 4], [0, 1]>>
  return %c : tensor<32x64xf32, #tile.blocked<[4, 1], [16, 2], [1, 4], [0, 1]>>
}

// -----

// CHECK-LABEL: func.func @trans
// CHECK-SAME: (%[[X:.*]]: tensor<2x32x64xf32>)
// CHECK: %[[T:.*]] = "tile.trans"(%[[X]]) {permutation = array<i32: 2, 0, 1>} : (tensor<2x32x64xf32>) -> tensor<64x2x32xf32>
// CHECK: return %[[T]]
func.func @trans(%x: tensor<2x32x64xf32>) -> tensor<64x2x32xf32> {
  %t = "tile.trans"(%x) {permutation = array<i32: 2, 0, 1>} : (tensor<2x32x64xf32>) -> tensor<64x2x32xf32>
  return %t : tensor<64x2x32xf32>
}

// -----

// CHECK-LABEL: func.func @print
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>)
// CHECK: "tile.print"(%[[X]]) {prefix = "x: "} : (tensor<8xf32>) -> ()
func.func @print(%x: tensor<8xf32>) {
  "tile.print"(%x) {prefix = "x: "} : (tensor<8xf32>) -> ()
  return
}
