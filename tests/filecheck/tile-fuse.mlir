// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-verify, tile-fuse)' | FileCheck %s

!buf = memref<?xf32, strided<[?], offset: ?>>

// add + relu + layernorm: every op between the loads and the store joins ONE
// fusion group; the loads stay before it, the store after it, and only the
// normalized row escapes it.

// CHECK-LABEL: func.func @add_relu_layernorm
// CHECK-SAME: (%[[X:[^:]*]]: memref<?xf32, strided<[?], offset: ?>>, %[[R:[^:]*]]: memref<?xf32, strided<[?], offset: ?>>, %[[Y:[^:]*]]: memref<?xf32, strided<[?], offset: ?>>, %[[OFFS:[^:]*]]: tensor<64xi32>, %[[MASK:[^:]*]]: tensor<64xi1>, %[[ZERO:[^:]*]]: tensor<64xf32>, %[[BETA:[^:]*]]: tensor<64xf32>, %[[N:[^:]*]]: f32, %[[EPS:[^:]*]]: f32)
// CHECK: %[[A:.*]] = "tile.load"(%[[X]], %[[OFFS]], %[[MASK]], %[[ZERO]])
// CHECK-NEXT: %[[B:.*]] = "tile.load"(%[[R]], %[[OFFS]], %[[MASK]], %[[ZERO]])
// CHECK-NEXT: %[[G:.*]] = scf.execute_region -> tensor<64xf32> no_inline {
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[A]], %[[B]] : tensor<64xf32>
// CHECK-NEXT: %[[H:.*]] = arith.maximumf %[[S]], %[[ZERO]] : tensor<64xf32>
// CHECK-NEXT: %[[SUM:.*]] = "tile.reduce"(%[[H]]) {axis = 0 : i32, kind = "sum"} : (tensor<64xf32>) -> f32
// CHECK-NEXT: %[[MEAN:.*]] = arith.divf %[[SUM]], %[[N]] : f32
// CHECK-NEXT: %[[MEANT:.*]] = "tile.splat"(%[[MEAN]])
// CHECK-NEXT: %[[C:.*]] = arith.subf %[[H]], %[[MEANT]] : tensor<64xf32>
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[C]], %[[C]] : tensor<64xf32>
// CHECK-NEXT: %[[VSUM:.*]] = "tile.reduce"(%[[SQ]]) {axis = 0 : i32, kind = "sum"}
// CHECK-NEXT: %[[VAR:.*]] = arith.divf %[[VSUM]], %[[N]] : f32
// CHECK-NEXT: %[[VE:.*]] = arith.addf %[[VAR]], %[[EPS]] : f32
// CHECK-NEXT: %[[RSTD:.*]] = math.rsqrt %[[VE]] : f32
// CHECK-NEXT: %[[RSTDT:.*]] = "tile.splat"(%[[RSTD]])
// CHECK-NEXT: %[[O:.*]] = arith.mulf %[[C]], %[[RSTDT]] : tensor<64xf32>
// CHECK-NEXT: %[[O2:.*]] = arith.addf %[[O]], %[[BETA]] : tensor<64xf32>
// CHECK-NEXT: scf.yield %[[O2]] : tensor<64xf32>
// CHECK-NEXT: } {tile.fusion_group}
// CHECK-NEXT: "tile.store"(%[[Y]], %[[OFFS]], %[[G]], %[[MASK]])
// CHECK-NOT: scf.execute_region
// CHECK: return
func.func @add_relu_layernorm(%x: !buf, %r: !buf, %y: !buf, %offs: tensor<64xi32>, %mask: tensor<64xi1>,
                              %zero: tensor<64xf32>, %beta: tensor<64xf32>, %n: f32, %eps: f32) {
  %a = "tile.load"(%x, %offs, %mask, %zero) : (!buf, tensor<64xi32>, tensor<64xi1>, tensor<64xf32>) -> tensor<64xf32>
  %b = "tile.load"(%r, %offs, %mask, %zero) : (!buf, tensor<64xi32>, tensor<64xi1>, tensor<64xf32>) -> tensor<64xf32>
  %s = arith.addf %a, %b : tensor<64xf32>
  %h = arith.maximumf %s, %zero : tensor<64xf32>
  %sum = "tile.reduce"(%h) {axis = 0 : i32, kind = "sum"} : (tensor<64xf32>) -> f32
  %mean = arith.divf %sum, %n : f32
  %mean_t = "tile.splat"(%mean) : (f32) -> tensor<64xf32>
  %c = arith.subf %h, %mean_t : tensor<64xf32>
  %sq = arith.mulf %c, %c : tensor<64xf32>
  %var_sum = "tile.reduce"(%sq) {axis = 0 : i32, kind = "sum"} : (tensor<64xf32>) -> f32
  %var = arith.divf %var_sum, %n : f32
  %ve = arith.addf %var, %eps : f32
  %rstd = math.rsqrt %ve : f32
  %rstd_t = "tile.splat"(%rstd) : (f32) -> tensor<64xf32>
  %o = arith.mulf %c, %rstd_t : tensor<64xf32>
  %o2 = arith.addf %o, %beta : tensor<64xf32>
  "tile.store"(%y, %offs, %o2, %mask) : (!buf, tensor<64xi32>, tensor<64xf32>, tensor<64xi1>) -> ()
  return
}

// -----

// A load between two runs splits them into two groups; a value used both
// inside and after its group is yielded from it. (tile.arange is not fusible.)

!buf = memref<?xf32, strided<[?], offset: ?>>

// CHECK-LABEL: func.func @two_groups
// CHECK-SAME: (%[[X:[^:]*]]: memref
// CHECK: %[[R:.*]] = "tile.arange"
// CHECK-NEXT: %[[G1:.*]]:2 = scf.execute_region -> (tensor<64xi32>, tensor<64xi1>) no_inline {
// CHECK-NEXT: %[[BT:.*]] = "tile.splat"
// CHECK-NEXT: %[[OFF:.*]] = arith.addi %[[R]], %[[BT]] : tensor<64xi32>
// CHECK-NEXT: %[[LIM:.*]] = "tile.splat"
// CHECK-NEXT: %[[M:.*]] = arith.cmpi slt, %[[OFF]], %[[LIM]] : tensor<64xi32>
// CHECK-NEXT: scf.yield %[[OFF]], %[[M]] : tensor<64xi32>, tensor<64xi1>
// CHECK-NEXT: } {tile.fusion_group}
// CHECK-NEXT: %[[V:.*]] = "tile.load"(%[[X]], %[[G1]]#0, %[[G1]]#1
// CHECK-NEXT: %[[G2:.*]] = scf.execute_region -> f32 no_inline {
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[V]], %[[V]]
// CHECK-NEXT: %[[RED:.*]] = "tile.reduce"(%[[SQ]])
// CHECK-NEXT: scf.yield %[[RED]] : f32
// CHECK-NEXT: } {tile.fusion_group}
// CHECK-NEXT: return %[[G2]] : f32
func.func @two_groups(%x: !buf, %base: i32, %n: i32, %other: tensor<64xf32>) -> f32 {
  %r = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
  %base_t = "tile.splat"(%base) : (i32) -> tensor<64xi32>
  %off = arith.addi %r, %base_t : tensor<64xi32>
  %lim = "tile.splat"(%n) : (i32) -> tensor<64xi32>
  %m = arith.cmpi slt, %off, %lim : tensor<64xi32>
  %v = "tile.load"(%x, %off, %m, %other) : (!buf, tensor<64xi32>, tensor<64xi1>, tensor<64xf32>) -> tensor<64xf32>
  %sq = arith.mulf %v, %v : tensor<64xf32>
  %s = "tile.reduce"(%sq) {axis = 0 : i32, kind = "sum"} : (tensor<64xf32>) -> f32
  return %s : f32
}

// -----

// Not worth a group: a single tile op, and a run of scalar-only ops.

// CHECK-LABEL: func.func @no_groups
// CHECK-NOT: scf.execute_region
// CHECK: arith.addf %{{.*}} : tensor<64xf32>
// CHECK-NEXT: call @sink
// CHECK-NEXT: arith.mulf %{{.*}} : f32
// CHECK-NEXT: arith.addf %{{.*}} : f32
// CHECK-NEXT: return
func.func @no_groups(%t: tensor<64xf32>, %a: f32, %b: f32) -> (tensor<64xf32>, f32) {
  %u = arith.addf %t, %t : tensor<64xf32>
  func.call @sink(%u) : (tensor<64xf32>) -> ()
  %p = arith.mulf %a, %b : f32
  %q = arith.addf %p, %a : f32
  return %u, %q : tensor<64xf32>, f32
}
func.func private @sink(tensor<64xf32>)
