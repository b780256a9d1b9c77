// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(align-dynamic-shared)' | FileCheck %s

// The dynamic shared memory global of a GPU module starts on a 1024-byte boundary and is
// external (PTX `.extern .shared`): it takes no static shared memory.

// CHECK-LABEL: gpu.module @kernels
// CHECK: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
gpu.module @kernels {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
}

// -----

// Other globals, in shared memory or not, keep their alignment.

// CHECK-LABEL: gpu.module @others
// CHECK: llvm.mlir.global internal @table() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<4 x i8>
// CHECK: llvm.mlir.global internal @__dynamic_shmem__1() {addr_space = 1 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
gpu.module @others {
  llvm.mlir.global internal @table() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<4 x i8>
  llvm.mlir.global internal @__dynamic_shmem__1() {addr_space = 1 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
}
