// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-canonicalize)' | FileCheck %s
// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(canonicalize, cse)' | FileCheck %s --check-prefix=UPSTREAM
// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-canonicalize{merge=0})' \
// RUN:   | FileCheck %s --check-prefix=NOMERGE

// IRDL gives tile ops no traits: canonicalize and cse keep them all. tile-canonicalize
// erases dead pure ops, merges identical ones and folds the simple cases.

// CHECK-LABEL: func.func @dead_splat
// CHECK-NOT: tile.splat
// CHECK: return
// UPSTREAM-LABEL: func.func @dead_splat
// UPSTREAM: tile.splat
// NOMERGE-LABEL: func.func @dead_splat
// NOMERGE-NOT: tile.splat
// NOMERGE: return
func.func @dead_splat(%x: f32) {
  %t = "tile.splat"(%x) : (f32) -> tensor<128xf32>
  return
}

// -----

// A store has effects: it stays, and so does what it stores.
// CHECK-LABEL: func.func @store_stays
// CHECK: %[[T:.*]] = "tile.splat"
// CHECK: "tile.store"({{.*}}, %[[T]],
func.func @store_stays(%y: memref<?xf32, strided<[?], offset: ?>>, %x: f32, %o: tensor<4xi32>, %m: tensor<4xi1>) {
  %t = "tile.splat"(%x) : (f32) -> tensor<4xf32>
  "tile.store"(%y, %o, %t, %m) : (memref<?xf32, strided<[?], offset: ?>>, tensor<4xi32>, tensor<4xf32>, tensor<4xi1>) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @merge_identical
// CHECK: %[[P:.*]] = "tile.program_id"() {axis = 0 : i32}
// CHECK-NOT: "tile.program_id"() {axis = 0 : i32}
// CHECK: %[[Q:.*]] = "tile.program_id"() {axis = 1 : i32}
// CHECK: %[[A:.*]] = "tile.arange"()
// CHECK-NOT: "tile.arange"
// CHECK: arith.addi %[[P]], %[[P]]
// CHECK: arith.addi %[[A]], %[[A]]
// UPSTREAM-LABEL: func.func @merge_identical
// UPSTREAM-COUNT-2: "tile.program_id"() {axis = 0 : i32}
// NOMERGE-LABEL: func.func @merge_identical
// NOMERGE-COUNT-2: "tile.program_id"() {axis = 0 : i32}
func.func @merge_identical() -> (i32, i32, tensor<64xi32>) {
  %a = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %b = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %c = "tile.program_id"() {axis = 1 : i32} : () -> i32
  %r0 = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
  %r1 = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
  %s = arith.addi %a, %b : i32
  %t = arith.addi %r0, %r1 : tensor<64xi32>
  return %s, %c, %t : i32, i32, tensor<64xi32>
}

// -----

// Loads read memory: two identical loads are not merged (a store may lie between them).
// CHECK-LABEL: func.func @loads_not_merged
// CHECK-COUNT-2: "tile.load"
func.func @loads_not_merged(%x: memref<?xf32, strided<[?], offset: ?>>, %o: tensor<4xi32>, %m: tensor<4xi1>, %z: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = "tile.load"(%x, %o, %m, %z) : (memref<?xf32, strided<[?], offset: ?>>, tensor<4xi32>, tensor<4xi1>, tensor<4xf32>) -> tensor<4xf32>
  %b = "tile.load"(%x, %o, %m, %z) : (memref<?xf32, strided<[?], offset: ?>>, tensor<4xi32>, tensor<4xi1>, tensor<4xf32>) -> tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @same_shape_identities
// NOMERGE-LABEL: func.func @same_shape_identities
// NOMERGE: return %arg0, %arg0, %arg0
// CHECK-NOT: "tile.reshape"
// CHECK-NOT: "tile.broadcast"
// CHECK-NOT: "tile.trans"
// CHECK: return %arg0, %arg0, %arg0
func.func @same_shape_identities(%t: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %r = "tile.reshape"(%t) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = "tile.broadcast"(%t) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = "tile.trans"(%t) {permutation = array<i32: 0, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r, %b, %p : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A real transpose and a real broadcast stay.
// CHECK-LABEL: func.func @real_shape_changes
// CHECK: "tile.trans"
// CHECK: "tile.broadcast"
func.func @real_shape_changes(%t: tensor<4x8xf32>, %u: tensor<1x8xf32>) -> (tensor<8x4xf32>, tensor<4x8xf32>) {
  %p = "tile.trans"(%t) {permutation = array<i32: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %b = "tile.broadcast"(%u) : (tensor<1x8xf32>) -> tensor<4x8xf32>
  return %p, %b : tensor<8x4xf32>, tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @chains
// CHECK: %[[R:.*]] = "tile.reshape"(%arg0) : (tensor<64xf32>) -> tensor<8x8xf32>
// CHECK: %[[S:.*]] = "tile.splat"(%arg1) : (f32) -> tensor<32x64xf32>
// CHECK: return %[[R]], %[[S]]
func.func @chains(%t: tensor<64xf32>, %x: f32) -> (tensor<8x8xf32>, tensor<32x64xf32>) {
  %a = "tile.reshape"(%t) : (tensor<64xf32>) -> tensor<1x64xf32>
  %b = "tile.reshape"(%a) : (tensor<1x64xf32>) -> tensor<8x8xf32>
  %s = "tile.splat"(%x) : (f32) -> tensor<1x64xf32>
  %w = "tile.broadcast"(%s) : (tensor<1x64xf32>) -> tensor<32x64xf32>
  return %b, %w : tensor<8x8xf32>, tensor<32x64xf32>
}

// -----

// Identical ops in different blocks are not merged (neither dominates the other).
// CHECK-LABEL: func.func @other_blocks
// CHECK: scf.if
// CHECK: "tile.arange"
// CHECK: else
// CHECK: "tile.arange"
func.func @other_blocks(%c: i1) -> tensor<8xi32> {
  %r = scf.if %c -> tensor<8xi32> {
    %a = "tile.arange"() {start = 0 : i32, end = 8 : i32} : () -> tensor<8xi32>
    scf.yield %a : tensor<8xi32>
  } else {
    %b = "tile.arange"() {start = 0 : i32, end = 8 : i32} : () -> tensor<8xi32>
    scf.yield %b : tensor<8xi32>
  }
  return %r : tensor<8xi32>
}

// -----

// `acc += dot(a, b)` of int8 tiles: the dot of zeros and the add are one dot into acc (exact).
// CHECK-LABEL: func.func @int8_dot_add
// CHECK-NOT: arith.addi
// CHECK: %[[D:.*]] = "tile.dot"(%arg0, %arg1, %arg2) : (tensor<64x32xi8>, tensor<32x16xi8>, tensor<64x16xi32>) -> tensor<64x16xi32>
// CHECK-NOT: arith.addi
// CHECK: return %[[D]]
func.func @int8_dot_add(%a: tensor<64x32xi8>, %b: tensor<32x16xi8>, %acc: tensor<64x16xi32>) -> tensor<64x16xi32> {
  %c0 = arith.constant 0 : i32
  %z = "tile.splat"(%c0) : (i32) -> tensor<64x16xi32>
  %d = "tile.dot"(%a, %b, %z) : (tensor<64x32xi8>, tensor<32x16xi8>, tensor<64x16xi32>) -> tensor<64x16xi32>
  %s = arith.addi %acc, %d : tensor<64x16xi32>
  return %s : tensor<64x16xi32>
}

// -----

// A float dot's too, as Triton's CombineDotAddFPattern does (vLLM's fused MoE writes
// `accumulator += tl.dot(a, b)`); the add on either side; a dot whose type differs stays.
// CHECK-LABEL: func.func @f16_dot_add
// CHECK-NOT: arith.addf
// CHECK: %[[D:.*]] = "tile.dot"(%arg0, %arg1, %arg2) : (tensor<64x32xf16>, tensor<32x16xf16>, tensor<64x16xf32>) -> tensor<64x16xf32>
// CHECK-NOT: arith.addf
// CHECK: return %[[D]]
func.func @f16_dot_add(%a: tensor<64x32xf16>, %b: tensor<32x16xf16>, %acc: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %z = "tile.splat"(%c0) : (f32) -> tensor<64x16xf32>
  %d = "tile.dot"(%a, %b, %z) : (tensor<64x32xf16>, tensor<32x16xf16>, tensor<64x16xf32>) -> tensor<64x16xf32>
  %s = arith.addf %acc, %d : tensor<64x16xf32>
  return %s : tensor<64x16xf32>
}

// -----

// CHECK-LABEL: func.func @dot_add_reversed
// CHECK-NOT: arith.addf
// CHECK: %[[D:.*]] = "tile.dot"(%arg0, %arg1, %arg2)
// CHECK: return %[[D]]
func.func @dot_add_reversed(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %acc: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %z = "tile.splat"(%c0) : (f32) -> tensor<64x16xf32>
  %d = "tile.dot"(%a, %b, %z) : (tensor<64x32xbf16>, tensor<32x16xbf16>, tensor<64x16xf32>) -> tensor<64x16xf32>
  %s = arith.addf %d, %acc : tensor<64x16xf32>
  return %s : tensor<64x16xf32>
}

// -----

// A tf32 dot folded keeps its precision (it was dropped: on a GPU the exact lowering then refused
// the blocks as past its shared memory).
// CHECK-LABEL: func.func @tf32_dot_add
// CHECK: %[[D:.*]] = "tile.dot"(%arg0, %arg1, %arg2) {input_precision = "tf32"}
// CHECK: return %[[D]]
func.func @tf32_dot_add(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %acc: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %z = "tile.splat"(%c0) : (f32) -> tensor<64x16xf32>
  %d = "tile.dot"(%a, %b, %z) {input_precision = "tf32"} : (tensor<64x32xf32>, tensor<32x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
  %s = arith.addf %acc, %d : tensor<64x16xf32>
  return %s : tensor<64x16xf32>
}

// -----

// A dot from a non-zero start keeps its add.
// CHECK-LABEL: func.func @dot_from_ones_add
// CHECK: "tile.dot"
// CHECK: arith.addf
func.func @dot_from_ones_add(%a: tensor<64x32xf16>, %b: tensor<32x16xf16>, %acc: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %c1 = arith.constant 1.0 : f32
  %o = "tile.splat"(%c1) : (f32) -> tensor<64x16xf32>
  %d = "tile.dot"(%a, %b, %o) : (tensor<64x32xf16>, tensor<32x16xf16>, tensor<64x16xf32>) -> tensor<64x16xf32>
  %s = arith.addf %acc, %d : tensor<64x16xf32>
  return %s : tensor<64x16xf32>
}
