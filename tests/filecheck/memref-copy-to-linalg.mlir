// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(memref-copy-to-linalg)' | FileCheck %s

// CHECK-LABEL: func.func @copy
// CHECK-SAME: (%[[A:[^:]*]]: memref<64xf32>, %[[B:[^:]*]]: memref<64xf32>)
// CHECK-NOT: memref.copy
// CHECK: linalg.copy{{.*}} ins(%[[A]] : memref<64xf32>) outs(%[[B]] : memref<64xf32>)
// CHECK-NEXT: return
func.func @copy(%a: memref<64xf32>, %b: memref<64xf32>) {
  memref.copy %a, %b : memref<64xf32> to memref<64xf32>
  return
}

// -----

// Strided and dynamic views too; every copy is rewritten.

// CHECK-LABEL: func.func @strided
// CHECK-SAME: (%[[A:[^:]*]]: memref<?x?xf16, strided<[?, ?], offset: ?>>, %[[B:[^:]*]]: memref<?x?xf16>, %[[C:[^:]*]]: memref<?x?xf16>)
// CHECK-NOT: memref.copy
// CHECK: linalg.copy{{.*}} ins(%[[A]] : memref<?x?xf16, strided<[?, ?], offset: ?>>) outs(%[[B]] : memref<?x?xf16>)
// CHECK-NEXT: linalg.copy{{.*}} ins(%[[B]] : memref<?x?xf16>) outs(%[[C]] : memref<?x?xf16>)
// CHECK-NOT: memref.copy
// CHECK: return
func.func @strided(%a: memref<?x?xf16, strided<[?, ?], offset: ?>>, %b: memref<?x?xf16>, %c: memref<?x?xf16>) {
  memref.copy %a, %b : memref<?x?xf16, strided<[?, ?], offset: ?>> to memref<?x?xf16>
  memref.copy %b, %c : memref<?x?xf16> to memref<?x?xf16>
  return
}
