// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-verify, tile-pipeline{num-stages=3}, tile-verify)' | FileCheck %s
// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-pipeline{num-stages=1})' | FileCheck %s --check-prefix=OFF
// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-pipeline{num-stages=3 wait-before-copies=0})' | FileCheck %s --check-prefix=LATE
// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-verify, tile-pipeline{num-stages=4 tma=1 divisible-args=0,1,5,6}, tile-verify)' | FileCheck %s --check-prefix=TMA
// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-pipeline{num-stages=4 tma=1 divisible-args=0,1,5})' | FileCheck %s --check-prefix=UNALIGNED

!a = memref<?x?xbf16, strided<[?, ?], offset: ?>>

// A K loop of a matmul: both dot operands are loaded in the body. With 3 stages,
// each becomes a ring of 3 shared tiles: the prologue starts iterations 0 and 1
// (one commit group each), the body waits for its own group (1 may stay in
// flight), reads its slot, starts iteration i + 2 into the slot iteration i - 1
// used, and the epilogue drains. The offsets are recomputed at the shifted
// induction value, the masks also turned off past the loop's end.

// CHECK-LABEL: func.func @kloop
// CHECK-SAME: (%[[A:[^:]*]]: memref{{.*}}, %[[B:[^:]*]]: memref{{.*}}, %[[OA:[^:]*]]: tensor<64x32xi32>, %[[OB:[^:]*]]: tensor<32x64xi32>, %[[MA:[^:]*]]: tensor<64x32xi1>, %[[MB:[^:]*]]: tensor<32x64xi1>, %[[K:[^:]*]]: i32, %[[SK:[^:]*]]: i32)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : i32
// CHECK: %[[RA:.*]] = "tile.local_alloc"() : () -> memref<3x64x32xbf16, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[RB:.*]] = "tile.local_alloc"() : () -> memref<3x32x64xbf16, #gpu.address_space<workgroup>>
// Prologue, stage 0: the offsets at k = 0, copies into slot 0.
// CHECK: %[[S0:.*]] = arith.constant 0 : i32
// CHECK: %[[SH0:.*]] = "tile.splat"(%[[C0]])
// CHECK: %[[OFF0:.*]] = arith.addi %[[OA]], %[[SH0]]
// CHECK: %[[LIVE0:.*]] = arith.cmpi slt, %[[C0]], %[[K]] : i32
// CHECK: "tile.async_copy"(%[[RA]], %[[S0]], %[[A]], %[[OFF0]], %{{.*}})
// CHECK: "tile.async_copy"(%[[RB]], %[[S0]], %[[B]], %{{.*}}, %{{.*}})
// CHECK-NEXT: "tile.async_commit"()
// Prologue, stage 1: k = 0 + 32, slot 1.
// CHECK: %[[K1:.*]] = arith.addi %[[C0]], %{{.*}} : i32
// CHECK: %[[S1:.*]] = arith.constant 1 : i32
// CHECK: "tile.splat"(%[[K1]])
// CHECK: arith.cmpi slt, %[[K1]], %[[K]] : i32
// CHECK: "tile.async_copy"(%[[RA]], %[[S1]], %[[A]]
// CHECK: "tile.async_copy"(%[[RB]], %[[S1]], %[[B]]
// CHECK-NEXT: "tile.async_commit"()
// Steady state.
// CHECK: %[[ACC:.*]] = scf.for %[[IV:.*]] = %[[C0]] to %[[K]] step %[[C32]] iter_args(%[[X:.*]] = %{{.*}})
// CHECK-NEXT: "tile.async_wait"() {pending = 1 : i32}
// CHECK: %[[I:.*]] = arith.divsi %{{.*}}, %[[C32]] : i32
// CHECK: %[[READ:.*]] = arith.remsi %[[I]], %{{.*}} : i32
// CHECK: %[[WRITE:.*]] = arith.remsi %{{.*}}, %{{.*}} : i32
// CHECK: %[[TA:.*]] = "tile.local_load"(%[[RA]], %[[READ]]) : {{.*}} -> tensor<64x32xbf16>
// CHECK: %[[TB:.*]] = "tile.local_load"(%[[RB]], %[[READ]]) : {{.*}} -> tensor<32x64xbf16>
// CHECK: %[[NEXT:.*]] = arith.addi %[[IV]], %{{.*}} : i32
// CHECK: "tile.splat"(%[[NEXT]])
// CHECK: %[[LIVE:.*]] = arith.cmpi slt, %[[NEXT]], %[[K]] : i32
// CHECK: %[[LIVET:.*]] = "tile.splat"(%[[LIVE]]) : (i1) -> tensor<64x32xi1>
// CHECK: %[[MASK:.*]] = arith.andi %[[MA]], %[[LIVET]]
// CHECK: "tile.async_copy"(%[[RA]], %[[WRITE]], %[[A]], %{{.*}}, %[[MASK]])
// CHECK: "tile.async_copy"(%[[RB]], %[[WRITE]], %[[B]]
// CHECK-NEXT: "tile.async_commit"()
// CHECK-NOT: "tile.load"
// CHECK: %[[D:.*]] = "tile.dot"(%[[TA]], %[[TB]], %[[X]])
// CHECK-NEXT: scf.yield %[[D]]
// Epilogue.
// CHECK-NEXT: }
// CHECK-NEXT: "tile.async_wait"() {pending = 0 : i32}
// CHECK-NEXT: "tile.local_dealloc"(%[[RB]])
// CHECK-NEXT: "tile.local_dealloc"(%[[RA]])
// CHECK-NEXT: return %[[ACC]]

// OFF-LABEL: func.func @kloop
// OFF-NOT: tile.async_copy

// With `tma`, offsets and masks that are not a block masked at a tensor's bounds
// (here the function's arguments) keep their cp.async copies.
// TMA-LABEL: func.func @kloop
// TMA-NOT: tile.tma_load
// TMA: "tile.async_copy"
// TMA-NOT: tile.tma_load
// TMA: return
// OFF: "tile.load"
// OFF: "tile.load"
// OFF: "tile.dot"
func.func @kloop(%a: !a, %b: !a, %oa: tensor<64x32xi32>, %ob: tensor<32x64xi32>, %ma: tensor<64x32xi1>, %mb: tensor<32x64xi1>,
                 %K: i32, %sk: i32) -> tensor<64x64xf32> {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zf = arith.constant 0.0 : f32
  %zb = arith.constant 0.0 : bf16
  %acc0 = "tile.splat"(%zf) : (f32) -> tensor<64x64xf32>
  %za = "tile.splat"(%zb) : (bf16) -> tensor<64x32xbf16>
  %zbt = "tile.splat"(%zb) : (bf16) -> tensor<32x64xbf16>
  %r = scf.for %k = %c0 to %K step %c32 iter_args(%acc = %acc0) -> (tensor<64x64xf32>) : i32 {
    %ks = "tile.splat"(%k) : (i32) -> tensor<64x32xi32>
    %offa = arith.addi %oa, %ks : tensor<64x32xi32>
    %ta = "tile.load"(%a, %offa, %ma, %za) : (!a, tensor<64x32xi32>, tensor<64x32xi1>, tensor<64x32xbf16>) -> tensor<64x32xbf16>
    %kb = arith.muli %k, %sk : i32
    %kbs = "tile.splat"(%kb) : (i32) -> tensor<32x64xi32>
    %offb = arith.addi %ob, %kbs : tensor<32x64xi32>
    %tb = "tile.load"(%b, %offb, %mb, %zbt) : (!a, tensor<32x64xi32>, tensor<32x64xi1>, tensor<32x64xbf16>) -> tensor<32x64xbf16>
    %d = "tile.dot"(%ta, %tb, %acc) : (tensor<64x32xbf16>, tensor<32x64xbf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  return %r : tensor<64x64xf32>
}

// -----

// Not pipelined: a tile of the tensor that the loop also stores into (a copy run
// ahead would read before the store), and a tile whose `other` is not zero.

// CHECK-LABEL: func.func @not_only_dot
// CHECK-NOT: tile.async_copy
// CHECK: "tile.load"
// CHECK: "tile.load"
// CHECK-NOT: tile.async_copy
// CHECK: return
!b = memref<?xbf16, strided<[?], offset: ?>>
func.func @not_only_dot(%a: !b, %o: tensor<32x32xi32>, %m: tensor<32x32xi1>, %n: i32) -> tensor<32x32xf32> {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zf = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : bf16
  %zb = arith.constant 0.0 : bf16
  %acc0 = "tile.splat"(%zf) : (f32) -> tensor<32x32xf32>
  %ones = "tile.splat"(%one) : (bf16) -> tensor<32x32xbf16>
  %zeros = "tile.splat"(%zb) : (bf16) -> tensor<32x32xbf16>
  %r = scf.for %k = %c0 to %n step %c32 iter_args(%acc = %acc0) -> (tensor<32x32xf32>) : i32 {
    %ks = "tile.splat"(%k) : (i32) -> tensor<32x32xi32>
    %off = arith.addi %o, %ks : tensor<32x32xi32>
    %t = "tile.load"(%a, %off, %m, %ones) : (!b, tensor<32x32xi32>, tensor<32x32xi1>, tensor<32x32xbf16>) -> tensor<32x32xbf16>
    %u = "tile.load"(%a, %off, %m, %zeros) : (!b, tensor<32x32xi32>, tensor<32x32xi1>, tensor<32x32xbf16>) -> tensor<32x32xbf16>
    "tile.store"(%a, %off, %u, %m) : (!b, tensor<32x32xi32>, tensor<32x32xbf16>, tensor<32x32xi1>) -> ()
    %d = "tile.dot"(%t, %u, %acc) : (tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<32x32xf32>) -> tensor<32x32xf32>
    scf.yield %d : tensor<32x32xf32>
  }
  return %r : tensor<32x32xf32>
}

// -----

// A wgmma accumulator that only the next iteration's dot reads: the dot stays in
// flight (`in_flight = 1`); a `tile.dot_wait {pending = 1}` right after it finishes the
// dot of the iteration before, a barrier then frees its slot in every warpgroup, and the
// copies of iteration i + 2 go there (3 stages: two prologue groups, one still pending at
// the wait; Triton's order). A `tile.dot_wait {pending = 0}` finishes the last dot
// before the loop's result is read. With `wait-before-copies=0` (LATE) the copies are
// issued before the wait, while the dot runs, one iteration less ahead.

// CHECK-LABEL: func.func @wgmma_in_flight
// CHECK: %[[RA:.*]] = "tile.local_alloc"() : () -> memref<3x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK: "tile.async_copy"(%[[RA]]
// CHECK: "tile.async_commit"()
// CHECK: "tile.async_commit"()
// CHECK-NOT: "tile.async_commit"()
// CHECK: %[[ACC:.*]] = scf.for %[[IV:.*]] = {{.*}} iter_args(%[[X:.*]] = %{{.*}})
// CHECK-NEXT: "tile.async_wait"() {pending = 1 : i32}
// CHECK: %[[I:.*]] = arith.divsi
// CHECK: %[[TWO:.*]] = arith.constant 2 : i32
// CHECK: %[[AHEAD:.*]] = arith.addi %[[I]], %[[TWO]] : i32
// CHECK: %[[WRITE:.*]] = arith.remsi %[[AHEAD]], %{{.*}} : i32
// CHECK-NOT: "tile.async_copy"
// CHECK: %[[D:.*]] = "tile.dot"(%{{.*}}, %{{.*}}, %[[X]]) {in_flight = 1 : i32}
// CHECK-NEXT: %[[W:.*]] = "tile.dot_wait"(%[[D]]) {pending = 1 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK: "tile.async_copy"(%[[RA]], %[[WRITE]]
// CHECK: "tile.async_commit"()
// CHECK-NEXT: scf.yield %[[W]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[DONE:.*]] = "tile.dot_wait"(%[[ACC]]) {pending = 0 : i32}
// CHECK-NEXT: "tile.async_wait"() {pending = 0 : i32}
// CHECK-NEXT: "tile.local_dealloc"
// CHECK-NEXT: "tile.local_dealloc"
// CHECK-NEXT: return %[[DONE]]

// LATE-LABEL: func.func @wgmma_in_flight
// LATE: "tile.async_commit"()
// LATE-NOT: "tile.async_commit"()
// LATE: scf.for
// LATE-NEXT: "tile.async_wait"() {pending = 0 : i32}
// LATE: %[[D:.*]] = "tile.dot"(%{{.*}}, %{{.*}}, %{{.*}}) {in_flight = 1 : i32}
// LATE: "tile.async_copy"
// LATE: "tile.async_commit"()
// LATE-NEXT: %[[W:.*]] = "tile.dot_wait"(%[[D]]) {pending = 1 : i32}
// LATE-NEXT: scf.yield %[[W]]

// OFF-LABEL: func.func @wgmma_in_flight
// OFF-NOT: tile.dot_wait
!a = memref<?x?xbf16, strided<[?, ?], offset: ?>>
!w = tensor<128x128xf32, #tile.wgmma<[2, 1]>>
func.func @wgmma_in_flight(%a: !a, %b: !a, %oa: tensor<128x64xi32>, %ob: tensor<64x128xi32>, %ma: tensor<128x64xi1>,
                           %mb: tensor<64x128xi1>, %K: i32, %sk: i32) -> !w {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zf = arith.constant 0.0 : f32
  %zb = arith.constant 0.0 : bf16
  %acc0 = "tile.splat"(%zf) : (f32) -> !w
  %za = "tile.splat"(%zb) : (bf16) -> tensor<128x64xbf16>
  %zbt = "tile.splat"(%zb) : (bf16) -> tensor<64x128xbf16>
  %r = scf.for %k = %c0 to %K step %c64 iter_args(%acc = %acc0) -> (!w) : i32 {
    %ks = "tile.splat"(%k) : (i32) -> tensor<128x64xi32>
    %offa = arith.addi %oa, %ks : tensor<128x64xi32>
    %ta = "tile.load"(%a, %offa, %ma, %za) : (!a, tensor<128x64xi32>, tensor<128x64xi1>, tensor<128x64xbf16>) -> tensor<128x64xbf16>
    %kb = arith.muli %k, %sk : i32
    %kbs = "tile.splat"(%kb) : (i32) -> tensor<64x128xi32>
    %offb = arith.addi %ob, %kbs : tensor<64x128xi32>
    %tb = "tile.load"(%b, %offb, %mb, %zbt) : (!a, tensor<64x128xi32>, tensor<64x128xi1>, tensor<64x128xbf16>) -> tensor<64x128xbf16>
    %d = "tile.dot"(%ta, %tb, %acc) : (tensor<128x64xbf16>, tensor<64x128xbf16>, !w) -> !w
    scf.yield %d : !w
  }
  return %r : !w
}

// -----

// With `tma` (sm_90a), loads of whole blocks masked at the tensor's bounds
// (a + rm[:, None] * sa + rk[None, :], (rm[:, None] < M) & (rk[None, :] < K))
// become TMA copies: the kernel gains one tensor-map pointer per load, described
// in `tile.tma` (bounds and row stride by argument number, box, swizzle); one
// mbarrier per slot expects both copies of an iteration. Prologue: iterations 0
// and 1 (4 stages, the dot in flight: 2 ahead). Steady state: wait on the slot's
// mbarrier at the parity of its use, barrier, dot, then iteration i + 2's copies
// at the row and column starts evaluated there, then the dot wait. Epilogue:
// only the last dot's wait (no copy is started for an iteration that does not run),
// the rings freed and the mbarriers invalidated.

// A tensor map needs a row stride that is a multiple of 16 bytes: with b's stride
// (argument 6) not known to be one, both loads keep their cp.async copies.
// UNALIGNED-LABEL: func.func @tma_kloop
// UNALIGNED-NOT: tile.tma_load
// UNALIGNED: "tile.async_copy"
// UNALIGNED-NOT: tile.tma_load
// UNALIGNED: return

// TMA-LABEL: func.func @tma_kloop
// TMA-SAME: %[[DA:[^:]*]]: !llvm.ptr, %[[DB:[^:]*]]: !llvm.ptr)
// TMA-SAME: tile.tma = [{box = [128, 64], cols = "arg:4", rows = "arg:2", stride = "arg:5", swizzle = 128 : i64, tensor = 0 : i64},
// TMA-SAME: {box = [64, 64], cols = "arg:3", rows = "arg:4", stride = "arg:6", swizzle = 128 : i64, tensor = 1 : i64}]
// TMA: %[[RA:.*]] = "tile.local_alloc"() : () -> memref<4x128x64xbf16, #gpu.address_space<workgroup>>
// TMA: %[[RB:.*]] = "tile.local_alloc"() : () -> memref<4x64x128xbf16, #gpu.address_space<workgroup>>
// TMA: %[[BARS:.*]] = "tile.mbarrier_alloc"() {arrivals = 2 : i32} : () -> memref<4xi64, #gpu.address_space<workgroup>>
// TMA: "tile.tma_load"(%[[RA]], %{{.*}}, %[[BARS]], %[[DA]], {{.*}}) {box = [128 : i32, 64 : i32], swizzle = 128 : i32}
// TMA: "tile.tma_load"(%[[RB]], %{{.*}}, %[[BARS]], %[[DB]], {{.*}}) {box = [64 : i32, 64 : i32], swizzle = 128 : i32}
// TMA: "tile.tma_load"(%[[RA]]
// TMA: "tile.tma_load"(%[[RB]]
// TMA-NOT: "tile.tma_load"
// TMA: scf.for %[[IV:.*]] = {{.*}} iter_args(%[[X:.*]] = %{{.*}})
// TMA: %[[I:.*]] = arith.divsi
// TMA: %[[READ:.*]] = arith.remsi %[[I]]
// TMA: %[[USE:.*]] = arith.divsi %[[I]]
// TMA: %[[PARITY:.*]] = arith.andi %[[USE]]
// TMA-NEXT: "tile.mbarrier_wait"(%[[BARS]], %[[READ]], %[[PARITY]])
// TMA-NEXT: gpu.barrier
// TMA: %[[WRITE:.*]] = arith.remsi
// TMA: "tile.local_load"(%[[RA]], %[[READ]])
// TMA: "tile.local_load"(%[[RB]], %[[READ]])
// TMA: %[[NEXT:.*]] = arith.addi %[[IV]]
// TMA: %[[D:.*]] = "tile.dot"(%{{.*}}, %{{.*}}, %[[X]]) {in_flight = 1 : i32}
// TMA: %[[LIVE:.*]] = arith.cmpi slt, %[[NEXT]]
// TMA: %[[COL:.*]] = arith.select %{{.*}}, %[[NEXT]], %{{.*}} : i32
// TMA: "tile.tma_load"(%[[RA]], %[[WRITE]], %[[BARS]], %[[DA]], %{{.*}}, %[[COL]], %[[LIVE]])
// TMA: %[[ROW:.*]] = arith.select %{{.*}}, %[[NEXT]], %{{.*}} : i32
// TMA: "tile.tma_load"(%[[RB]], %[[WRITE]], %[[BARS]], %[[DB]], %[[ROW]], %{{.*}}, %[[LIVE]])
// TMA-NEXT: %[[W:.*]] = "tile.dot_wait"(%[[D]]) {pending = 1 : i32}
// TMA-NEXT: scf.yield %[[W]]
// TMA-NEXT: }
// TMA-NEXT: "tile.dot_wait"
// TMA-NOT: tile.async_wait
// TMA: "tile.local_dealloc"(%[[RB]])
// TMA-NEXT: "tile.local_dealloc"(%[[RA]])
// TMA-NEXT: "tile.mbarrier_dealloc"(%[[BARS]])
// TMA-NOT: tile.async_wait
// TMA: return

!m = memref<?x?xbf16, strided<[?, ?], offset: ?>>
!w = tensor<128x128xf32, #tile.wgmma<[2, 1]>>
func.func @tma_kloop(%a: !m, %b: !m, %M: i32, %N: i32, %K: i32, %sa: i32, %sb: i32, %r0: i32, %c0n: i32) -> !w {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zf = arith.constant 0.0 : f32
  %zb = arith.constant 0.0 : bf16
  %acc0 = "tile.splat"(%zf) : (f32) -> !w
  %ar128 = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %ar64 = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
  %r0s = "tile.splat"(%r0) : (i32) -> tensor<128xi32>
  %rm = arith.addi %r0s, %ar128 : tensor<128xi32>
  %c0s = "tile.splat"(%c0n) : (i32) -> tensor<128xi32>
  %rn = arith.addi %c0s, %ar128 : tensor<128xi32>
  %za = "tile.splat"(%zb) : (bf16) -> tensor<128x64xbf16>
  %zbt = "tile.splat"(%zb) : (bf16) -> tensor<64x128xbf16>
  %r = scf.for %k = %c0 to %K step %c64 iter_args(%acc = %acc0) -> (!w) : i32 {
    %ks = "tile.splat"(%k) : (i32) -> tensor<64xi32>
    %rk = arith.addi %ks, %ar64 : tensor<64xi32>
    // a: rm[:, None] * sa + rk[None, :], (rm[:, None] < M) & (rk[None, :] < K)
    %rm2 = "tile.reshape"(%rm) : (tensor<128xi32>) -> tensor<128x1xi32>
    %sas = "tile.splat"(%sa) : (i32) -> tensor<128x1xi32>
    %rows_a = arith.muli %rm2, %sas : tensor<128x1xi32>
    %rk2 = "tile.reshape"(%rk) : (tensor<64xi32>) -> tensor<1x64xi32>
    %ra = "tile.broadcast"(%rows_a) : (tensor<128x1xi32>) -> tensor<128x64xi32>
    %ca = "tile.broadcast"(%rk2) : (tensor<1x64xi32>) -> tensor<128x64xi32>
    %offa = arith.addi %ra, %ca : tensor<128x64xi32>
    %Ms = "tile.splat"(%M) : (i32) -> tensor<128x1xi32>
    %mrow = arith.cmpi slt, %rm2, %Ms : tensor<128x1xi32>
    %Ks = "tile.splat"(%K) : (i32) -> tensor<1x64xi32>
    %mcol = arith.cmpi slt, %rk2, %Ks : tensor<1x64xi32>
    %mr = "tile.broadcast"(%mrow) : (tensor<128x1xi1>) -> tensor<128x64xi1>
    %mc = "tile.broadcast"(%mcol) : (tensor<1x64xi1>) -> tensor<128x64xi1>
    %ma = arith.andi %mr, %mc : tensor<128x64xi1>
    %ta = "tile.load"(%a, %offa, %ma, %za) : (!m, tensor<128x64xi32>, tensor<128x64xi1>, tensor<128x64xbf16>) -> tensor<128x64xbf16>
    // b: rk[:, None] * sb + rn[None, :], (rk[:, None] < K) & (rn[None, :] < N)
    %rk3 = "tile.reshape"(%rk) : (tensor<64xi32>) -> tensor<64x1xi32>
    %sbs = "tile.splat"(%sb) : (i32) -> tensor<64x1xi32>
    %rows_b = arith.muli %sbs, %rk3 : tensor<64x1xi32>
    %rn2 = "tile.reshape"(%rn) : (tensor<128xi32>) -> tensor<1x128xi32>
    %rb = "tile.broadcast"(%rows_b) : (tensor<64x1xi32>) -> tensor<64x128xi32>
    %cb = "tile.broadcast"(%rn2) : (tensor<1x128xi32>) -> tensor<64x128xi32>
    %offb = arith.addi %cb, %rb : tensor<64x128xi32>
    %Ks2 = "tile.splat"(%K) : (i32) -> tensor<64x1xi32>
    %mkb = arith.cmpi slt, %rk3, %Ks2 : tensor<64x1xi32>
    %Ns = "tile.splat"(%N) : (i32) -> tensor<1x128xi32>
    %mnb = arith.cmpi slt, %rn2, %Ns : tensor<1x128xi32>
    %mkb2 = "tile.broadcast"(%mkb) : (tensor<64x1xi1>) -> tensor<64x128xi1>
    %mnb2 = "tile.broadcast"(%mnb) : (tensor<1x128xi1>) -> tensor<64x128xi1>
    %mb = arith.andi %mnb2, %mkb2 : tensor<64x128xi1>
    %tb = "tile.load"(%b, %offb, %mb, %zbt) : (!m, tensor<64x128xi32>, tensor<64x128xi1>, tensor<64x128xbf16>) -> tensor<64x128xbf16>
    %d = "tile.dot"(%ta, %tb, %acc) : (tensor<128x64xbf16>, tensor<64x128xbf16>, !w) -> !w
    scf.yield %d : !w
  }
  return %r : !w
}


// -----

// The same K loop in a loop over output tiles (a persistent kernel's): the rings and
// mbarriers are made before the loop over tiles and freed after it; the first tile's
// first two iterations are copied before it (live if it runs); in each tile the slots
// and parities count on from `base`, the K iterations of the tiles before (tile number
// times the trip count); right after the K loop, before its dot wait, the next tile's
// first two iterations are copied, its row start evaluated at t + step, into the slots
// after this tile's last, live if that tile runs.

// TMA-LABEL: func.func @tma_tiles
// TMA-SAME: %[[P:[^:]*]]: i32, %[[T:[^:]*]]: i32, %[[NP:[^:]*]]: i32, %{{[^:]*}}: !llvm.ptr
// TMA: %[[RA:.*]] = "tile.local_alloc"
// TMA: %[[RB:.*]] = "tile.local_alloc"
// TMA: %[[BARS:.*]] = "tile.mbarrier_alloc"
// TMA: %[[R00:.*]] = arith.muli %[[P]], %{{.*}} : i32
// TMA: %[[FIRST:.*]] = arith.cmpi slt, %[[P]], %[[T]] : i32
// TMA: %[[LIVE0:.*]] = arith.andi %{{.*}}, %[[FIRST]] : i1
// TMA: %[[ROW0:.*]] = arith.select %{{.*}}, %[[R00]], %{{.*}} : i32
// TMA: "tile.tma_load"(%[[RA]], %{{.*}}, %[[BARS]], %{{.*}}, %[[ROW0]], %{{.*}}, %[[LIVE0]])
// TMA: "tile.tma_load"(%[[RB]]
// TMA: "tile.tma_load"(%[[RA]]
// TMA: "tile.tma_load"(%[[RB]]
// TMA-NOT: "tile.tma_load"
// TMA: scf.for %[[TILE:.*]] = %[[P]] to %[[T]] step %[[NP]]
// TMA: %[[TRIPS:.*]] = arith.maxsi
// TMA: %[[DONE:.*]] = arith.subi %[[TILE]], %[[P]] : i32
// TMA: %[[TILES:.*]] = arith.divsi %[[DONE]], %[[NP]] : i32
// TMA: %[[BASE:.*]] = arith.muli %[[TILES]], %[[TRIPS]] : i32
// TMA: scf.for
// TMA: %[[I:.*]] = arith.addi %[[BASE]], %{{.*}} : i32
// TMA: %[[READ:.*]] = arith.remsi %[[I]]
// TMA: "tile.mbarrier_wait"(%[[BARS]], %[[READ]]
// TMA: "tile.tma_load"(%[[RA]]
// TMA: "tile.tma_load"(%[[RB]]
// TMA: "tile.dot_wait"{{.*}} {pending = 1 : i32}
// TMA-NEXT: scf.yield
// TMA-NEXT: }
// TMA-NEXT: %[[TN:.*]] = arith.addi %[[TILE]], %[[NP]] : i32
// TMA-NEXT: %[[RN:.*]] = arith.muli %[[TN]], %{{.*}} : i32
// TMA: %[[MORE:.*]] = arith.cmpi slt, %[[TN]], %[[T]] : i32
// TMA: %[[AFTER:.*]] = arith.addi %[[BASE]], %[[TRIPS]] : i32
// TMA: %[[S0:.*]] = arith.addi %[[AFTER]], %{{.*}} : i32
// TMA: %[[SLOT0:.*]] = arith.remsi %[[S0]], %{{.*}} : i32
// TMA: %[[LIVE:.*]] = arith.andi %{{.*}}, %[[MORE]] : i1
// TMA: %[[ROW:.*]] = arith.select %{{.*}}, %[[RN]], %{{.*}} : i32
// TMA: "tile.tma_load"(%[[RA]], %[[SLOT0]], %[[BARS]], %{{.*}}, %[[ROW]], %{{.*}}, %[[LIVE]])
// TMA: "tile.tma_load"(%[[RB]], %[[SLOT0]]
// TMA: "tile.tma_load"(%[[RA]]
// TMA: "tile.tma_load"(%[[RB]]
// TMA-NEXT: "tile.dot_wait"{{.*}} {pending = 0 : i32}
// TMA-NOT: tile.local_dealloc
// TMA: }
// TMA-NEXT: "tile.local_dealloc"(%[[RB]])
// TMA-NEXT: "tile.local_dealloc"(%[[RA]])
// TMA-NEXT: "tile.mbarrier_dealloc"(%[[BARS]])
// TMA-NEXT: return

!m = memref<?x?xbf16, strided<[?, ?], offset: ?>>
!w = tensor<128x128xf32, #tile.wgmma<[2, 1]>>
func.func @tma_tiles(%a: !m, %b: !m, %M: i32, %N: i32, %K: i32, %sa: i32, %sb: i32, %p: i32, %T: i32, %np: i32) {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %zf = arith.constant 0.0 : f32
  %zb = arith.constant 0.0 : bf16
  scf.for %t = %p to %T step %np : i32 {
    %r0 = arith.muli %t, %c128 : i32
    %acc0 = "tile.splat"(%zf) : (f32) -> !w
    %ar128 = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
    %ar64 = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %r0s = "tile.splat"(%r0) : (i32) -> tensor<128xi32>
    %rm = arith.addi %r0s, %ar128 : tensor<128xi32>
    %za = "tile.splat"(%zb) : (bf16) -> tensor<128x64xbf16>
    %zbt = "tile.splat"(%zb) : (bf16) -> tensor<64x128xbf16>
    %r = scf.for %k = %c0 to %K step %c64 iter_args(%acc = %acc0) -> (!w) : i32 {
      %ks = "tile.splat"(%k) : (i32) -> tensor<64xi32>
      %rk = arith.addi %ks, %ar64 : tensor<64xi32>
      %rm2 = "tile.reshape"(%rm) : (tensor<128xi32>) -> tensor<128x1xi32>
      %sas = "tile.splat"(%sa) : (i32) -> tensor<128x1xi32>
      %rows_a = arith.muli %rm2, %sas : tensor<128x1xi32>
      %rk2 = "tile.reshape"(%rk) : (tensor<64xi32>) -> tensor<1x64xi32>
      %ra = "tile.broadcast"(%rows_a) : (tensor<128x1xi32>) -> tensor<128x64xi32>
      %ca = "tile.broadcast"(%rk2) : (tensor<1x64xi32>) -> tensor<128x64xi32>
      %offa = arith.addi %ra, %ca : tensor<128x64xi32>
      %Ms = "tile.splat"(%M) : (i32) -> tensor<128x1xi32>
      %mrow = arith.cmpi slt, %rm2, %Ms : tensor<128x1xi32>
      %Ks = "tile.splat"(%K) : (i32) -> tensor<1x64xi32>
      %mcol = arith.cmpi slt, %rk2, %Ks : tensor<1x64xi32>
      %mr = "tile.broadcast"(%mrow) : (tensor<128x1xi1>) -> tensor<128x64xi1>
      %mc = "tile.broadcast"(%mcol) : (tensor<1x64xi1>) -> tensor<128x64xi1>
      %ma = arith.andi %mr, %mc : tensor<128x64xi1>
      %ta = "tile.load"(%a, %offa, %ma, %za) : (!m, tensor<128x64xi32>, tensor<128x64xi1>, tensor<128x64xbf16>) -> tensor<128x64xbf16>
      %rk3 = "tile.reshape"(%rk) : (tensor<64xi32>) -> tensor<64x1xi32>
      %sbs = "tile.splat"(%sb) : (i32) -> tensor<64x1xi32>
      %rows_b = arith.muli %sbs, %rk3 : tensor<64x1xi32>
      %rn2 = "tile.reshape"(%ar128) : (tensor<128xi32>) -> tensor<1x128xi32>
      %rb = "tile.broadcast"(%rows_b) : (tensor<64x1xi32>) -> tensor<64x128xi32>
      %cb = "tile.broadcast"(%rn2) : (tensor<1x128xi32>) -> tensor<64x128xi32>
      %offb = arith.addi %cb, %rb : tensor<64x128xi32>
      %Ks2 = "tile.splat"(%K) : (i32) -> tensor<64x1xi32>
      %mkb = arith.cmpi slt, %rk3, %Ks2 : tensor<64x1xi32>
      %Ns = "tile.splat"(%N) : (i32) -> tensor<1x128xi32>
      %mnb = arith.cmpi slt, %rn2, %Ns : tensor<1x128xi32>
      %mkb2 = "tile.broadcast"(%mkb) : (tensor<64x1xi1>) -> tensor<64x128xi1>
      %mnb2 = "tile.broadcast"(%mnb) : (tensor<1x128xi1>) -> tensor<64x128xi1>
      %mb = arith.andi %mnb2, %mkb2 : tensor<64x128xi1>
      %tb = "tile.load"(%b, %offb, %mb, %zbt) : (!m, tensor<64x128xi32>, tensor<64x128xi1>, tensor<64x128xbf16>) -> tensor<64x128xbf16>
      %d = "tile.dot"(%ta, %tb, %acc) : (tensor<128x64xbf16>, tensor<64x128xbf16>, !w) -> !w
      scf.yield %d : !w
    }
  }
  return
}


// -----

// A K loop whose bounds change from tile to tile (here K + t) has a different trip
// count in each tile, so its copies stay within the tile: rings, mbarriers and the
// prologue inside the loop over tiles, as in a loop of its own.

// TMA-LABEL: func.func @tma_tiles_varying_k
// TMA: scf.for
// TMA: "tile.local_alloc"
// TMA: "tile.mbarrier_alloc"
// TMA: "tile.tma_load"
// TMA: scf.for
// TMA: "tile.mbarrier_dealloc"
// TMA-NEXT: }
// TMA-NEXT: return

!m = memref<?x?xbf16, strided<[?, ?], offset: ?>>
!w = tensor<128x128xf32, #tile.wgmma<[2, 1]>>
func.func @tma_tiles_varying_k(%a: !m, %b: !m, %M: i32, %N: i32, %K: i32, %sa: i32, %sb: i32, %p: i32, %T: i32, %np: i32) {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %zf = arith.constant 0.0 : f32
  %zb = arith.constant 0.0 : bf16
  scf.for %t = %p to %T step %np : i32 {
    %r0 = arith.muli %t, %c128 : i32
    %kt = arith.addi %K, %t : i32
    %acc0 = "tile.splat"(%zf) : (f32) -> !w
    %ar128 = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
    %ar64 = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %r0s = "tile.splat"(%r0) : (i32) -> tensor<128xi32>
    %rm = arith.addi %r0s, %ar128 : tensor<128xi32>
    %za = "tile.splat"(%zb) : (bf16) -> tensor<128x64xbf16>
    %zbt = "tile.splat"(%zb) : (bf16) -> tensor<64x128xbf16>
    %r = scf.for %k = %c0 to %kt step %c64 iter_args(%acc = %acc0) -> (!w) : i32 {
      %ks = "tile.splat"(%k) : (i32) -> tensor<64xi32>
      %rk = arith.addi %ks, %ar64 : tensor<64xi32>
      %rm2 = "tile.reshape"(%rm) : (tensor<128xi32>) -> tensor<128x1xi32>
      %sas = "tile.splat"(%sa) : (i32) -> tensor<128x1xi32>
      %rows_a = arith.muli %rm2, %sas : tensor<128x1xi32>
      %rk2 = "tile.reshape"(%rk) : (tensor<64xi32>) -> tensor<1x64xi32>
      %ra = "tile.broadcast"(%rows_a) : (tensor<128x1xi32>) -> tensor<128x64xi32>
      %ca = "tile.broadcast"(%rk2) : (tensor<1x64xi32>) -> tensor<128x64xi32>
      %offa = arith.addi %ra, %ca : tensor<128x64xi32>
      %Ms = "tile.splat"(%M) : (i32) -> tensor<128x1xi32>
      %mrow = arith.cmpi slt, %rm2, %Ms : tensor<128x1xi32>
      %Ks = "tile.splat"(%K) : (i32) -> tensor<1x64xi32>
      %mcol = arith.cmpi slt, %rk2, %Ks : tensor<1x64xi32>
      %mr = "tile.broadcast"(%mrow) : (tensor<128x1xi1>) -> tensor<128x64xi1>
      %mc = "tile.broadcast"(%mcol) : (tensor<1x64xi1>) -> tensor<128x64xi1>
      %ma = arith.andi %mr, %mc : tensor<128x64xi1>
      %ta = "tile.load"(%a, %offa, %ma, %za) : (!m, tensor<128x64xi32>, tensor<128x64xi1>, tensor<128x64xbf16>) -> tensor<128x64xbf16>
      %rk3 = "tile.reshape"(%rk) : (tensor<64xi32>) -> tensor<64x1xi32>
      %sbs = "tile.splat"(%sb) : (i32) -> tensor<64x1xi32>
      %rows_b = arith.muli %sbs, %rk3 : tensor<64x1xi32>
      %rn2 = "tile.reshape"(%ar128) : (tensor<128xi32>) -> tensor<1x128xi32>
      %rb = "tile.broadcast"(%rows_b) : (tensor<64x1xi32>) -> tensor<64x128xi32>
      %cb = "tile.broadcast"(%rn2) : (tensor<1x128xi32>) -> tensor<64x128xi32>
      %offb = arith.addi %cb, %rb : tensor<64x128xi32>
      %Ks2 = "tile.splat"(%K) : (i32) -> tensor<64x1xi32>
      %mkb = arith.cmpi slt, %rk3, %Ks2 : tensor<64x1xi32>
      %Ns = "tile.splat"(%N) : (i32) -> tensor<1x128xi32>
      %mnb = arith.cmpi slt, %rn2, %Ns : tensor<1x128xi32>
      %mkb2 = "tile.broadcast"(%mkb) : (tensor<64x1xi1>) -> tensor<64x128xi1>
      %mnb2 = "tile.broadcast"(%mnb) : (tensor<1x128xi1>) -> tensor<64x128xi1>
      %mb = arith.andi %mnb2, %mkb2 : tensor<64x128xi1>
      %tb = "tile.load"(%b, %offb, %mb, %zbt) : (!m, tensor<64x128xi32>, tensor<64x128xi1>, tensor<64x128xbf16>) -> tensor<64x128xbf16>
      %d = "tile.dot"(%ta, %tb, %acc) : (tensor<128x64xbf16>, tensor<64x128xbf16>, !w) -> !w
      scf.yield %d : !w
    }
  }
  return
}


// -----

// A column-major B (its unit stride on K, the rows of the tile) is a transposed
// block: TMA copies it from the N x K row-major view of the tensor (rows N =
// argument 3, columns K = argument 4, row stride argument 6) into 128 x 64 slots,
// the tile's transpose, whose `tile.local_load` says so; each copy starts at
// (the block's column start, its row start).

// Without TMA (sm_80, sm_90) the same slots are filled by cp.async, the copy made in
// the slot's shape: 128 x 64 (N x K) offsets k + n * s, laid out 8 to a thread
// along K, the block's contiguous dim (`transposed_copies.py`).

// CHECK-LABEL: func.func @tma_kloop_b_column_major
// CHECK: "tile.local_alloc"() : () -> memref<3x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[RB:.*]] = "tile.local_alloc"() : () -> memref<3x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[KS:.*]] = "tile.broadcast"(%{{.*}}) : (tensor<1x64xi32, {{.*}}>) -> tensor<128x64xi32, #tile.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>
// CHECK: %[[N:.*]] = "tile.broadcast"(%{{.*}}) : (tensor<128x1xi32, {{.*}}>) -> tensor<128x64xi32, #tile.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>
// CHECK: %[[NS:.*]] = arith.muli %[[N]], %{{.*}}
// CHECK: %[[OFFS:.*]] = arith.addi %[[KS]], %[[NS]]
// CHECK: "tile.async_copy"(%[[RB]], %{{.*}}, %{{.*}}, %[[OFFS]], %{{.*}})
// CHECK: scf.for
// CHECK: "tile.local_load"(%[[RB]], %{{.*}}) {transposed} : (memref<3x128x64xbf16, #gpu.address_space<workgroup>>, i32) -> tensor<64x128xbf16>
// CHECK: "tile.async_copy"(%[[RB]]

// TMA-LABEL: func.func @tma_kloop_b_column_major
// TMA-SAME: {box = [128, 64], cols = "arg:4", rows = "arg:3", stride = "arg:6", swizzle = 128 : i64, tensor = 1 : i64}]
// TMA: %[[RA:.*]] = "tile.local_alloc"() : () -> memref<4x128x64xbf16, #gpu.address_space<workgroup>>
// TMA: %[[RB:.*]] = "tile.local_alloc"() : () -> memref<4x128x64xbf16, #gpu.address_space<workgroup>>
// TMA: scf.for %[[IV:[^ ]*]] =
// TMA: "tile.local_load"(%[[RA]], %{{.*}}) : (memref<4x128x64xbf16, #gpu.address_space<workgroup>>, i32) -> tensor<128x64xbf16>
// TMA: "tile.local_load"(%[[RB]], %{{.*}}) {transposed} : (memref<4x128x64xbf16, #gpu.address_space<workgroup>>, i32) -> tensor<64x128xbf16>
// TMA: %[[NEXT:.*]] = arith.addi %[[IV]]
// TMA: "tile.tma_load"(%[[RA]]
// TMA: %[[K:.*]] = arith.select %{{.*}}, %[[NEXT]], %{{.*}} : i32
// TMA: "tile.tma_load"(%[[RB]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[K]], %{{.*}}) {box = [128 : i32, 64 : i32], swizzle = 128 : i32}
// TMA: return

!m = memref<?x?xbf16, strided<[?, ?], offset: ?>>
!w = tensor<128x128xf32, #tile.wgmma<[2, 1]>>
func.func @tma_kloop_b_column_major(%a: !m, %b: !m, %M: i32, %N: i32, %K: i32, %sa: i32, %sb: i32, %r0: i32, %c0n: i32) -> !w {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zf = arith.constant 0.0 : f32
  %zb = arith.constant 0.0 : bf16
  %acc0 = "tile.splat"(%zf) : (f32) -> !w
  %ar128 = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %ar64 = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
  %r0s = "tile.splat"(%r0) : (i32) -> tensor<128xi32>
  %rm = arith.addi %r0s, %ar128 : tensor<128xi32>
  %c0s = "tile.splat"(%c0n) : (i32) -> tensor<128xi32>
  %rn = arith.addi %c0s, %ar128 : tensor<128xi32>
  %za = "tile.splat"(%zb) : (bf16) -> tensor<128x64xbf16>
  %zbt = "tile.splat"(%zb) : (bf16) -> tensor<64x128xbf16>
  %r = scf.for %k = %c0 to %K step %c64 iter_args(%acc = %acc0) -> (!w) : i32 {
    %ks = "tile.splat"(%k) : (i32) -> tensor<64xi32>
    %rk = arith.addi %ks, %ar64 : tensor<64xi32>
    // a: rm[:, None] * sa + rk[None, :], (rm[:, None] < M) & (rk[None, :] < K)
    %rm2 = "tile.reshape"(%rm) : (tensor<128xi32>) -> tensor<128x1xi32>
    %sas = "tile.splat"(%sa) : (i32) -> tensor<128x1xi32>
    %rows_a = arith.muli %rm2, %sas : tensor<128x1xi32>
    %rk2 = "tile.reshape"(%rk) : (tensor<64xi32>) -> tensor<1x64xi32>
    %ra = "tile.broadcast"(%rows_a) : (tensor<128x1xi32>) -> tensor<128x64xi32>
    %ca = "tile.broadcast"(%rk2) : (tensor<1x64xi32>) -> tensor<128x64xi32>
    %offa = arith.addi %ra, %ca : tensor<128x64xi32>
    %Ms = "tile.splat"(%M) : (i32) -> tensor<128x1xi32>
    %mrow = arith.cmpi slt, %rm2, %Ms : tensor<128x1xi32>
    %Ks = "tile.splat"(%K) : (i32) -> tensor<1x64xi32>
    %mcol = arith.cmpi slt, %rk2, %Ks : tensor<1x64xi32>
    %mr = "tile.broadcast"(%mrow) : (tensor<128x1xi1>) -> tensor<128x64xi1>
    %mc = "tile.broadcast"(%mcol) : (tensor<1x64xi1>) -> tensor<128x64xi1>
    %ma = arith.andi %mr, %mc : tensor<128x64xi1>
    %ta = "tile.load"(%a, %offa, %ma, %za) : (!m, tensor<128x64xi32>, tensor<128x64xi1>, tensor<128x64xbf16>) -> tensor<128x64xbf16>
    // b column-major: rk[:, None] + rn[None, :] * sb, (rk[:, None] < K) & (rn[None, :] < N)
    %rk3 = "tile.reshape"(%rk) : (tensor<64xi32>) -> tensor<64x1xi32>
    %sbs = "tile.splat"(%sb) : (i32) -> tensor<1x128xi32>
    %rn2 = "tile.reshape"(%rn) : (tensor<128xi32>) -> tensor<1x128xi32>
    %cols_b = arith.muli %rn2, %sbs : tensor<1x128xi32>
    %rb = "tile.broadcast"(%rk3) : (tensor<64x1xi32>) -> tensor<64x128xi32>
    %cb = "tile.broadcast"(%cols_b) : (tensor<1x128xi32>) -> tensor<64x128xi32>
    %offb = arith.addi %cb, %rb : tensor<64x128xi32>
    %Ks2 = "tile.splat"(%K) : (i32) -> tensor<64x1xi32>
    %mkb = arith.cmpi slt, %rk3, %Ks2 : tensor<64x1xi32>
    %Ns = "tile.splat"(%N) : (i32) -> tensor<1x128xi32>
    %mnb = arith.cmpi slt, %rn2, %Ns : tensor<1x128xi32>
    %mkb2 = "tile.broadcast"(%mkb) : (tensor<64x1xi1>) -> tensor<64x128xi1>
    %mnb2 = "tile.broadcast"(%mnb) : (tensor<1x128xi1>) -> tensor<64x128xi1>
    %mb = arith.andi %mnb2, %mkb2 : tensor<64x128xi1>
    %tb = "tile.load"(%b, %offb, %mb, %zbt) : (!m, tensor<64x128xi32>, tensor<64x128xi1>, tensor<64x128xbf16>) -> tensor<64x128xbf16>
    %d = "tile.dot"(%ta, %tb, %acc) : (tensor<128x64xbf16>, tensor<64x128xbf16>, !w) -> !w
    scf.yield %d : !w
  }
  return %r : !w
}


// -----

// f32 operands are pipelined only into a tf32 dot (the tensor cores); an exact
// f32 dot runs on the loop lowering, which reads its operands where they are.

!f = memref<?xf32, strided<[?], offset: ?>>

// CHECK-LABEL: func.func @f32_kloop
// CHECK: "tile.local_alloc"() : () -> memref<3x32x16xf32, #gpu.address_space<workgroup>>
// CHECK: "tile.local_alloc"() : () -> memref<3x16x32xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK-NOT: "tile.load"
// CHECK: "tile.dot"({{.*}}) {input_precision = "tf32"}
// CHECK: scf.for
// CHECK-NOT: tile.local_load
// CHECK: "tile.load"
// CHECK: "tile.load"
// CHECK: "tile.dot"
// CHECK-NOT: input_precision
func.func @f32_kloop(%p: !f, %oa: tensor<32x16xi32>, %ob: tensor<16x32xi32>, %ma: tensor<32x16xi1>, %mb: tensor<16x32xi1>,
                     %K: i32) -> (tensor<32x32xf32>, tensor<32x32xf32>) {
  %c0 = arith.constant 0 : i32
  %c16 = arith.constant 16 : i32
  %zf = arith.constant 0.0 : f32
  %acc0 = "tile.splat"(%zf) : (f32) -> tensor<32x32xf32>
  %za = "tile.splat"(%zf) : (f32) -> tensor<32x16xf32>
  %zb = "tile.splat"(%zf) : (f32) -> tensor<16x32xf32>
  %r = scf.for %k = %c0 to %K step %c16 iter_args(%acc = %acc0) -> (tensor<32x32xf32>) : i32 {
    %ks = "tile.splat"(%k) : (i32) -> tensor<32x16xi32>
    %offa = arith.addi %oa, %ks : tensor<32x16xi32>
    %ta = "tile.load"(%p, %offa, %ma, %za) : (!f, tensor<32x16xi32>, tensor<32x16xi1>, tensor<32x16xf32>) -> tensor<32x16xf32>
    %kt = "tile.splat"(%k) : (i32) -> tensor<16x32xi32>
    %offb = arith.addi %ob, %kt : tensor<16x32xi32>
    %tb = "tile.load"(%p, %offb, %mb, %zb) : (!f, tensor<16x32xi32>, tensor<16x32xi1>, tensor<16x32xf32>) -> tensor<16x32xf32>
    %d = "tile.dot"(%ta, %tb, %acc) {input_precision = "tf32"} : (tensor<32x16xf32>, tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
    scf.yield %d : tensor<32x32xf32>
  }
  %e = scf.for %k = %c0 to %K step %c16 iter_args(%acc = %acc0) -> (tensor<32x32xf32>) : i32 {
    %ks = "tile.splat"(%k) : (i32) -> tensor<32x16xi32>
    %offa = arith.addi %oa, %ks : tensor<32x16xi32>
    %ta = "tile.load"(%p, %offa, %ma, %za) : (!f, tensor<32x16xi32>, tensor<32x16xi1>, tensor<32x16xf32>) -> tensor<32x16xf32>
    %kt = "tile.splat"(%k) : (i32) -> tensor<16x32xi32>
    %offb = arith.addi %ob, %kt : tensor<16x32xi32>
    %tb = "tile.load"(%p, %offb, %mb, %zb) : (!f, tensor<16x32xi32>, tensor<16x32xi1>, tensor<16x32xf32>) -> tensor<16x32xf32>
    %d = "tile.dot"(%ta, %tb, %acc) : (tensor<32x16xf32>, tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
    scf.yield %d : tensor<32x32xf32>
  }
  return %r, %e : tensor<32x32xf32>, tensor<32x32xf32>
}

// -----

// A scalar load in the loop (a page number read from a table, as paged attention
// does) is no ring candidate; the pass leaves the loop as it is.

!t = memref<?xi32, strided<[?], offset: ?>>

// CHECK-LABEL: func.func @scalar_load_in_loop
// CHECK-NOT: tile.local_alloc
// CHECK: scf.for
// CHECK: "tile.load"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<?xi32, strided<[?], offset: ?>>, i32, i1, i32) -> i32
func.func @scalar_load_in_loop(%table: !t, %n: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %true = arith.constant true
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (i32) : i32 {
    %p = "tile.load"(%table, %i, %true, %c0) : (!t, i32, i1, i32) -> i32
    %s = arith.addi %acc, %p : i32
    scf.yield %s : i32
  }
  return %r : i32
}

// -----

// Attention's shape: Q, loaded before the K loop and read only by a wgmma dot in it,
// is copied into a one-slot ring once, where it was loaded, and the dot reads the slot;
// the ring is freed after the loop. V's offsets share a fusion group with the scores'
// softmax (which reads this iteration's dot): the ops that compute them alone are
// cloned out of the group, so that V's load is pipelined as K's is.

// CHECK-LABEL: func.func @attention_operands
// CHECK: %[[Q:.*]] = "tile.local_alloc"() : () -> memref<1x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : i32
// CHECK-NEXT: "tile.async_copy"(%[[Q]], %[[C0]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NEXT: "tile.async_commit"()
// CHECK-NEXT: "tile.async_wait"() {pending = 0 : i32}
// CHECK-NEXT: %[[QT:.*]] = "tile.local_load"(%[[Q]], %[[C0]])
// CHECK: %[[RK:.*]] = "tile.local_alloc"() : () -> memref<3x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[RV:.*]] = "tile.local_alloc"() : () -> memref<3x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: %[[K:.*]] = "tile.local_load"(%[[RK]]
// CHECK: %[[V:.*]] = "tile.local_load"(%[[RV]]
// CHECK: "tile.dot"(%[[QT]], %[[K]]
// CHECK: scf.execute_region
// CHECK: "tile.dot"(%{{.*}}, %[[V]]
// CHECK: }
// CHECK: "tile.local_dealloc"(%[[RV]])
// CHECK-NEXT: "tile.local_dealloc"(%[[RK]])
// CHECK-NEXT: "tile.local_dealloc"(%[[Q]])

// OFF-LABEL: func.func @attention_operands
// OFF-NOT: tile.local_alloc
!a = memref<?x?xbf16, strided<[?, ?], offset: ?>>
!s = tensor<128x64xf32, #tile.wgmma<[2, 1]>>
!t = tensor<64x64xbf16>
!i = tensor<64x64xi32>
func.func @attention_operands(%q: !a, %k: !a, %v: !a, %oq: tensor<128x64xi32>, %mq: tensor<128x64xi1>,
                              %ok: tensor<64x64xi32>, %ov: tensor<64x64xi32>, %mk: tensor<64x64xi1>, %N: i32) -> !s {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zf = arith.constant 0.0 : f32
  %zb = arith.constant 0.0 : bf16
  %acc0 = "tile.splat"(%zf) : (f32) -> !s
  %zq = "tile.splat"(%zb) : (bf16) -> tensor<128x64xbf16>
  %zt = "tile.splat"(%zb) : (bf16) -> !t
  %qt = "tile.load"(%q, %oq, %mq, %zq) : (!a, tensor<128x64xi32>, tensor<128x64xi1>, tensor<128x64xbf16>) -> tensor<128x64xbf16>
  %r = scf.for %n = %c0 to %N step %c64 iter_args(%acc = %acc0) -> (!s) : i32 {
    %ns = "tile.splat"(%n) : (i32) -> !i
    %offk = arith.addi %ok, %ns : !i
    %kt = "tile.load"(%k, %offk, %mk, %zt) : (!a, !i, tensor<64x64xi1>, !t) -> !t
    %s = "tile.dot"(%qt, %kt, %acc0) : (tensor<128x64xbf16>, !t, !s) -> !s
    %g:2 = scf.execute_region -> (tensor<128x64xbf16, #tile.wgmma<[2, 1]>>, !i) no_inline {
      %e = math.exp2 %s : !s
      %p = arith.truncf %e : !s to tensor<128x64xbf16, #tile.wgmma<[2, 1]>>
      %offv = arith.addi %ov, %ns : !i
      scf.yield %p, %offv : tensor<128x64xbf16, #tile.wgmma<[2, 1]>>, !i
    } {tile.fusion_group}
    %vt = "tile.load"(%v, %g#1, %mk, %zt) : (!a, !i, tensor<64x64xi1>, !t) -> !t
    %o = "tile.dot"(%g#0, %vt, %acc) : (tensor<128x64xbf16, #tile.wgmma<[2, 1]>>, !t, !s) -> !s
    scf.yield %o : !s
  }
  return %r : !s
}

// -----

// Attention's K, read transposed (its unit stride on D, the rows of the D x BLOCK_N
// tile) from a batch and head's base: a transposed slot (BLOCK_N x D) that cp.async
// fills along D (`transposed_copies.py`), the base, loop-invariant, computed once
// before the loop, the mask on the keys only.

// CHECK-LABEL: func.func @keys_transposed
// CHECK: %[[BASE:.*]] = arith.muli %{{.*}}, %{{.*}} : i32
// CHECK: %[[RK:.*]] = "tile.local_alloc"() : () -> memref<3x64x128xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[B:.*]] = "tile.splat"(%[[BASE]]) : (i32) -> tensor<64x128xi32
// CHECK: %[[OFFS:.*]] = arith.addi %[[B]], %{{.*}} : tensor<64x128xi32
// CHECK: "tile.async_copy"(%[[RK]], %{{.*}}, %{{.*}}, %[[OFFS]], %{{.*}}) : (memref<3x64x128xbf16, #gpu.address_space<workgroup>>, i32, memref<?xbf16, strided<[?], offset: ?>>, tensor<64x128xi32
// CHECK: scf.for
// CHECK: "tile.local_load"(%[[RK]], %{{.*}}) {transposed} : (memref<3x64x128xbf16, #gpu.address_space<workgroup>>, i32) -> tensor<128x64xbf16>
!b = memref<?xbf16, strided<[?], offset: ?>>
func.func @keys_transposed(%k: !b, %q: tensor<64x128xbf16>, %n: i32, %bh: i32, %s_bh: i32, %s_n: i32) -> tensor<64x64xf32> {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zf = arith.constant 0.0 : f32
  %zb = arith.constant 0.0 : bf16
  %acc0 = "tile.splat"(%zf) : (f32) -> tensor<64x64xf32>
  %zeros = "tile.splat"(%zb) : (bf16) -> tensor<128x64xbf16>
  %rd = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %r = scf.for %start = %c0 to %n step %c64 iter_args(%acc = %acc0) -> (tensor<64x64xf32>) : i32 {
    %base = arith.muli %bh, %s_bh : i32
    %bases = "tile.splat"(%base) : (i32) -> tensor<128x1xi32>
    %rd2 = "tile.reshape"(%rd) : (tensor<128xi32>) -> tensor<128x1xi32>
    %rows = arith.addi %bases, %rd2 : tensor<128x1xi32>
    %ar = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %st = "tile.splat"(%start) : (i32) -> tensor<64xi32>
    %rn = arith.addi %st, %ar : tensor<64xi32>
    %rn2 = "tile.reshape"(%rn) : (tensor<64xi32>) -> tensor<1x64xi32>
    %sn = "tile.splat"(%s_n) : (i32) -> tensor<1x64xi32>
    %cols = arith.muli %rn2, %sn : tensor<1x64xi32>
    %rowsb = "tile.broadcast"(%rows) : (tensor<128x1xi32>) -> tensor<128x64xi32>
    %colsb = "tile.broadcast"(%cols) : (tensor<1x64xi32>) -> tensor<128x64xi32>
    %offs = arith.addi %rowsb, %colsb : tensor<128x64xi32>
    %ns = "tile.splat"(%n) : (i32) -> tensor<1x64xi32>
    %in = arith.cmpi slt, %rn2, %ns : tensor<1x64xi32>
    %mask = "tile.broadcast"(%in) : (tensor<1x64xi1>) -> tensor<128x64xi1>
    %kt = "tile.load"(%k, %offs, %mask, %zeros) : (!b, tensor<128x64xi32>, tensor<128x64xi1>, tensor<128x64xbf16>) -> tensor<128x64xbf16>
    %d = "tile.dot"(%q, %kt, %acc) : (tensor<64x128xbf16>, tensor<128x64xbf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  return %r : tensor<64x64xf32>
}

// -----

// Q read by the wgmma dots of two loops (attention's whole key blocks, then its masked
// rest): one copy into a one-slot ring, freed after the second loop.

// CHECK-LABEL: func.func @operand_of_two_loops
// CHECK: %[[Q:.*]] = "tile.local_alloc"() : () -> memref<1x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[QT:.*]] = "tile.local_load"(%[[Q]]
// CHECK-NOT: "tile.local_dealloc"(%[[Q]])
// CHECK: scf.for
// CHECK: "tile.dot"(%[[QT]]
// CHECK-NOT: "tile.local_dealloc"(%[[Q]])
// CHECK: scf.for
// CHECK: "tile.dot"(%[[QT]]
// CHECK: }
// CHECK-NOT: scf.for
// CHECK: "tile.local_dealloc"(%[[Q]])
// CHECK-NEXT: return
!a = memref<?x?xbf16, strided<[?, ?], offset: ?>>
!s = tensor<128x64xf32, #tile.wgmma<[2, 1]>>
!t = tensor<64x64xbf16>
!i = tensor<64x64xi32>
func.func @operand_of_two_loops(%q: !a, %k: !a, %oq: tensor<128x64xi32>, %mq: tensor<128x64xi1>,
                                %ok: !i, %mk: tensor<64x64xi1>, %M: i32, %N: i32) -> !s {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zf = arith.constant 0.0 : f32
  %zb = arith.constant 0.0 : bf16
  %acc0 = "tile.splat"(%zf) : (f32) -> !s
  %zq = "tile.splat"(%zb) : (bf16) -> tensor<128x64xbf16>
  %zt = "tile.splat"(%zb) : (bf16) -> !t
  %qt = "tile.load"(%q, %oq, %mq, %zq) : (!a, tensor<128x64xi32>, tensor<128x64xi1>, tensor<128x64xbf16>) -> tensor<128x64xbf16>
  %r = scf.for %n = %c0 to %M step %c64 iter_args(%acc = %acc0) -> (!s) : i32 {
    %ns = "tile.splat"(%n) : (i32) -> !i
    %offk = arith.addi %ok, %ns : !i
    %kt = "tile.load"(%k, %offk, %mk, %zt) : (!a, !i, tensor<64x64xi1>, !t) -> !t
    %s = "tile.dot"(%qt, %kt, %acc) : (tensor<128x64xbf16>, !t, !s) -> !s
    scf.yield %s : !s
  }
  %r2 = scf.for %n = %M to %N step %c64 iter_args(%acc = %r) -> (!s) : i32 {
    %ns = "tile.splat"(%n) : (i32) -> !i
    %offk = arith.addi %ok, %ns : !i
    %kt = "tile.load"(%k, %offk, %mk, %zt) : (!a, !i, tensor<64x64xi1>, !t) -> !t
    %s = "tile.dot"(%qt, %kt, %acc) : (tensor<128x64xbf16>, !t, !s) -> !s
    scf.yield %s : !s
  }
  return %r2 : !s
}

// -----

// A loop with a dot pipelines a load that it reads in registers too: an int8
// weight tile, decoded before it feeds the dot. Its ring holds the bytes; its
// `tile.local_load` (read into registers by the codegen, since ops other than dots
// read it) feeds the decode. The decoded operand is staged in a ring of two slots
// of its own (`tile.local_store` into slot i % 2, read back there), so the dot
// stays in flight: the next iteration writes the other slot.

// CHECK-LABEL: func.func @decoded_operand
// CHECK: %[[RA:.*]] = "tile.local_alloc"() : () -> memref<3x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[RW:.*]] = "tile.local_alloc"() : () -> memref<3x64x128xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[RS:.*]] = "tile.local_alloc"() : () -> memref<2x64x128xbf16, #gpu.address_space<workgroup>>
// CHECK: "tile.async_copy"(%[[RW]]
// CHECK: scf.for
// CHECK-NEXT: "tile.async_wait"() {pending = 1 : i32}
// CHECK: %[[I:.*]] = arith.divsi
// CHECK: %[[A:.*]] = "tile.local_load"(%[[RA]]
// CHECK-NEXT: %[[W:.*]] = "tile.local_load"(%[[RW]]
// CHECK: %[[HALF:.*]] = arith.remsi %[[I]], %{{.*}} : i32
// CHECK: %[[X:.*]] = arith.sitofp %[[W]]
// CHECK-NEXT: "tile.local_store"(%[[X]], %[[RS]], %[[HALF]])
// CHECK-NEXT: %[[S:.*]] = "tile.local_load"(%[[RS]], %[[HALF]])
// CHECK-NEXT: %[[D:.*]] = "tile.dot"(%[[A]], %[[S]], %{{.*}}) {in_flight = 1 : i32}
// CHECK-NEXT: %[[DW:.*]] = "tile.dot_wait"(%[[D]]) {pending = 1 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK: "tile.async_copy"(%[[RW]]
// CHECK: "tile.async_commit"()
// CHECK-NEXT: scf.yield %[[DW]]
// CHECK: "tile.dot_wait"(%{{.*}}) {pending = 0 : i32}
// CHECK: "tile.local_dealloc"(%[[RS]])
!a = memref<?x?xbf16, strided<[?, ?], offset: ?>>
!q = memref<?x?xi8, strided<[?, ?], offset: ?>>
!w = tensor<128x128xf32, #tile.wgmma<[2, 1]>>
func.func @decoded_operand(%a: !a, %b: !q, %oa: tensor<128x64xi32>, %ob: tensor<64x128xi32>, %ma: tensor<128x64xi1>,
                           %mb: tensor<64x128xi1>, %K: i32) -> !w {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zf = arith.constant 0.0 : f32
  %zb = arith.constant 0.0 : bf16
  %z8 = arith.constant 0 : i8
  %acc0 = "tile.splat"(%zf) : (f32) -> !w
  %za = "tile.splat"(%zb) : (bf16) -> tensor<128x64xbf16>
  %zq = "tile.splat"(%z8) : (i8) -> tensor<64x128xi8>
  %r = scf.for %k = %c0 to %K step %c64 iter_args(%acc = %acc0) -> (!w) : i32 {
    %ks = "tile.splat"(%k) : (i32) -> tensor<128x64xi32>
    %offa = arith.addi %oa, %ks : tensor<128x64xi32>
    %ta = "tile.load"(%a, %offa, %ma, %za) : (!a, tensor<128x64xi32>, tensor<128x64xi1>, tensor<128x64xbf16>) -> tensor<128x64xbf16>
    %kbs = "tile.splat"(%k) : (i32) -> tensor<64x128xi32>
    %offb = arith.addi %ob, %kbs : tensor<64x128xi32>
    %tq = "tile.load"(%b, %offb, %mb, %zq) : (!q, tensor<64x128xi32>, tensor<64x128xi1>, tensor<64x128xi8>) -> tensor<64x128xi8>
    %tb = arith.sitofp %tq : tensor<64x128xi8> to tensor<64x128xbf16>
    %d = "tile.dot"(%ta, %tb, %acc) : (tensor<128x64xbf16>, tensor<64x128xbf16>, !w) -> !w
    scf.yield %d : !w
  }
  return %r : !w
}

// -----

// Two dots chained on one accumulator (INT4's two halves of K: the second
// accumulates into the first's result) stay in flight together, with 4 stages
// (here the loop's own `tile.num_stages`): each stages its decoded operand in two
// slots of its own, neither waits, and the body ends waiting for all but this
// iteration's two wgmma groups. With 3 stages they wait each iteration, so that
// the copies keep running two iterations ahead.

// CHECK-LABEL: func.func @chained_dots
// CHECK: %[[RL:.*]] = "tile.local_alloc"() : () -> memref<2x64x128xbf16, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[RH:.*]] = "tile.local_alloc"() : () -> memref<2x64x128xbf16, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: "tile.local_store"(%{{.*}}, %[[RL]], %[[HALF:[^)]*]])
// CHECK-NEXT: %[[L:.*]] = "tile.local_load"(%[[RL]], %[[HALF]])
// CHECK-NEXT: %[[D1:.*]] = "tile.dot"(%{{.*}}, %[[L]], %{{.*}}) {in_flight = 1 : i32}
// CHECK: "tile.local_store"(%{{.*}}, %[[RH]], %[[HALF]])
// CHECK-NEXT: %[[H:.*]] = "tile.local_load"(%[[RH]], %[[HALF]])
// CHECK-NEXT: %[[D2:.*]] = "tile.dot"(%{{.*}}, %[[H]], %[[D1]]) {in_flight = 1 : i32}
// CHECK-NEXT: %[[DW:.*]] = "tile.dot_wait"(%[[D2]]) {pending = 2 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK: "tile.async_copy"
// CHECK: "tile.async_commit"()
// CHECK-NEXT: scf.yield %[[DW]]
// CHECK: "tile.dot_wait"(%{{.*}}) {pending = 0 : i32}

// OFF-LABEL: func.func @chained_dots
// OFF: "tile.dot_wait"(%{{.*}}) {pending = 2 : i32}
!a = memref<?x?xbf16, strided<[?, ?], offset: ?>>
!q = memref<?x?xi8, strided<[?, ?], offset: ?>>
!w = tensor<128x128xf32, #tile.wgmma<[2, 1]>>
func.func @chained_dots(%a: !a, %b: !q, %oa: tensor<128x64xi32>, %ob: tensor<64x128xi32>, %ma: tensor<128x64xi1>,
                        %mb: tensor<64x128xi1>, %K: i32) -> !w {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zf = arith.constant 0.0 : f32
  %zb = arith.constant 0.0 : bf16
  %z8 = arith.constant 0 : i8
  %acc0 = "tile.splat"(%zf) : (f32) -> !w
  %za = "tile.splat"(%zb) : (bf16) -> tensor<128x64xbf16>
  %zq = "tile.splat"(%z8) : (i8) -> tensor<64x128xi8>
  %r = scf.for %k = %c0 to %K step %c64 iter_args(%acc = %acc0) -> (!w) : i32 {
    %ks = "tile.splat"(%k) : (i32) -> tensor<128x64xi32>
    %offa = arith.addi %oa, %ks : tensor<128x64xi32>
    %ta = "tile.load"(%a, %offa, %ma, %za) : (!a, tensor<128x64xi32>, tensor<128x64xi1>, tensor<128x64xbf16>) -> tensor<128x64xbf16>
    %kbs = "tile.splat"(%k) : (i32) -> tensor<64x128xi32>
    %offb = arith.addi %ob, %kbs : tensor<64x128xi32>
    %tq = "tile.load"(%b, %offb, %mb, %zq) : (!q, tensor<64x128xi32>, tensor<64x128xi1>, tensor<64x128xi8>) -> tensor<64x128xi8>
    %lo = arith.sitofp %tq : tensor<64x128xi8> to tensor<64x128xbf16>
    %hi = arith.uitofp %tq : tensor<64x128xi8> to tensor<64x128xbf16>
    %d1 = "tile.dot"(%ta, %lo, %acc) : (tensor<128x64xbf16>, tensor<64x128xbf16>, !w) -> !w
    %d2 = "tile.dot"(%ta, %hi, %d1) : (tensor<128x64xbf16>, tensor<64x128xbf16>, !w) -> !w
    scf.yield %d2 : !w
  } {tile.num_stages = 4 : i32}
  return %r : !w
}

// CHECK-LABEL: func.func @chained_dots_three_stages
// CHECK-NOT: tile.local_store
// CHECK-NOT: in_flight
// CHECK: return
func.func @chained_dots_three_stages(%a: !a, %b: !q, %oa: tensor<128x64xi32>, %ob: tensor<64x128xi32>, %ma: tensor<128x64xi1>,
                                     %mb: tensor<64x128xi1>, %K: i32) -> !w {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zf = arith.constant 0.0 : f32
  %zb = arith.constant 0.0 : bf16
  %z8 = arith.constant 0 : i8
  %acc0 = "tile.splat"(%zf) : (f32) -> !w
  %za = "tile.splat"(%zb) : (bf16) -> tensor<128x64xbf16>
  %zq = "tile.splat"(%z8) : (i8) -> tensor<64x128xi8>
  %r = scf.for %k = %c0 to %K step %c64 iter_args(%acc = %acc0) -> (!w) : i32 {
    %ks = "tile.splat"(%k) : (i32) -> tensor<128x64xi32>
    %offa = arith.addi %oa, %ks : tensor<128x64xi32>
    %ta = "tile.load"(%a, %offa, %ma, %za) : (!a, tensor<128x64xi32>, tensor<128x64xi1>, tensor<128x64xbf16>) -> tensor<128x64xbf16>
    %kbs = "tile.splat"(%k) : (i32) -> tensor<64x128xi32>
    %offb = arith.addi %ob, %kbs : tensor<64x128xi32>
    %tq = "tile.load"(%b, %offb, %mb, %zq) : (!q, tensor<64x128xi32>, tensor<64x128xi1>, tensor<64x128xi8>) -> tensor<64x128xi8>
    %lo = arith.sitofp %tq : tensor<64x128xi8> to tensor<64x128xbf16>
    %hi = arith.uitofp %tq : tensor<64x128xi8> to tensor<64x128xbf16>
    %d1 = "tile.dot"(%ta, %lo, %acc) : (tensor<128x64xbf16>, tensor<64x128xbf16>, !w) -> !w
    %d2 = "tile.dot"(%ta, %hi, %d1) : (tensor<128x64xbf16>, tensor<64x128xbf16>, !w) -> !w
    scf.yield %d2 : !w
  }
  return %r : !w
}

// -----

// A loop without a dot is left alone, unless it asks for stages itself
// (`tile.range(..., num_stages=2)` sets `tile.num_stages`), which replaces the
// pass's option (pipelined even where the option is 1): then a load it reduces in
// registers runs one iteration ahead. A page number read from a table for the
// next iteration's copy reads only if that iteration runs: its mask is joined with
// the iteration's liveness, for the table may end at this iteration's row.

// CHECK-LABEL: func.func @rows
// CHECK-NOT: tile.async_copy
// CHECK: return
// CHECK-LABEL: func.func @paged
// CHECK: %[[R:.*]] = "tile.local_alloc"() : () -> memref<2x16x128xf32, #gpu.address_space<workgroup>>
// CHECK: %[[LIVE0:.*]] = arith.cmpi slt, %{{.*}}, %[[N:.*]] : i32
// CHECK-NEXT: %[[M0:.*]] = arith.andi %{{.*}}, %[[LIVE0]] : i1
// CHECK-NEXT: "tile.load"(%{{.*}}, %{{.*}}, %[[M0]], %{{.*}}) : ({{.*}}) -> i32
// CHECK: "tile.async_copy"(%[[R]]
// CHECK: scf.for %[[I:[^ ]*]] =
// CHECK: "tile.local_load"(%[[R]]
// CHECK: %[[NEXT:.*]] = arith.addi %[[I]], %{{.*}} : i32
// CHECK: %[[LIVE:.*]] = arith.cmpi slt, %[[NEXT]], %[[N]] : i32
// CHECK-NEXT: %[[M:.*]] = arith.andi %{{.*}}, %[[LIVE]] : i1
// CHECK-NEXT: "tile.load"(%{{.*}}, %[[NEXT]], %[[M]], %{{.*}}) : ({{.*}}) -> i32
// CHECK: "tile.async_copy"(%[[R]]
// CHECK: "tile.reduce"
// CHECK: } {tile.num_stages = 2 : i32}

// OFF-LABEL: func.func @rows
// OFF-NOT: tile.async_copy
// OFF-LABEL: func.func @paged
// OFF: "tile.async_copy"
!f = memref<?xf32, strided<[?], offset: ?>>
!t = memref<?xi32, strided<[?], offset: ?>>
func.func @rows(%x: !f, %o: tensor<16x128xi32>, %m: tensor<16x128xi1>, %n: i32) -> f32 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zf = arith.constant 0.0 : f32
  %z = "tile.splat"(%zf) : (f32) -> tensor<16x128xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zf) -> (f32) : i32 {
    %s = "tile.splat"(%i) : (i32) -> tensor<16x128xi32>
    %off = arith.addi %o, %s : tensor<16x128xi32>
    %t = "tile.load"(%x, %off, %m, %z) : (!f, tensor<16x128xi32>, tensor<16x128xi1>, tensor<16x128xf32>) -> tensor<16x128xf32>
    %v = "tile.reduce"(%t) {axis = 1 : i32, kind = "sum"} : (tensor<16x128xf32>) -> tensor<16xf32>
    %w = "tile.reduce"(%v) {axis = 0 : i32, kind = "sum"} : (tensor<16xf32>) -> f32
    %a = arith.addf %acc, %w : f32
    scf.yield %a : f32
  }
  return %r : f32
}
func.func @paged(%x: !f, %table: !t, %o: tensor<16x128xi32>, %m: tensor<16x128xi1>, %n: i32) -> f32 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %true = arith.constant true
  %zf = arith.constant 0.0 : f32
  %z = "tile.splat"(%zf) : (f32) -> tensor<16x128xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zf) -> (f32) : i32 {
    %page = "tile.load"(%table, %i, %true, %c0) : (!t, i32, i1, i32) -> i32
    %s = "tile.splat"(%page) : (i32) -> tensor<16x128xi32>
    %off = arith.addi %o, %s : tensor<16x128xi32>
    %t = "tile.load"(%x, %off, %m, %z) : (!f, tensor<16x128xi32>, tensor<16x128xi1>, tensor<16x128xf32>) -> tensor<16x128xf32>
    %v = "tile.reduce"(%t) {axis = 1 : i32, kind = "sum"} : (tensor<16x128xf32>) -> tensor<16xf32>
    %w = "tile.reduce"(%v) {axis = 0 : i32, kind = "sum"} : (tensor<16xf32>) -> f32
    %a = arith.addf %acc, %w : f32
    scf.yield %a : f32
  } {tile.num_stages = 2 : i32}
  return %r : f32
}

// -----

// Page numbers read as a 1-D tile, one per row (paged attention's steps of several
// pages), are part of the addresses: the rows they locate are copied ahead into a
// ring, the page numbers of that later iteration read for them, masked by its
// liveness (splat over the tile); the page numbers get no ring of their own.

// CHECK-LABEL: func.func @paged_rows
// CHECK: %[[R:.*]] = "tile.local_alloc"() : () -> memref<2x16x128xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: "tile.local_alloc"
// CHECK: scf.for %[[I:[^ ]*]] =
// CHECK: "tile.local_load"(%[[R]]
// CHECK: %[[NEXT:.*]] = arith.addi %[[I]], %{{.*}} : i32
// CHECK: %[[LIVE:.*]] = arith.cmpi slt, %[[NEXT]], %{{.*}} : i32
// CHECK-NEXT: %[[ALL:.*]] = "tile.splat"(%[[LIVE]]) : (i1) -> tensor<16xi1>
// CHECK-NEXT: %[[M:.*]] = arith.andi %{{.*}}, %[[ALL]] : tensor<16xi1>
// CHECK-NEXT: "tile.load"(%{{.*}}, %{{.*}}, %[[M]], %{{.*}}) : ({{.*}}) -> tensor<16xi32>
// CHECK: "tile.async_copy"(%[[R]]
// CHECK: } {tile.num_stages = 2 : i32}
!fr = memref<?xf32, strided<[?], offset: ?>>
!tr = memref<?xi32, strided<[?], offset: ?>>
func.func @paged_rows(%x: !fr, %table: !tr, %o: tensor<16x128xi32>, %m: tensor<16x128xi1>, %n: i32) -> f32 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c16 = arith.constant 16 : i32
  %true = arith.constant true
  %zf = arith.constant 0.0 : f32
  %z = "tile.splat"(%zf) : (f32) -> tensor<16x128xf32>
  %rows = "tile.arange"() {start = 0 : i32, end = 16 : i32} : () -> tensor<16xi32>
  %all = "tile.splat"(%true) : (i1) -> tensor<16xi1>
  %zi = "tile.splat"(%c0) : (i32) -> tensor<16xi32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zf) -> (f32) : i32 {
    %first = arith.muli %i, %c16 : i32
    %fs = "tile.splat"(%first) : (i32) -> tensor<16xi32>
    %at = arith.addi %fs, %rows : tensor<16xi32>
    %pages = "tile.load"(%table, %at, %all, %zi) : (!tr, tensor<16xi32>, tensor<16xi1>, tensor<16xi32>) -> tensor<16xi32>
    %p2 = "tile.reshape"(%pages) : (tensor<16xi32>) -> tensor<16x1xi32>
    %pb = "tile.broadcast"(%p2) : (tensor<16x1xi32>) -> tensor<16x128xi32>
    %off = arith.addi %o, %pb : tensor<16x128xi32>
    %t = "tile.load"(%x, %off, %m, %z) : (!fr, tensor<16x128xi32>, tensor<16x128xi1>, tensor<16x128xf32>) -> tensor<16x128xf32>
    %v = "tile.reduce"(%t) {axis = 1 : i32, kind = "sum"} : (tensor<16x128xf32>) -> tensor<16xf32>
    %w = "tile.reduce"(%v) {axis = 0 : i32, kind = "sum"} : (tensor<16xf32>) -> f32
    %a = arith.addf %acc, %w : f32
    scf.yield %a : f32
  } {tile.num_stages = 2 : i32}
  return %r : f32
}
