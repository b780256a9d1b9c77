// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-induction-offsets, canonicalize)' | FileCheck %s

// A pointer (offsets into %a) advanced by a loop-invariant step each iteration becomes its
// start plus the iteration's number times the step; the loop no longer carries it.

!buf = memref<?xf32, strided<[?], offset: ?>>

// CHECK-LABEL: func.func @advanced_by_a_stride
// CHECK-SAME: (%[[A:.*]]: memref{{.*}}, %[[N:.*]]: i32, %[[S:.*]]: i32)
// CHECK: %[[P0:.*]] = "tile.arange"
// CHECK: %[[STEP:.*]] = arith.muli %[[S]], %{{.*}} : i32
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %[[N]] step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (tensor<16xf32>)
// CHECK: %[[MOVED:.*]] = arith.muli %[[K]], %[[STEP]] : i32
// CHECK: %[[SPLAT:.*]] = "tile.splat"(%[[MOVED]]) : (i32) -> tensor<16xi32>
// CHECK: %[[P:.*]] = arith.addi %[[P0]], %[[SPLAT]] : tensor<16xi32>
// CHECK: "tile.load"(%[[A]], %[[P]], %{{.*}}, %{{.*}})
// CHECK-NOT: arith.addi %{{.*}}, %{{.*}} : tensor<16xi32>
// CHECK: scf.yield %{{.*}} : tensor<16xf32>
func.func @advanced_by_a_stride(%a: !buf, %n: i32, %s: i32) -> tensor<16xf32> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c16 = arith.constant 16 : i32
  %true = arith.constant true
  %zero = arith.constant 0.0 : f32
  %p0 = "tile.arange"() {start = 0 : i32, end = 16 : i32} : () -> tensor<16xi32>
  %acc0 = "tile.splat"(%zero) : (f32) -> tensor<16xf32>
  %r:2 = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %acc0, %p = %p0) -> (tensor<16xf32>, tensor<16xi32>) : i32 {
    %mask = "tile.splat"(%true) : (i1) -> tensor<16xi1>
    %other = "tile.splat"(%zero) : (f32) -> tensor<16xf32>
    %x = "tile.load"(%a, %p, %mask, %other) : (!buf, tensor<16xi32>, tensor<16xi1>, tensor<16xf32>) -> tensor<16xf32>
    %acc2 = arith.addf %acc, %x : tensor<16xf32>
    %step = arith.muli %s, %c16 : i32
    %d = "tile.splat"(%step) : (i32) -> tensor<16xi32>
    %p2 = arith.addi %p, %d : tensor<16xi32>
    scf.yield %acc2, %p2 : tensor<16xf32>, tensor<16xi32>
  }
  return %r#0 : tensor<16xf32>
}

// -----

// A scalar offset stepped down from a start and a step other than 0 and 1, read after the
// loop too: the body reads start - ((k - lb) / step) * 4; the loop still carries it for its result.

// CHECK-LABEL: func.func @scalar_read_after_the_loop
// CHECK-SAME: (%[[LB:.*]]: i32, %[[UB:.*]]: i32, %[[ST:.*]]: i32, %[[O0:.*]]: i32)
// CHECK: %[[R:.*]]:2 = scf.for %[[K:.*]] = %[[LB]] to %[[UB]] step %[[ST]] iter_args(%{{.*}} = %{{.*}}, %[[O:.*]] = %[[O0]])
// CHECK: %[[D:.*]] = arith.subi %[[K]], %[[LB]] : i32
// CHECK: %[[I:.*]] = arith.divsi %[[D]], %[[ST]] : i32
// CHECK: %[[M:.*]] = arith.muli %[[I]], %{{.*}} : i32
// CHECK: %[[OK:.*]] = arith.subi %[[O0]], %[[M]] : i32
// CHECK: arith.addi %{{.*}}, %[[OK]] : i32
// CHECK: %[[NEXT:.*]] = arith.subi %[[O]], %{{.*}} : i32
// CHECK: scf.yield %{{.*}}, %[[NEXT]] : i32, i32
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @scalar_read_after_the_loop(%lb: i32, %ub: i32, %st: i32, %o0: i32) -> (i32, i32) {
  %c4 = arith.constant 4 : i32
  %c0 = arith.constant 0 : i32
  %r:2 = scf.for %k = %lb to %ub step %st iter_args(%sum = %c0, %o = %o0) -> (i32, i32) : i32 {
    %sum2 = arith.addi %sum, %o : i32
    %o2 = arith.subi %o, %c4 : i32
    scf.yield %sum2, %o2 : i32, i32
  }
  return %r#0, %r#1 : i32, i32
}

// -----

// A step the loop changes (it reads the carried sum) is left alone.

// CHECK-LABEL: func.func @variant_step
// CHECK: scf.for {{.*}} iter_args(%[[SUM:.*]] = %{{.*}}, %[[O:.*]] = %{{.*}})
// CHECK: %[[NEXT:.*]] = arith.addi %[[O]], %[[SUM]] : i32
// CHECK: scf.yield %{{.*}}, %[[NEXT]]
func.func @variant_step(%n: i32, %o0: i32) -> (i32, i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r:2 = scf.for %k = %c0 to %n step %c1 iter_args(%sum = %c1, %o = %o0) -> (i32, i32) : i32 {
    %sum2 = arith.addi %sum, %k : i32
    %o2 = arith.addi %o, %sum : i32
    scf.yield %sum2, %o2 : i32, i32
  }
  return %r#0, %r#1 : i32, i32
}
