// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-verify, tile-tma-stores{divisible-args=0,1,4}, tile-verify)' | FileCheck %s
// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-tma-stores{divisible-args=0,1})' | FileCheck %s --check-prefix=UNALIGNED

!m = memref<?x?xbf16, strided<[?, ?], offset: ?>>
!w = tensor<128x128xbf16, #tile.wgmma<[2, 1]>>
!b = tensor<128x128xbf16, #tile.blocked<[1, 8], [1, 32], [8, 1], [1, 0]>>
!bi = tensor<128x128xi32, #tile.blocked<[1, 8], [1, 32], [8, 1], [1, 0]>>
!bm = tensor<128x128xi1, #tile.blocked<[1, 8], [1, 32], [8, 1], [1, 0]>>

// A persistent matmul's epilogue, in its loop over output tiles: the accumulator (already
// bf16), converted to a blocked layout, stored to the block at (r0, c0) of out, masked at its
// bounds M x N: out + rm[:, None] * s + rn[None, :].
// It becomes one tile.tma_store of the accumulator as it is, at (r0, c0), through a new
// tensor-map argument that `tile.tma` describes (out is argument 0, rows M = argument 2, cols
// N = 3, row stride 4; a box of all 128 rows by one 128-byte panel, 128-byte swizzle); the
// store and the three conversions are gone. No TMA ring precedes it here: it goes through
// scratch memory (its free slot operand a constant 0, unused).

// CHECK-LABEL: func.func @epilogue
// CHECK-SAME: (%[[OUT:[^:]*]]: memref{{.*}}, %[[ACC:[^:]*]]: tensor<128x128xbf16, #tile.wgmma<[2, 1]>>, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %[[R0:[^:]*]]: i32, %[[C0:[^:]*]]: i32, %{{.*}}: i32, %[[D:[^:]*]]: !llvm.ptr)
// CHECK-SAME: tile.tma = [{box = [128, 64], cols = "arg:3", rows = "arg:2", stride = "arg:4", swizzle = 128 : i64, tensor = 0 : i64}]
// CHECK-NOT: tile.convert_layout
// CHECK: "tile.tma_store"(%[[D]], %[[R0]], %[[C0]], %[[ACC]], %{{c0_i32[_0-9]*}}) {box = [128 : i32, 64 : i32], swizzle = 128 : i32}
// CHECK-NOT: "tile.store"
// CHECK: return

// Without the row stride (argument 4) known to be a multiple of 16 elements, no tensor map
// can describe out: the store stays.
// UNALIGNED-LABEL: func.func @epilogue
// UNALIGNED-NOT: tile.tma_store
// UNALIGNED: "tile.store"

func.func @epilogue(%out: !m, %acc: !w, %M: i32, %N: i32, %s: i32, %r0: i32, %c0: i32, %T: i32) {
  %z = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  scf.for %t = %z to %T step %one : i32 {
  %ar = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %r0s = "tile.splat"(%r0) : (i32) -> tensor<128xi32>
  %c0s = "tile.splat"(%c0) : (i32) -> tensor<128xi32>
  %rm = arith.addi %r0s, %ar : tensor<128xi32>
  %rn = arith.addi %c0s, %ar : tensor<128xi32>
  %rm2 = "tile.reshape"(%rm) : (tensor<128xi32>) -> tensor<128x1xi32>
  %rn2 = "tile.reshape"(%rn) : (tensor<128xi32>) -> tensor<1x128xi32>
  %ss = "tile.splat"(%s) : (i32) -> tensor<128x1xi32>
  %rows = arith.muli %rm2, %ss : tensor<128x1xi32>
  %rb = "tile.broadcast"(%rows) : (tensor<128x1xi32>) -> tensor<128x128xi32>
  %cb = "tile.broadcast"(%rn2) : (tensor<1x128xi32>) -> tensor<128x128xi32>
  %offs = arith.addi %rb, %cb : tensor<128x128xi32>
  %Ms = "tile.splat"(%M) : (i32) -> tensor<128x1xi32>
  %Ns = "tile.splat"(%N) : (i32) -> tensor<1x128xi32>
  %mr = arith.cmpi slt, %rm2, %Ms : tensor<128x1xi32>
  %mc = arith.cmpi slt, %rn2, %Ns : tensor<1x128xi32>
  %mrb = "tile.broadcast"(%mr) : (tensor<128x1xi1>) -> tensor<128x128xi1>
  %mcb = "tile.broadcast"(%mc) : (tensor<1x128xi1>) -> tensor<128x128xi1>
  %mask = arith.andi %mrb, %mcb : tensor<128x128xi1>
  %v = "tile.convert_layout"(%acc) : (!w) -> !b
  %o = "tile.convert_layout"(%offs) : (tensor<128x128xi32>) -> !bi
  %k = "tile.convert_layout"(%mask) : (tensor<128x128xi1>) -> !bm
  "tile.store"(%out, %o, %v, %k) : (!m, !bi, !b, !bm) -> ()
  }
  return
}

// -----

!m = memref<?x?xbf16, strided<[?, ?], offset: ?>>
!w = tensor<128x128xbf16, #tile.wgmma<[2, 1]>>

// The same store in a loop, but the kernel also reads out: TMA writes are not ordered with
// the program's own accesses, so the store stays.

// CHECK-LABEL: func.func @read_back
// CHECK-NOT: tile.tma_store
// CHECK: "tile.store"

func.func @read_back(%out: !m, %acc: !w, %M: i32, %N: i32, %s: i32, %r0: i32, %c0: i32, %T: i32) {
  %z0 = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  scf.for %t = %z0 to %T step %one : i32 {
  %ar = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %r0s = "tile.splat"(%r0) : (i32) -> tensor<128xi32>
  %c0s = "tile.splat"(%c0) : (i32) -> tensor<128xi32>
  %rm = arith.addi %r0s, %ar : tensor<128xi32>
  %rn = arith.addi %c0s, %ar : tensor<128xi32>
  %rm2 = "tile.reshape"(%rm) : (tensor<128xi32>) -> tensor<128x1xi32>
  %rn2 = "tile.reshape"(%rn) : (tensor<128xi32>) -> tensor<1x128xi32>
  %ss = "tile.splat"(%s) : (i32) -> tensor<128x1xi32>
  %rows = arith.muli %rm2, %ss : tensor<128x1xi32>
  %rb = "tile.broadcast"(%rows) : (tensor<128x1xi32>) -> tensor<128x128xi32>
  %cb = "tile.broadcast"(%rn2) : (tensor<1x128xi32>) -> tensor<128x128xi32>
  %offs = arith.addi %rb, %cb : tensor<128x128xi32>
  %Ms = "tile.splat"(%M) : (i32) -> tensor<128x1xi32>
  %Ns = "tile.splat"(%N) : (i32) -> tensor<1x128xi32>
  %mr = arith.cmpi slt, %rm2, %Ms : tensor<128x1xi32>
  %mc = arith.cmpi slt, %rn2, %Ns : tensor<1x128xi32>
  %mrb = "tile.broadcast"(%mr) : (tensor<128x1xi1>) -> tensor<128x128xi1>
  %mcb = "tile.broadcast"(%mc) : (tensor<1x128xi1>) -> tensor<128x128xi1>
  %mask = arith.andi %mrb, %mcb : tensor<128x128xi1>
  %zb = arith.constant 0.0 : bf16
  %z = "tile.splat"(%zb) : (bf16) -> !w
  %old = "tile.load"(%out, %offs, %mask, %z) : (!m, tensor<128x128xi32>, tensor<128x128xi1>, !w) -> !w
  %v = "tile.convert_layout"(%acc) : (!w) -> tensor<128x128xbf16>
  "tile.store"(%out, %offs, %v, %mask) : (!m, tensor<128x128xi32>, tensor<128x128xbf16>, tensor<128x128xi1>) -> ()
  }
  return
}

// -----

!m = memref<?x?xbf16, strided<[?, ?], offset: ?>>
!w = tensor<128x128xbf16, #tile.wgmma<[2, 1]>>

// The same store at the end of a program (one program per output tile), in no loop: the
// TMA unit's writes would overlap nothing, and the store stays.

// CHECK-LABEL: func.func @last
// CHECK-NOT: tile.tma_store
// CHECK: "tile.store"

func.func @last(%out: !m, %acc: !w, %M: i32, %N: i32, %s: i32, %r0: i32, %c0: i32) {
  %ar = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %r0s = "tile.splat"(%r0) : (i32) -> tensor<128xi32>
  %c0s = "tile.splat"(%c0) : (i32) -> tensor<128xi32>
  %rm = arith.addi %r0s, %ar : tensor<128xi32>
  %rn = arith.addi %c0s, %ar : tensor<128xi32>
  %rm2 = "tile.reshape"(%rm) : (tensor<128xi32>) -> tensor<128x1xi32>
  %rn2 = "tile.reshape"(%rn) : (tensor<128xi32>) -> tensor<1x128xi32>
  %ss = "tile.splat"(%s) : (i32) -> tensor<128x1xi32>
  %rows = arith.muli %rm2, %ss : tensor<128x1xi32>
  %rb = "tile.broadcast"(%rows) : (tensor<128x1xi32>) -> tensor<128x128xi32>
  %cb = "tile.broadcast"(%rn2) : (tensor<1x128xi32>) -> tensor<128x128xi32>
  %offs = arith.addi %rb, %cb : tensor<128x128xi32>
  %Ms = "tile.splat"(%M) : (i32) -> tensor<128x1xi32>
  %Ns = "tile.splat"(%N) : (i32) -> tensor<1x128xi32>
  %mr = arith.cmpi slt, %rm2, %Ms : tensor<128x1xi32>
  %mc = arith.cmpi slt, %rn2, %Ns : tensor<1x128xi32>
  %mrb = "tile.broadcast"(%mr) : (tensor<128x1xi1>) -> tensor<128x128xi1>
  %mcb = "tile.broadcast"(%mc) : (tensor<1x128xi1>) -> tensor<128x128xi1>
  %mask = arith.andi %mrb, %mcb : tensor<128x128xi1>
  %v = "tile.convert_layout"(%acc) : (!w) -> tensor<128x128xbf16>
  "tile.store"(%out, %offs, %v, %mask) : (!m, tensor<128x128xi32>, tensor<128x128xbf16>, tensor<128x128xi1>) -> ()
  return
}

// -----

!m = memref<?x?xbf16, strided<[?, ?], offset: ?>>
!w = tensor<128x128xbf16, #tile.wgmma<[2, 1]>>
!r = memref<4x64x128xbf16, #gpu.address_space<workgroup>>

// A persistent kernel's store after its K loop and the next tile's first copies into a
// 4-stage ring that stays live (two copies: slots s0 and s0 + 1): the other two slots,
// 16 KB each, hold the 32 KB tile, 64 columns a slot, so the store names the ring and its
// first free slot, (s0 + 2) mod 4. Copies before the K loop (its prologue) would not count.

// CHECK-LABEL: func.func @staged
// CHECK-SAME: (%[[OUT:[^:]*]]: memref{{.*}}, %[[ACC:[^:]*]]: tensor<128x128xbf16, #tile.wgmma<[2, 1]>>,
// CHECK: %[[RING:.*]] = "tile.local_alloc"()
// CHECK: scf.for
// CHECK: %[[S0:.*]] = arith.remui
// CHECK: "tile.tma_load"(%[[RING]], %[[S0]]
// CHECK: "tile.tma_load"(%[[RING]]
// CHECK: %[[C2:.*]] = arith.constant 2 : i32
// CHECK: %[[AT:.*]] = arith.addi %[[S0]], %[[C2]] : i32
// CHECK: %[[C4:.*]] = arith.constant 4 : i32
// CHECK: %[[FREE:.*]] = arith.remui %[[AT]], %[[C4]] : i32
// CHECK: "tile.tma_store"(%{{.*}}, %{{.*}}, %{{.*}}, %[[ACC]], %[[FREE]], %[[RING]])

func.func @staged(%out: !m, %acc: !w, %M: i32, %N: i32, %s: i32, %r0: i32, %c0: i32, %T: i32, %desc: !llvm.ptr, %live: i1) {
  %z = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %four = arith.constant 4 : i32
  %ring = "tile.local_alloc"() : () -> !r
  %bars = "tile.mbarrier_alloc"() {arrivals = 1 : i32} : () -> memref<4xi64, #gpu.address_space<workgroup>>
  scf.for %t = %z to %T step %one : i32 {
  scf.for %k = %z to %T step %one : i32 {
  }
  %s0 = arith.remui %t, %four : i32
  "tile.tma_load"(%ring, %s0, %bars, %desc, %t, %t, %live) {box = [64 : i32, 64 : i32], swizzle = 128 : i32} : (!r, i32, memref<4xi64, #gpu.address_space<workgroup>>, !llvm.ptr, i32, i32, i1) -> ()
  %t1 = arith.addi %t, %one : i32
  %s1 = arith.remui %t1, %four : i32
  "tile.tma_load"(%ring, %s1, %bars, %desc, %t, %t, %live) {box = [64 : i32, 64 : i32], swizzle = 128 : i32} : (!r, i32, memref<4xi64, #gpu.address_space<workgroup>>, !llvm.ptr, i32, i32, i1) -> ()
  %ar = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %r0s = "tile.splat"(%r0) : (i32) -> tensor<128xi32>
  %c0s = "tile.splat"(%c0) : (i32) -> tensor<128xi32>
  %rm = arith.addi %r0s, %ar : tensor<128xi32>
  %rn = arith.addi %c0s, %ar : tensor<128xi32>
  %rm2 = "tile.reshape"(%rm) : (tensor<128xi32>) -> tensor<128x1xi32>
  %rn2 = "tile.reshape"(%rn) : (tensor<128xi32>) -> tensor<1x128xi32>
  %ss = "tile.splat"(%s) : (i32) -> tensor<128x1xi32>
  %rows = arith.muli %rm2, %ss : tensor<128x1xi32>
  %rb = "tile.broadcast"(%rows) : (tensor<128x1xi32>) -> tensor<128x128xi32>
  %cb = "tile.broadcast"(%rn2) : (tensor<1x128xi32>) -> tensor<128x128xi32>
  %offs = arith.addi %rb, %cb : tensor<128x128xi32>
  %Ms = "tile.splat"(%M) : (i32) -> tensor<128x1xi32>
  %Ns = "tile.splat"(%N) : (i32) -> tensor<1x128xi32>
  %mr = arith.cmpi slt, %rm2, %Ms : tensor<128x1xi32>
  %mc = arith.cmpi slt, %rn2, %Ns : tensor<1x128xi32>
  %mrb = "tile.broadcast"(%mr) : (tensor<128x1xi1>) -> tensor<128x128xi1>
  %mcb = "tile.broadcast"(%mc) : (tensor<1x128xi1>) -> tensor<128x128xi1>
  %mask = arith.andi %mrb, %mcb : tensor<128x128xi1>
  %v = "tile.convert_layout"(%acc) : (!w) -> tensor<128x128xbf16>
  "tile.store"(%out, %offs, %v, %mask) : (!m, tensor<128x128xi32>, tensor<128x128xbf16>, tensor<128x128xi1>) -> ()
  }
  return
}

// -----

!m = memref<?x?xbf16, strided<[?, ?], offset: ?>>
!w = tensor<128x128xbf16, #tile.wgmma<[2, 1]>>
!r = memref<4x64x128xbf16, #gpu.address_space<workgroup>>

// The same store with the ring's copies before the K loop (its prologue, whose slots the
// loop refills): no slot is known free at the store, which goes through scratch memory.

// CHECK-LABEL: func.func @prologue_copies
// CHECK: "tile.tma_store"(%{{[^)]*}}, %{{c0_i32[_0-9]*}}) {box

func.func @prologue_copies(%out: !m, %acc: !w, %M: i32, %N: i32, %s: i32, %r0: i32, %c0: i32, %T: i32, %desc: !llvm.ptr, %live: i1) {
  %z = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %four = arith.constant 4 : i32
  %ring = "tile.local_alloc"() : () -> !r
  %bars = "tile.mbarrier_alloc"() {arrivals = 1 : i32} : () -> memref<4xi64, #gpu.address_space<workgroup>>
  scf.for %t = %z to %T step %one : i32 {
  %s0 = arith.remui %t, %four : i32
  "tile.tma_load"(%ring, %s0, %bars, %desc, %t, %t, %live) {box = [64 : i32, 64 : i32], swizzle = 128 : i32} : (!r, i32, memref<4xi64, #gpu.address_space<workgroup>>, !llvm.ptr, i32, i32, i1) -> ()
  %t1 = arith.addi %t, %one : i32
  %s1 = arith.remui %t1, %four : i32
  "tile.tma_load"(%ring, %s1, %bars, %desc, %t, %t, %live) {box = [64 : i32, 64 : i32], swizzle = 128 : i32} : (!r, i32, memref<4xi64, #gpu.address_space<workgroup>>, !llvm.ptr, i32, i32, i1) -> ()
  scf.for %k = %z to %T step %one : i32 {
  }
  %ar = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %r0s = "tile.splat"(%r0) : (i32) -> tensor<128xi32>
  %c0s = "tile.splat"(%c0) : (i32) -> tensor<128xi32>
  %rm = arith.addi %r0s, %ar : tensor<128xi32>
  %rn = arith.addi %c0s, %ar : tensor<128xi32>
  %rm2 = "tile.reshape"(%rm) : (tensor<128xi32>) -> tensor<128x1xi32>
  %rn2 = "tile.reshape"(%rn) : (tensor<128xi32>) -> tensor<1x128xi32>
  %ss = "tile.splat"(%s) : (i32) -> tensor<128x1xi32>
  %rows = arith.muli %rm2, %ss : tensor<128x1xi32>
  %rb = "tile.broadcast"(%rows) : (tensor<128x1xi32>) -> tensor<128x128xi32>
  %cb = "tile.broadcast"(%rn2) : (tensor<1x128xi32>) -> tensor<128x128xi32>
  %offs = arith.addi %rb, %cb : tensor<128x128xi32>
  %Ms = "tile.splat"(%M) : (i32) -> tensor<128x1xi32>
  %Ns = "tile.splat"(%N) : (i32) -> tensor<1x128xi32>
  %mr = arith.cmpi slt, %rm2, %Ms : tensor<128x1xi32>
  %mc = arith.cmpi slt, %rn2, %Ns : tensor<1x128xi32>
  %mrb = "tile.broadcast"(%mr) : (tensor<128x1xi1>) -> tensor<128x128xi1>
  %mcb = "tile.broadcast"(%mc) : (tensor<1x128xi1>) -> tensor<128x128xi1>
  %mask = arith.andi %mrb, %mcb : tensor<128x128xi1>
  %v = "tile.convert_layout"(%acc) : (!w) -> tensor<128x128xbf16>
  "tile.store"(%out, %offs, %v, %mask) : (!m, tensor<128x128xi32>, tensor<128x128xbf16>, tensor<128x128xi1>) -> ()
  }
  return
}
