// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(clone-elementwise-producers)' | FileCheck %s

// A pure elementwise linalg.generic with two uses gets one copy per use, so
// that linalg-fuse-elementwise-ops can fuse it into both consumers.

#id = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @two_uses
// CHECK-SAME: (%[[A:[^:]*]]: tensor<64xi32>, %[[B:[^:]*]]: tensor<64xi32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<64xi1>
// CHECK-NEXT: %[[M0:.*]] = linalg.generic {{.*}} ins(%[[A]], %[[B]] : tensor<64xi32>, tensor<64xi32>) outs(%[[E]] : tensor<64xi1>)
// CHECK: arith.cmpi slt
// CHECK: %[[M1:.*]] = linalg.generic {{.*}} ins(%[[A]], %[[B]] : tensor<64xi32>, tensor<64xi32>) outs(%[[E]] : tensor<64xi1>)
// CHECK: arith.cmpi slt
// CHECK: %[[X:.*]] = linalg.generic {{.*}} ins(%[[M0]] : tensor<64xi1>)
// CHECK: arith.extui
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[M1]] : tensor<64xi1>)
// CHECK: arith.extsi
// CHECK: return %[[X]], %[[Y]]
func.func @two_uses(%a: tensor<64xi32>, %b: tensor<64xi32>) -> (tensor<64xi8>, tensor<64xi8>) {
  %e = tensor.empty() : tensor<64xi1>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<64xi32>, tensor<64xi32>) outs(%e : tensor<64xi1>) {
  ^bb0(%x: i32, %y: i32, %o: i1):
    %c = arith.cmpi slt, %x, %y : i32
    linalg.yield %c : i1
  } -> tensor<64xi1>
  %e8 = tensor.empty() : tensor<64xi8>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%m : tensor<64xi1>) outs(%e8 : tensor<64xi8>) {
  ^bb0(%x: i1, %o: i8):
    %z = arith.extui %x : i1 to i8
    linalg.yield %z : i8
  } -> tensor<64xi8>
  %v = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%m : tensor<64xi1>) outs(%e8 : tensor<64xi8>) {
  ^bb0(%x: i1, %o: i8):
    %z = arith.extsi %x : i1 to i8
    linalg.yield %z : i8
  } -> tensor<64xi8>
  return %u, %v : tensor<64xi8>, tensor<64xi8>
}

// -----

// linalg.fill counts as pure elementwise: one fill per use (addf uses it twice).

// CHECK-LABEL: func.func @fill
// CHECK-SAME: (%[[X:[^:]*]]: f32)
// CHECK: %[[F0:.*]] = linalg.fill ins(%[[X]] : f32) outs(%{{.*}} : tensor<64xf32>)
// CHECK-NEXT: %[[F1:.*]] = linalg.fill ins(%[[X]] : f32) outs(%{{.*}} : tensor<64xf32>)
// CHECK-NEXT: %[[F2:.*]] = linalg.fill ins(%[[X]] : f32) outs(%{{.*}} : tensor<64xf32>)
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[F1]], %[[F0]] : tensor<64xf32>
// CHECK-NEXT: return %[[S]], %[[F2]]
func.func @fill(%x: f32) -> (tensor<64xf32>, tensor<64xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%x : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %s = arith.addf %f, %f : tensor<64xf32>
  return %s, %f : tensor<64xf32>, tensor<64xf32>
}

// -----

// Left alone: a reduction, and a producer that reads memory (it must not repeat).

#id = affine_map<(d0) -> (d0)>
#to_scalar = affine_map<(d0) -> ()>

// CHECK-LABEL: func.func @not_cloned
// CHECK-COUNT-1: iterator_types = ["reduction"]
// CHECK-NOT: iterator_types = ["reduction"]
// CHECK: memref.load
// CHECK-NOT: memref.load
// CHECK: return
func.func @not_cloned(%t: tensor<64xf32>, %init: tensor<f32>, %buf: memref<64xf32>, %e: tensor<64xf32>)
    -> (tensor<f32>, tensor<f32>, tensor<64xf32>, tensor<64xf32>) {
  %r = linalg.generic {indexing_maps = [#id, #to_scalar], iterator_types = ["reduction"]}
      ins(%t : tensor<64xf32>) outs(%init : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%e : tensor<64xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %v = memref.load %buf[%i] : memref<64xf32>
    linalg.yield %v : f32
  } -> tensor<64xf32>
  return %r, %r, %l, %l : tensor<f32>, tensor<f32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// A converted arith op passes its first operand as `outs`, for the shape only (its body
// never reads it): that is no use, so the chain is not cloned at every step (the clones
// doubled per step), and the unread `outs` becomes a tensor.empty.

#id = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[A:[^:]*]]: tensor<64xf32>)
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%[[A]], %[[A]] : tensor<64xf32>, tensor<64xf32>) outs(%{{.*}} : tensor<64xf32>)
// CHECK: arith.mulf
// CHECK-NOT: arith.mulf
// CHECK: %[[T:.*]] = linalg.generic {{.*}} ins(%[[S]], %[[A]] : tensor<64xf32>, tensor<64xf32>) outs(%[[E:.*]] : tensor<64xf32>)
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: return %[[T]]
func.func @chain(%a: tensor<64xf32>) -> tensor<64xf32> {
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %a : tensor<64xf32>, tensor<64xf32>) outs(%a : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<64xf32>
  %t = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%s, %a : tensor<64xf32>, tensor<64xf32>) outs(%s : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.addf %x, %y : f32
    linalg.yield %p : f32
  } -> tensor<64xf32>
  return %t : tensor<64xf32>
}
