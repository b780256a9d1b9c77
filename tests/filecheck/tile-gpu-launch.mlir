// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-gpu-launch{num-threads=128})' | FileCheck %s

// The kernel moves into a gpu.module with its signature unchanged; the program id is the
// block id; a parallel nest becomes a loop over its flattened index from the thread id,
// strided by the block size, between barriers; a buffer written there is shared memory.

// CHECK: gpu.module @tile_kernels
// CHECK: memref.global "private" @__tile_shared_0 : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK-LABEL: gpu.func @k
// CHECK-SAME: (%[[X:[^:]*]]: memref<?xf32>) kernel
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK-SAME: tile.shared_bytes = 256
// CHECK: %[[B:.*]] = gpu.block_id x
// CHECK: %[[PID:.*]] = arith.index_cast %[[B]] : index to i32
// CHECK: %[[BUF:.*]] = memref.get_global @__tile_shared_0
// CHECK: gpu.barrier
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: scf.for %[[I:.*]] = %[[T]] to %{{.*}} step %[[C128:.*]] {
// CHECK: %[[K:.*]] = arith.muli %[[I]], %{{.*}} : index
// CHECK: %[[J:.*]] = arith.addi %{{.*}}, %[[K]] : index
// CHECK: memref.store %{{.*}}, %[[BUF]][%[[J]]]
// CHECK: gpu.barrier
// CHECK-NOT: scf.parallel
// CHECK: gpu.return
// CHECK-NOT: func.func @k
func.func @k(%x: memref<?xf32>) attributes {tile.kernel} {
  %pid = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %buf = memref.alloc() : memref<64xf32>
  %base = arith.index_cast %pid : i32 to index
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %j = arith.addi %base, %i : index
    %v = memref.load %x[%j] : memref<?xf32>
    memref.store %v, %buf[%i] : memref<64xf32>
    scf.reduce
  }
  %first = memref.load %buf[%c0] : memref<64xf32>
  memref.store %first, %x[%base] : memref<?xf32>
  memref.dealloc %buf : memref<64xf32>
  return
}
