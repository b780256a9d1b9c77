// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-cpu-grid)' | FileCheck %s

// The grid becomes three trailing i32 arguments and three loops, z outermost; each
// program id is its axis' induction variable, each program count its grid argument.

// CHECK-LABEL: func.func @k
// CHECK-SAME: (%[[X:[^:]*]]: memref<?xi32>, %[[GX:[^:]*]]: i32, %[[GY:[^:]*]]: i32, %[[GZ:[^:]*]]: i32)
// CHECK-SAME: llvm.emit_c_interface
// CHECK: scf.for %[[Z:.*]] = %{{.*}} to %[[GZ]]
// CHECK-NEXT: scf.for %[[Y:.*]] = %{{.*}} to %[[GY]]
// CHECK-NEXT: scf.for %[[PX:.*]] = %{{.*}} to %[[GX]]
// CHECK-NOT: tile.program_id
// CHECK-NOT: tile.num_programs
// CHECK: %[[S:.*]] = arith.addi %[[PX]], %[[GY]] : i32
// CHECK: memref.store %[[S]], %[[X]]
func.func @k(%x: memref<?xi32>) attributes {tile.kernel} {
  %pid = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %n = "tile.num_programs"() {axis = 1 : i32} : () -> i32
  %s = arith.addi %pid, %n : i32
  %i = arith.index_cast %pid : i32 to index
  memref.store %s, %x[%i] : memref<?xi32>
  return
}

// -----

// A function that is not a kernel is left as it is.

// CHECK-LABEL: func.func @helper
// CHECK-SAME: (%{{[^:]*}}: i32) -> i32
// CHECK-NOT: scf.for
func.func @helper(%a: i32) -> i32 {
  return %a : i32
}
