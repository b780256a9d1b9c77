// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(emulate-i1-memrefs)' | FileCheck %s

// A bool argument becomes bytes: the load is narrowed after, the store widened before.

// CHECK-LABEL: func.func @copy_bools
// CHECK-SAME: (%[[X:[^:]*]]: memref<?xi8>, %[[Y:[^:]*]]: memref<?xi8>, %[[I:[^:]*]]: index)
// CHECK: %[[B:.*]] = memref.load %[[X]][%[[I]]] : memref<?xi8>
// CHECK-NEXT: %[[N:.*]] = arith.trunci %[[B]] : i8 to i1
// CHECK-NEXT: %[[F:.*]] = arith.xori %[[N]], %{{.*}} : i1
// CHECK-NEXT: %[[W:.*]] = arith.extui %[[F]] : i1 to i8
// CHECK-NEXT: memref.store %[[W]], %[[Y]][%[[I]]] : memref<?xi8>
func.func @copy_bools(%x: memref<?xi1>, %y: memref<?xi1>, %i: index) {
  %true = arith.constant true
  %b = memref.load %x[%i] : memref<?xi1>
  %f = arith.xori %b, %true : i1
  memref.store %f, %y[%i] : memref<?xi1>
  return
}

// -----

// On the GPU the kernel's signature changes with its host-side launch (the GPU target's
// bool tensors); other memrefs are left alone.

// CHECK-LABEL: gpu.func @kernel
// CHECK-SAME: (%[[X:[^:]*]]: memref<?xi8>, %[[F:[^:]*]]: memref<?xf32>)
// CHECK: %[[B:.*]] = memref.load %[[X]]
// CHECK-NEXT: arith.trunci %[[B]] : i8 to i1
// CHECK: memref.load %[[F]]{{.*}} : memref<?xf32>
// CHECK-LABEL: func.func @host
// CHECK-SAME: (%[[HX:[^:]*]]: memref<?xi8>, %[[HF:[^:]*]]: memref<?xf32>)
// CHECK: gpu.launch_func @kernels::@kernel {{.*}} args(%[[HX]] : memref<?xi8>, %[[HF]] : memref<?xf32>)
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel(%x: memref<?xi1>, %f: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %b = memref.load %x[%c0] : memref<?xi1>
      %v = memref.load %f[%c0] : memref<?xf32>
      %z = arith.select %b, %v, %v : f32
      memref.store %z, %f[%c0] : memref<?xf32>
      gpu.return
    }
  }
  func.func @host(%x: memref<?xi1>, %f: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<?xi1>, %f : memref<?xf32>)
    return
  }
}

// -----

// A mask's buffer in shared memory (the GPU's linalg path): the global and its uses are bytes.

// CHECK: memref.global "private" @mask_buffer : memref<16xi8, #gpu.address_space<workgroup>>
// CHECK-LABEL: func.func @shared_bools
// CHECK: %[[G:.*]] = memref.get_global @mask_buffer : memref<16xi8, #gpu.address_space<workgroup>>
// CHECK: %[[W:.*]] = arith.extui %{{.*}} : i1 to i8
// CHECK: memref.store %[[W]], %[[G]][%{{.*}}] : memref<16xi8, #gpu.address_space<workgroup>>
memref.global "private" @mask_buffer : memref<16xi1, #gpu.address_space<workgroup>>
func.func @shared_bools(%i: index, %b: i1) {
  %g = memref.get_global @mask_buffer : memref<16xi1, #gpu.address_space<workgroup>>
  memref.store %b, %g[%i] : memref<16xi1, #gpu.address_space<workgroup>>
  return
}
