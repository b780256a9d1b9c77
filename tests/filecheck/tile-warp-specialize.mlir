// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-verify, tile-warp-specialize{num-warps=4}, tile-verify)' | FileCheck %s
// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-warp-specialize{num-warps=8 all-loops=1}, tile-verify)' | FileCheck %s --check-prefix=ALL
// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-warp-specialize{num-warps=2})' | FileCheck %s --check-prefix=HALF

!ra = memref<3x128x64xbf16, #gpu.address_space<workgroup>>
!rb = memref<3x64x128xbf16, #gpu.address_space<workgroup>>
!bars = memref<3xi64, #gpu.address_space<workgroup>>
!ta = tensor<128x64xbf16, #tile.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>
!tb = tensor<64x128xbf16, #tile.blocked<[1, 8], [2, 16], [4, 1], [1, 0]>>
!acc = tensor<128x128xf32, #tile.wgmma<[1, 1]>>

// A matmul's K loop as tile-pipeline leaves it with TMA (3 stages, the dot in flight): the
// copies of iteration 0 before the loop, each iteration waiting for its slot's mbarrier, then
// a block barrier, the dot, the copies of iteration i + 1 into slot (i + 1) % 3 and the dot
// wait. The loop asks for warp specialization.
//
// The rings and both barrier groups (full: 2 arrivals, a copy each; empty: one arrival per
// consumer warp) come first; then the producer warpgroup (warps 4..7 of 8) gives registers
// back and its first warp runs the loop's bounds, waiting on empty[s] with the parity
// ((i / 3) & 1) ^ 1 and issuing both copies at (row, k) and (k, 0) into slot s, all live,
// from warp 4; the consumers take registers and run the loop without copies or its
// barrier, releasing slot (i + 2) % 3 (iteration i - 1's) once i >= 1 after the dot wait.
// The empty barriers are invalidated beside the full ones.

// CHECK-LABEL: func.func @kloop
// CHECK-SAME: (%{{[^:]*}}: i32, %[[K:[^:]*]]: i32, %[[DA:[^:]*]]: !llvm.ptr, %[[DB:[^:]*]]: !llvm.ptr)
// CHECK-SAME: tile.producer_warps = 4 : i32
// CHECK-NEXT: %[[RA:.*]] = "tile.local_alloc"() : () -> memref<3x128x64xbf16
// CHECK-NEXT: %[[RB:.*]] = "tile.local_alloc"() : () -> memref<3x64x128xbf16
// CHECK-NEXT: %[[FULL:.*]] = "tile.mbarrier_alloc"() {arrivals = 2 : i32}
// CHECK-NEXT: %[[EMPTY:.*]] = "tile.mbarrier_alloc"() {arrivals = 4 : i32}
// CHECK-NEXT: %[[P:.*]] = "tile.warp_role"() {count = 4 : i32, first = 4 : i32, maxnreg = 128 : i32, total = 8 : i32}
// CHECK-NEXT: scf.if %[[P]] {
// CHECK-NEXT: "tile.set_max_registers"() {count = 40 : i32, increase = 0 : i32}
// CHECK-NEXT: %[[W:.*]] = "tile.warp_role"() {count = 1 : i32, first = 4 : i32, maxnreg = 128 : i32, total = 8 : i32}
// CHECK: %[[PID:.*]] = "tile.program_id"() {axis = 0 : i32}
// CHECK: %[[ROW:.*]] = arith.muli %[[PID]], %{{.*}} : i32
// CHECK-NEXT: scf.if %[[W]] {
// CHECK-NEXT: scf.for %[[J:.*]] = %[[LB:[^ ]*]] to %[[K]] step %[[ST:[^ ]*]]  : i32 {
// CHECK: %[[D:.*]] = arith.subi %[[J]], %[[LB]]
// CHECK: %[[I:.*]] = arith.divsi %[[D]], %[[ST]]
// CHECK: %[[S:.*]] = arith.remsi %[[I]], %[[C3:[^ ]*]]
// CHECK: %[[Q:.*]] = arith.divsi %[[I]], %[[C3]]
// CHECK: %[[B:.*]] = arith.andi %[[Q]], %[[C1:[^ ]*]]
// CHECK: %[[PAR:.*]] = arith.xori %[[B]], %[[C1]]
// CHECK: "tile.mbarrier_wait"(%[[EMPTY]], %[[S]], %[[PAR]])
// CHECK: %[[BACK:.*]] = arith.subi %[[J]], %{{.*}} : i32
// CHECK: %[[KJ:.*]] = arith.addi %[[BACK]], %{{.*}} : i32
// CHECK: "tile.tma_load"(%[[RA]], %[[S]], %[[FULL]], %[[DA]], %[[ROW]], %[[KJ]], %[[TRUE:[^)]*]]) {box = [128 : i32, 64 : i32], swizzle = 128 : i32, warp = 4 : i32}
// CHECK: "tile.tma_load"(%[[RB]], %[[S]], %[[FULL]], %[[DB]], %{{.*}}, %{{.*}}, %[[TRUE]]) {box = [64 : i32, 64 : i32], swizzle = 128 : i32, warp = 4 : i32}
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: } else {
// CHECK-NEXT: "tile.set_max_registers"() {count = 216 : i32, increase = 1 : i32}
// CHECK-NOT: tile.tma_load
// CHECK: scf.for %[[IV:.*]] = %{{.*}} to %[[K]]
// CHECK: "tile.mbarrier_wait"(%[[FULL]],
// CHECK-NOT: gpu.barrier
// CHECK-NOT: tile.tma_load
// CHECK: "tile.dot"
// CHECK: "tile.dot_wait"(%{{.*}}) {pending = 1 : i32}
// CHECK-NEXT: %[[D2:.*]] = arith.subi %[[IV]],
// CHECK-NEXT: %[[I2:.*]] = arith.divsi %[[D2]],
// CHECK: %[[N2:.*]] = arith.addi %[[I2]], %{{c2_i32[_0-9]*}}
// CHECK: %[[S2:.*]] = arith.remsi %[[N2]], %{{c3_i32[_0-9]*}}
// CHECK: %[[L2:.*]] = arith.cmpi sge, %[[I2]], %{{c1_i32[_0-9]*}}
// CHECK-NEXT: "tile.mbarrier_arrive"(%[[EMPTY]], %[[S2]], %[[L2]])
// CHECK-NEXT: scf.yield
// CHECK: "tile.mbarrier_dealloc"(%[[FULL]])
// CHECK-NEXT: "tile.mbarrier_dealloc"(%[[EMPTY]])
// CHECK: }
// CHECK-NEXT: return

// With 8 consumer warps (two warpgroups): 12 warps in all, 168 registers a thread at
// launch, 232 for the consumers (CUTLASS's split), 8 arrivals on each empty barrier.
// ALL-LABEL: func.func @kloop
// ALL: "tile.mbarrier_alloc"() {arrivals = 8 : i32}
// ALL-NEXT: "tile.warp_role"() {count = 4 : i32, first = 8 : i32, maxnreg = 168 : i32, total = 12 : i32}
// ALL: "tile.set_max_registers"() {count = 40 : i32, increase = 0 : i32}
// ALL: "tile.set_max_registers"() {count = 232 : i32, increase = 1 : i32}

// Two consumer warps are no warpgroup: the loop keeps its copies, and says why.
// HALF-LABEL: func.func @kloop
// HALF-NOT: tile.warp_role
// HALF: "tile.tma_load"
// HALF: tile.warp_specialize_skipped = "{{.*}}num_warps=2: the consumers must be whole warpgroups

func.func @kloop(%M: i32, %K: i32, %da: !llvm.ptr, %db: !llvm.ptr) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c3 = arith.constant 3 : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %cst = arith.constant 0.000000e+00 : f32
  %pid = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %row = arith.muli %pid, %c128 : i32
  %zero = "tile.splat"(%cst) : (f32) -> !acc
  %ra = "tile.local_alloc"() : () -> !ra
  %rb = "tile.local_alloc"() : () -> !rb
  %bars = "tile.mbarrier_alloc"() {arrivals = 2 : i32} : () -> !bars
  %live0 = arith.cmpi slt, %c0, %K : i32
  "tile.tma_load"(%ra, %c0, %bars, %da, %row, %c0, %live0) {box = [128 : i32, 64 : i32], swizzle = 128 : i32} : (!ra, i32, !bars, !llvm.ptr, i32, i32, i1) -> ()
  "tile.tma_load"(%rb, %c0, %bars, %db, %c0, %c0, %live0) {box = [64 : i32, 64 : i32], swizzle = 128 : i32} : (!rb, i32, !bars, !llvm.ptr, i32, i32, i1) -> ()
  %r = scf.for %k = %c0 to %K step %c64 iter_args(%acc = %zero) -> (!acc) : i32 {
    %d = arith.subi %k, %c0 : i32
    %i = arith.divsi %d, %c64 : i32
    %s = arith.remsi %i, %c3 : i32
    %q = arith.divsi %i, %c3 : i32
    %ph = arith.andi %q, %c1 : i32
    "tile.mbarrier_wait"(%bars, %s, %ph) : (!bars, i32, i32) -> ()
    gpu.barrier
    %n = arith.addi %i, %c1 : i32
    %w = arith.remsi %n, %c3 : i32
    %a = "tile.local_load"(%ra, %s) : (!ra, i32) -> !ta
    %b = "tile.local_load"(%rb, %s) : (!rb, i32) -> !tb
    %nk = arith.addi %k, %c64 : i32
    %acc2 = "tile.dot"(%a, %b, %acc) {in_flight = 1 : i32} : (!ta, !tb, !acc) -> !acc
    %live = arith.cmpi slt, %nk, %K : i32
    "tile.tma_load"(%ra, %w, %bars, %da, %row, %nk, %live) {box = [128 : i32, 64 : i32], swizzle = 128 : i32} : (!ra, i32, !bars, !llvm.ptr, i32, i32, i1) -> ()
    "tile.tma_load"(%rb, %w, %bars, %db, %nk, %c0, %live) {box = [64 : i32, 64 : i32], swizzle = 128 : i32} : (!rb, i32, !bars, !llvm.ptr, i32, i32, i1) -> ()
    %acc3 = "tile.dot_wait"(%acc2) {pending = 1 : i32} : (!acc) -> !acc
    scf.yield %acc3 : !acc
  } {tile.warp_specialize}
  %res = "tile.dot_wait"(%r) {pending = 0 : i32} : (!acc) -> !acc
  "tile.local_dealloc"(%rb) : (!rb) -> ()
  "tile.local_dealloc"(%ra) : (!ra) -> ()
  "tile.mbarrier_dealloc"(%bars) : (!bars) -> ()
  return
}

// -----

// Copies whose column is carried by the loop (not its induction variable): the producer
// cannot recompute it, so the loop keeps its copies, its barrier and its form, and says why;
// the kernel is left as it was.

// CHECK-LABEL: func.func @carried
// CHECK-NOT: tile.warp_role
// CHECK: scf.for
// CHECK: "tile.mbarrier_wait"
// CHECK-NEXT: gpu.barrier
// CHECK: "tile.tma_load"
// CHECK: tile.warp_specialize_skipped = "{{.*}}the copies' coordinates depend on a loop or a branch the producer cannot follow"

!r = memref<2x64x64xbf16, #gpu.address_space<workgroup>>
!bars = memref<2xi64, #gpu.address_space<workgroup>>
!t = tensor<64x64xbf16, #tile.blocked<[1, 8], [8, 4], [4, 1], [1, 0]>>

func.func @carried(%K: i32, %d: !llvm.ptr) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c64 = arith.constant 64 : i32
  %ring = "tile.local_alloc"() : () -> !r
  %bars = "tile.mbarrier_alloc"() {arrivals = 1 : i32} : () -> !bars
  %live0 = arith.cmpi slt, %c0, %K : i32
  "tile.tma_load"(%ring, %c0, %bars, %d, %c0, %c0, %live0) {box = [64 : i32, 64 : i32], swizzle = 128 : i32} : (!r, i32, !bars, !llvm.ptr, i32, i32, i1) -> ()
  %r = scf.for %k = %c0 to %K step %c64 iter_args(%col = %c0) -> (i32) : i32 {
    %i = arith.divsi %k, %c64 : i32
    %s = arith.remsi %i, %c2 : i32
    %q = arith.divsi %i, %c2 : i32
    %ph = arith.andi %q, %c1 : i32
    "tile.mbarrier_wait"(%bars, %s, %ph) : (!bars, i32, i32) -> ()
    gpu.barrier
    %n = arith.addi %i, %c1 : i32
    %w = arith.remsi %n, %c2 : i32
    %a = "tile.local_load"(%ring, %s) : (!r, i32) -> !t
    %nk = arith.addi %k, %c64 : i32
    %live = arith.cmpi slt, %nk, %K : i32
    %next = arith.addi %col, %c64 : i32
    "tile.tma_load"(%ring, %w, %bars, %d, %c0, %next, %live) {box = [64 : i32, 64 : i32], swizzle = 128 : i32} : (!r, i32, !bars, !llvm.ptr, i32, i32, i1) -> ()
    scf.yield %next : i32
  } {tile.warp_specialize}
  "tile.local_dealloc"(%ring) : (!r) -> ()
  "tile.mbarrier_dealloc"(%bars) : (!bars) -> ()
  return
}
