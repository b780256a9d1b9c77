// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-verify, convert-tile-to-linalg)' | FileCheck %s

// The shape ops: arange -> linalg.generic on linalg.index, splat -> linalg.fill,
// broadcast -> linalg.generic reading dim 0 of a size-1 source at 0,
// reshape -> tensor.expand_shape / tensor.collapse_shape.

// CHECK-DAG: #[[ID1:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[BCAST:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @shapes
// CHECK-SAME: (%[[X:[^:]*]]: f32)
// CHECK-NOT: tile.
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<64xi32>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID1]]], iterator_types = ["parallel"]} outs(%[[E0]] : tensor<64xi32>)
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: %[[II:.*]] = arith.index_cast %[[I]] : index to i32
// CHECK: %[[START:.*]] = arith.constant 16 : i32
// CHECK: %[[V:.*]] = arith.addi %[[II]], %[[START]] : i32
// CHECK: linalg.yield %[[V]] : i32
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<1x64xf32>
// CHECK: %[[SP:.*]] = linalg.fill ins(%[[X]] : f32) outs(%[[E1]] : tensor<1x64xf32>) -> tensor<1x64xf32>
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<32x64xf32>
// CHECK: %[[B:.*]] = linalg.generic {indexing_maps = [#[[BCAST]], #[[ID2]]], iterator_types = ["parallel", "parallel"]} ins(%[[SP]] : tensor<1x64xf32>) outs(%[[E2]] : tensor<32x64xf32>)
// CHECK: %[[SP1:.*]] = linalg.fill ins(%[[X]] : f32)
// CHECK: %[[EXP:.*]] = tensor.expand_shape %[[SP1]] {{\[\[}}0, 1]] output_shape [4, 16] : tensor<64xf32> into tensor<4x16xf32>
// CHECK: %[[COL:.*]] = tensor.collapse_shape %[[EXP]] {{\[\[}}0, 1]] : tensor<4x16xf32> into tensor<64xf32>
// CHECK: return %[[R]], %[[B]], %[[EXP]], %[[COL]]
func.func @shapes(%x: f32) -> (tensor<64xi32>, tensor<32x64xf32>, tensor<4x16xf32>, tensor<64xf32>) {
  %r = "tile.arange"() {start = 16 : i32, end = 80 : i32} : () -> tensor<64xi32>
  %sp = "tile.splat"(%x) : (f32) -> tensor<1x64xf32>
  %b = "tile.broadcast"(%sp) : (tensor<1x64xf32>) -> tensor<32x64xf32>
  %sp1 = "tile.splat"(%x) : (f32) -> tensor<64xf32>
  %e = "tile.reshape"(%sp1) : (tensor<64xf32>) -> tensor<4x16xf32>
  %c = "tile.reshape"(%e) : (tensor<4x16xf32>) -> tensor<64xf32>
  return %r, %b, %e, %c : tensor<64xi32>, tensor<32x64xf32>, tensor<4x16xf32>, tensor<64xf32>
}

// -----

// A fusion group is inlined (its ops move before it, its results are replaced
// by the yielded values); a reduce becomes a linalg.fill of the identity and
// a linalg.generic with a reduction iterator.

// CHECK: #[[IN:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK: #[[OUT:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @fused_reduce
// CHECK-SAME: (%[[T:[^:]*]]: tensor<4x64xf32>)
// CHECK-NOT: scf.execute_region
// CHECK: %[[M:.*]] = arith.mulf %[[T]], %[[T]] : tensor<4x64xf32>
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%[[E]] : tensor<4xf32>)
// CHECK: %[[RED:.*]] = linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "reduction"]} ins(%[[M]] : tensor<4x64xf32>) outs(%[[INIT]] : tensor<4xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[MAX:.*]] = arith.maximumf %[[ACC]], %[[A]] : f32
// CHECK-NEXT: linalg.yield %[[MAX]] : f32
// CHECK: return %[[RED]] : tensor<4xf32>
func.func @fused_reduce(%t: tensor<4x64xf32>) -> tensor<4xf32> {
  %g = scf.execute_region -> tensor<4xf32> no_inline {
    %m = arith.mulf %t, %t : tensor<4x64xf32>
    %r = "tile.reduce"(%m) {axis = 1 : i32, kind = "max"} : (tensor<4x64xf32>) -> tensor<4xf32>
    scf.yield %r : tensor<4xf32>
  } {tile.fusion_group}
  return %g : tensor<4xf32>
}

// -----

// A 1-D reduce reduces into a rank-0 tensor and extracts the scalar.

// CHECK: #[[SCALAR:.*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @sum_to_scalar
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : i32) outs(%{{.*}} : tensor<i32>)
// CHECK: %[[RED:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #[[SCALAR]]], iterator_types = ["reduction"]} {{.*}} outs(%[[INIT]] : tensor<i32>)
// CHECK: arith.addi
// CHECK: %[[S:.*]] = tensor.extract %[[RED]][] : tensor<i32>
// CHECK: return %[[S]] : i32
func.func @sum_to_scalar(%t: tensor<64xi32>) -> i32 {
  %r = "tile.reduce"(%t) {axis = 0 : i32, kind = "sum"} : (tensor<64xi32>) -> i32
  return %r : i32
}

// -----

// load: a gather from a 1-D unit-stride view of the buffer, masked by scf.if;
// store: an scf.parallel scatter, the mask carried as i8.

!buf = memref<?xf32, strided<[?], offset: ?>>

// CHECK-LABEL: func.func @gather_scatter
// CHECK-SAME: (%[[X:[^:]*]]: memref<?xf32, strided<[?], offset: ?>>, %[[Y:[^:]*]]: memref<?xf32, strided<[?], offset: ?>>, %[[OFFS:[^:]*]]: tensor<64xi32>, %[[MASK:[^:]*]]: tensor<64xi1>, %[[OTHER:[^:]*]]: tensor<64xf32>)
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[X]]
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [%{{.*}}], strides: [1]
// CHECK: %[[V:.*]] = linalg.generic {{.*}} ins(%[[OFFS]], %[[MASK]], %[[OTHER]] : tensor<64xi32>, tensor<64xi1>, tensor<64xf32>)
// CHECK-NEXT: ^bb0(%[[O:.*]]: i32, %[[M:.*]]: i1, %[[D:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[SEL:.*]] = scf.if %[[M]] -> (f32) {
// CHECK-NEXT: %[[IDX:.*]] = arith.index_cast %[[O]] : i32 to index
// CHECK-NEXT: %[[LD:.*]] = memref.load %[[FLAT]][%[[IDX]]]
// CHECK-NEXT: scf.yield %[[LD]] : f32
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[D]] : f32
// CHECK: memref.extract_strided_metadata %[[Y]]
// CHECK: %[[M8:.*]] = arith.extui %[[MASK]] : tensor<64xi1> to tensor<64xi8>
// CHECK: scf.parallel (%[[IV:.*]]) =
// CHECK: %[[VAL:.*]] = tensor.extract %[[V]][%[[IV]]] : tensor<64xf32>
// CHECK: tensor.extract %[[M8]][%[[IV]]] : tensor<64xi8>
// CHECK: scf.if
// CHECK: memref.store %[[VAL]]
// CHECK-NOT: tile.
func.func @gather_scatter(%x: !buf, %y: !buf, %offs: tensor<64xi32>, %mask: tensor<64xi1>, %other: tensor<64xf32>) {
  %v = "tile.load"(%x, %offs, %mask, %other) : (!buf, tensor<64xi32>, tensor<64xi1>, tensor<64xf32>) -> tensor<64xf32>
  "tile.store"(%y, %offs, %v, %mask) : (!buf, tensor<64xi32>, tensor<64xf32>, tensor<64xi1>) -> ()
  return
}

// -----

// Block loads/stores, dot -> linalg.matmul; layout encodings are dropped and
// convert_layout disappears.

!a = memref<?x?xf16, strided<[?, ?], offset: ?>>
!c = memref<?x?xf32, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func.func @matmul
// CHECK-NOT: #tile.blocked
// CHECK: %[[ACC:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<64x64xf32>) -> tensor<64x64xf32>
// CHECK: %[[TA:.*]] = linalg.generic
// CHECK: memref.dim
// CHECK: arith.cmpi ult
// CHECK: memref.load
// CHECK: } -> tensor<64x32xf16>
// CHECK: %[[TB:.*]] = linalg.generic
// CHECK: } -> tensor<32x64xf16>
// CHECK-NEXT: %[[D:.*]] = linalg.matmul ins(%[[TA]], %[[TB]] : tensor<64x32xf16>, tensor<32x64xf16>) outs(%[[ACC]] : tensor<64x64xf32>) -> tensor<64x64xf32>
// CHECK: scf.parallel
// CHECK: tensor.extract %[[D]]
// CHECK: memref.store
// CHECK-NOT: tile.
// CHECK-NOT: #tile.blocked
// CHECK: return
func.func @matmul(%a: !a, %b: !a, %c: !c, %i: i32, %j: i32) {
  %zero = arith.constant 0.0 : f32
  %acc = "tile.splat"(%zero) : (f32) -> tensor<64x64xf32, #tile.blocked<[1, 4], [2, 16], [4, 1], [1, 0]>>
  %ta = "tile.load_tile"(%a, %i, %j) {padding = 0.0 : f16} : (!a, i32, i32) -> tensor<64x32xf16>
  %tb = "tile.load_tile"(%b, %j, %i) {padding = 0.0 : f16} : (!a, i32, i32) -> tensor<32x64xf16>
  %acc2 = "tile.convert_layout"(%acc) : (tensor<64x64xf32, #tile.blocked<[1, 4], [2, 16], [4, 1], [1, 0]>>) -> tensor<64x64xf32>
  %d = "tile.dot"(%ta, %tb, %acc2) : (tensor<64x32xf16>, tensor<32x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
  "tile.store_tile"(%c, %d, %i, %j) : (!c, tensor<64x64xf32>, i32, i32) -> ()
  return
}

// -----

// A tf32 dot rounds both operands (to nearest, ties away: + 0x1000, clear the
// low 13 bits; NaNs kept) before the matmul; the accumulator is not rounded.

// CHECK-LABEL: func.func @dot_tf32
// CHECK-SAME: %[[A:[^:]*]]: tensor<16x8xf32>, %[[B:[^:]*]]: tensor<8x16xf32>, %[[ACC:[^:]*]]: tensor<16x16xf32>
// CHECK: %[[AI:.*]] = arith.bitcast %[[A]] : tensor<16x8xf32> to tensor<16x8xi32>
// CHECK: %[[HALF:.*]] = arith.constant dense<4096> : tensor<16x8xi32>
// CHECK: %[[AS:.*]] = arith.addi %[[AI]], %[[HALF]]
// CHECK: %[[KEEP:.*]] = arith.constant dense<-8192> : tensor<16x8xi32>
// CHECK: %[[AR:.*]] = arith.andi %[[AS]], %[[KEEP]]
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[A]], %[[A]]
// CHECK: %[[AF:.*]] = arith.bitcast %[[AR]] : tensor<16x8xi32> to tensor<16x8xf32>
// CHECK: %[[A32:.*]] = arith.select %[[NAN]], %[[A]], %[[AF]]
// CHECK: %[[B32:.*]] = arith.select
// CHECK: linalg.matmul ins(%[[A32]], %[[B32]] : tensor<16x8xf32>, tensor<8x16xf32>) outs(%[[ACC]] : tensor<16x16xf32>)
func.func @dot_tf32(%a: tensor<16x8xf32>, %b: tensor<8x16xf32>, %acc: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %d = "tile.dot"(%a, %b, %acc) {input_precision = "tf32"} : (tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  return %d : tensor<16x16xf32>
}

// -----

// gather -> a linalg.generic over the index tile that extracts from the source,
// at the index (modulo the source's extent, 8) along the axis and at the loop's
// own position along the others.

// CHECK-LABEL: func.func @gather(
// CHECK-SAME: %[[SRC:[^:]*]]: tensor<4x8xf32>, %[[IDX:[^:]*]]: tensor<4x8xi32>
// CHECK: linalg.generic {{.*}} ins(%[[IDX]] : tensor<4x8xi32>)
// CHECK-NEXT: ^bb0(%[[I:.*]]: i32, %{{.*}}: f32):
// CHECK-NEXT: %[[EIGHT:.*]] = arith.constant 8 : i32
// CHECK-NEXT: %[[IN:.*]] = arith.remui %[[I]], %[[EIGHT]] : i32
// CHECK-NEXT: %[[R:.*]] = linalg.index 0 : index
// CHECK-NEXT: %[[J:.*]] = arith.index_cast %[[IN]] : i32 to index
// CHECK-NEXT: %[[V:.*]] = tensor.extract %[[SRC]][%[[R]], %[[J]]] : tensor<4x8xf32>
// CHECK-NEXT: linalg.yield %[[V]] : f32
func.func @gather(%src: tensor<4x8xf32>, %idx: tensor<4x8xi32>) -> tensor<4x8xf32> {
  %g = "tile.gather"(%src, %idx) {axis = 1 : i32} : (tensor<4x8xf32>, tensor<4x8xi32>) -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

// -----

// atomic_rmw: an scf.parallel like a store's, one memref.atomic_rmw per element under its
// mask; the old values, read here, through a buffer of their own.

!buf = memref<?xf32, strided<[?], offset: ?>>

// CHECK-LABEL: func.func @atomic_add
// CHECK-SAME: (%[[Y:[^:]*]]: memref<?xf32, strided<[?], offset: ?>>, %[[OFFS:[^:]*]]: tensor<64xi32>, %[[V:[^:]*]]: tensor<64xf32>, %[[MASK:[^:]*]]: tensor<64xi1>)
// CHECK: %[[OLD:.*]] = memref.alloc() : memref<64xf32>
// CHECK: scf.parallel (%[[IV:.*]]) =
// CHECK: %[[X:.*]] = tensor.extract %[[V]][%[[IV]]] : tensor<64xf32>
// CHECK: %[[GOT:.*]] = scf.if %{{.*}} -> (f32) {
// CHECK: %[[R:.*]] = memref.atomic_rmw addf %[[X]], %{{.*}}[%{{.*}}]
// CHECK-NEXT: scf.yield %[[R]] : f32
// CHECK: memref.store %[[GOT]], %[[OLD]][%[[IV]]]
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[OLD]] restrict
// CHECK: return %[[T]]
// CHECK-NOT: tile.
func.func @atomic_add(%y: !buf, %offs: tensor<64xi32>, %v: tensor<64xf32>, %mask: tensor<64xi1>) -> tensor<64xf32> {
  %old = "tile.atomic_rmw"(%y, %offs, %v, %mask) {kind = "add", sem = "acq_rel", scope = "gpu"} : (!buf, tensor<64xi32>, tensor<64xf32>, tensor<64xi1>) -> tensor<64xf32>
  return %old : tensor<64xf32>
}

// -----

// An atomic whose old values nothing reads keeps its updates, and needs no buffer.

!ibuf = memref<?xi32, strided<[?], offset: ?>>

// CHECK-LABEL: func.func @atomic_max_unread
// CHECK-NOT: memref.alloc
// CHECK: scf.parallel
// CHECK: memref.atomic_rmw maxs
// CHECK-NOT: tile.
func.func @atomic_max_unread(%y: !ibuf, %offs: tensor<64xi32>, %v: tensor<64xi32>, %mask: tensor<64xi1>) {
  %old = "tile.atomic_rmw"(%y, %offs, %v, %mask) {kind = "max", sem = "relaxed", scope = "cta"} : (!ibuf, tensor<64xi32>, tensor<64xi32>, tensor<64xi1>) -> tensor<64xi32>
  return
}

// -----

// trans -> a linalg.generic whose input map permutes the dims (result dim k reads operand
// dim permutation[k]), fusable with its elementwise neighbours.

// CHECK-DAG: #[[PERM:.*]] = affine_map<(d0, d1, d2) -> (d1, d2, d0)>
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @trans
// CHECK-SAME: (%[[X:.*]]: tensor<2x32x64xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<64x2x32xf32>
// CHECK: %[[T:.*]] = linalg.generic {indexing_maps = [#[[PERM]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[X]] : tensor<2x32x64xf32>) outs(%[[E]] : tensor<64x2x32xf32>)
// CHECK: return %[[T]]
func.func @trans(%x: tensor<2x32x64xf32>) -> tensor<64x2x32xf32> {
  %t = "tile.trans"(%x) {permutation = array<i32: 2, 0, 1>} : (tensor<2x32x64xf32>) -> tensor<64x2x32xf32>
  return %t : tensor<64x2x32xf32>
}

// -----

// print -> a loop nest over the tile in index order, a printf call per element (its
// format a global string), then fflush(NULL).

// CHECK-DAG: llvm.mlir.global internal constant @tile_print_0("pid (%d, %d, %d) idx (%d) x: %f\0A\00")
// CHECK-DAG: llvm.func @fflush(!llvm.ptr) -> i32
// CHECK-DAG: llvm.func @printf(!llvm.ptr, ...) -> i32
// CHECK-LABEL: func.func @print
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>)
// CHECK: %[[PID:.*]] = "tile.program_id"() {axis = 0 : i32}
// CHECK: scf.for %[[I:.*]] =
// CHECK: %[[V:.*]] = tensor.extract %[[X]][%[[I]]] : tensor<8xf32>
// CHECK: %[[W:.*]] = arith.extf %[[V]] : f32 to f64
// CHECK: %[[FMT:.*]] = llvm.mlir.addressof @tile_print_0 : !llvm.ptr
// CHECK: llvm.call @printf(%[[FMT]], %[[PID]], {{.*}}, %[[W]]) vararg(!llvm.func<i32 (ptr, ...)>)
// CHECK: llvm.call @fflush
func.func @print(%x: tensor<8xf32>) {
  "tile.print"(%x) {prefix = "x: "} : (tensor<8xf32>) -> ()
  return
}

// -----

// atomic_cas: a call that stands for an llvm.cmpxchg at the element's address (made inline
// by tile-inline-cas, after buffer deallocation, which rejects an llvm.cmpxchg); floats
// compare bit for bit. A barrier is nothing on the CPU.

!fbuf = memref<?xf32, strided<[?], offset: ?>>

// CHECK: func.func private @__tile_cas_i32(i64, i32, i32) -> i32
// CHECK-LABEL: func.func @atomic_cas
// CHECK: %[[GOT:.*]] = scf.if %{{.*}} -> (f32) {
// CHECK: %[[C:[0-9]+]] = arith.bitcast %{{.*}} : f32 to i32
// CHECK: %[[V:[0-9]+]] = arith.bitcast %{{.*}} : f32 to i32
// CHECK: %[[OLD:[0-9]+]] = func.call @__tile_cas_i32(%{{.*}}, %[[C]], %[[V]]) : (i64, i32, i32) -> i32
// CHECK: %[[F:[0-9]+]] = arith.bitcast %[[OLD]] : i32 to f32
// CHECK-NEXT: scf.yield %[[F]] : f32
// CHECK-NOT: tile.
func.func @atomic_cas(%y: !fbuf, %off: i32, %c: f32, %v: f32, %m: i1) -> f32 {
  %old = "tile.atomic_cas"(%y, %off, %c, %v, %m) {sem = "acq_rel", scope = "gpu"} : (!fbuf, i32, f32, f32, i1) -> f32
  "tile.barrier"() : () -> ()
  return %old : f32
}
