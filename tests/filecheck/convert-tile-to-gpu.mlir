// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-assign-layouts{num-warps=4}, convert-tile-to-gpu{num-warps=4 divisible-args=0,1,2}, canonicalize, cse)' | FileCheck %s --check-prefixes=CHECK,ALIGNED
// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-assign-layouts{num-warps=4}, convert-tile-to-gpu{num-warps=4}, canonicalize, cse)' | FileCheck %s --check-prefixes=CHECK,UNKNOWN
// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-assign-layouts{num-warps=4}, convert-tile-to-gpu{num-warps=4 divisible-args=0,1,2 noalias=1}, canonicalize, cse)' | FileCheck %s --check-prefix=NOALIAS

// 512 f32 over 128 threads: 4 registers each, consecutive. With aligned
// pointers and n a multiple of 16 (divisible-args), each thread's run is one
// 16-byte vector load and store predicated on its mask, computed once (inline
// PTX: NVVM has no predicated vector access); without that knowledge every
// element is compared, loaded and stored on its own.

!buf = memref<?xf32, strided<[?], offset: ?>>

// CHECK-LABEL: gpu.func @vector_add
// CHECK-SAME: kernel
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: %[[TID:.*]] = gpu.thread_id x
// The mask is proven equal across each run of 4: one compare per run.
// ALIGNED: %[[MASK:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : vector<1xi32>
// ALIGNED: %[[M0:.*]] = vector.extract %[[MASK]][0] : i1 from vector<1xi1>
// UNKNOWN: arith.cmpi slt, %{{.*}}, %{{.*}} : vector<4xi32>
// ALIGNED: %[[LD:.*]] = llvm.inline_asm has_side_effects "{{.*}}@$4 ld.global.v4.b32 {$0, $1, $2, $3}, [$5];", "=r,=r,=r,=r,b,l,r,r,r,r" %[[M0]], %[[ADDR:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (i1, i64, i32, i32, i32, i32) -> !llvm.struct<(i32, i32, i32, i32)>
// ALIGNED: %[[A:.*]] = vector.bitcast %{{.*}} : vector<4xi32> to vector<4xf32>
// ALIGNED: %[[S:.*]] = arith.addf %[[A]], %[[A]] fastmath<contract> : vector<4xf32>
// ALIGNED: %[[SW:.*]] = vector.bitcast %[[S]] : vector<4xf32> to vector<4xi32>
// ALIGNED: llvm.inline_asm has_side_effects "@$0 st.global.v4.b32 [$1], {$2, $3, $4, $5};", "b,l,r,r,r,r" %[[M0]]
// ALIGNED-NOT: scf.if
// UNKNOWN-NOT: ld.global.v4
// UNKNOWN-COUNT-4: @$1 ld.global.b32 $0, [$2];
// UNKNOWN-NOT: st.global.v4
// UNKNOWN-COUNT-4: @$0 st.global.b32 [$1], $2;
// CHECK: gpu.return
func.func @vector_add(%x: !buf, %y: !buf, %n: i32) attributes {tile.kernel} {
  %zero = arith.constant 0.0 : f32
  %pid = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %c512 = arith.constant 512 : i32
  %base = arith.muli %pid, %c512 : i32
  %r = "tile.arange"() {start = 0 : i32, end = 512 : i32} : () -> tensor<512xi32>
  %b = "tile.splat"(%base) : (i32) -> tensor<512xi32>
  %offs = arith.addi %b, %r : tensor<512xi32>
  %lim = "tile.splat"(%n) : (i32) -> tensor<512xi32>
  %m = arith.cmpi slt, %offs, %lim : tensor<512xi32>
  %other = "tile.splat"(%zero) : (f32) -> tensor<512xf32>
  %a = "tile.load"(%x, %offs, %m, %other) : (!buf, tensor<512xi32>, tensor<512xi1>, tensor<512xf32>) -> tensor<512xf32>
  %s = arith.addf %a, %a : tensor<512xf32>
  "tile.store"(%y, %offs, %s, %m) : (!buf, tensor<512xi32>, tensor<512xf32>, tensor<512xi1>) -> ()
  return
}

// -----

// noalias (no two tensor arguments overlap: the launcher checks it): %w, which
// the kernel never writes and every program reads at the same offsets, is read
// through the non-coherent path, `ld.global.nc`; %x, streamed (its offsets
// depend on the program id), and %acc, also written, are not. Without noalias
// nothing is.

!buf = memref<?xf32, strided<[?], offset: ?>>

// NOALIAS-LABEL: gpu.func @scale_accumulate
// NOALIAS-COUNT-4: @$1 ld.global.b32 $0, [$2];
// NOALIAS-COUNT-4: @$1 ld.global.nc.b32 $0, [$2];
// NOALIAS-COUNT-4: @$1 ld.global.b32 $0, [$2];
// NOALIAS-NOT: ld.global.nc
// NOALIAS: st.global.b32
// ALIGNED-LABEL: gpu.func @scale_accumulate
// ALIGNED-NOT: ld.global.nc
// ALIGNED: gpu.return
func.func @scale_accumulate(%x: !buf, %w: !buf, %acc: !buf, %n: i32) attributes {tile.kernel} {
  %zero = arith.constant 0.0 : f32
  %pid = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %c512 = arith.constant 512 : i32
  %base = arith.muli %pid, %c512 : i32
  %r = "tile.arange"() {start = 0 : i32, end = 512 : i32} : () -> tensor<512xi32>
  %b = "tile.splat"(%base) : (i32) -> tensor<512xi32>
  %offs = arith.addi %b, %r : tensor<512xi32>
  %lim = "tile.splat"(%n) : (i32) -> tensor<512xi32>
  %m = arith.cmpi slt, %offs, %lim : tensor<512xi32>
  %mw = arith.cmpi slt, %r, %lim : tensor<512xi32>
  %other = "tile.splat"(%zero) : (f32) -> tensor<512xf32>
  %a = "tile.load"(%x, %offs, %m, %other) : (!buf, tensor<512xi32>, tensor<512xi1>, tensor<512xf32>) -> tensor<512xf32>
  %wv = "tile.load"(%w, %r, %mw, %other) : (!buf, tensor<512xi32>, tensor<512xi1>, tensor<512xf32>) -> tensor<512xf32>
  %c = "tile.load"(%acc, %offs, %m, %other) : (!buf, tensor<512xi32>, tensor<512xi1>, tensor<512xf32>) -> tensor<512xf32>
  %p = arith.mulf %a, %wv : tensor<512xf32>
  %s = arith.addf %p, %c : tensor<512xf32>
  "tile.store"(%acc, %offs, %s, %m) : (!buf, tensor<512xi32>, tensor<512xf32>, tensor<512xi1>) -> ()
  return
}

// -----

// A row of 1024 summed by 128 threads: 8 registers each, then a butterfly of
// 5 xor shuffles within each warp, then the 4 warps' partials meet in shared
// memory across a barrier: each lane reads the partial of warp (lane mod 4),
// and two more xor shuffles give every lane the total. It is the kernel's first
// use of shared memory, outside any loop: no barrier is needed before its writes.

// CHECK-LABEL: gpu.func @row_sum
// CHECK: %[[SMEM:.*]] = gpu.dynamic_shared_memory
// CHECK-COUNT-7: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c4_i32, %c32_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c8_i32, %c32_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32, %c32_i32 : f32
// CHECK-NOT: gpu.shuffle
// CHECK: %[[VIEW:.*]] = memref.view %[[SMEM]]{{.*}} to memref<8xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[VIEW]]
// CHECK: gpu.barrier
// CHECK: %[[LANE:.*]] = arith.andi %{{.*}}, %c3_i32 : i32
// CHECK: %[[IDX:.*]] = arith.index_cast %[[LANE]]
// CHECK: memref.load %[[VIEW]][%[[IDX]]]
// CHECK-NOT: memref.load
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.return
func.func @row_sum(%x: memref<?xf32, strided<[?], offset: ?>>, %y: memref<?xf32, strided<[?], offset: ?>>) attributes {tile.kernel} {
  %zero = arith.constant 0.0 : f32
  %t = arith.constant true
  %r = "tile.arange"() {start = 0 : i32, end = 1024 : i32} : () -> tensor<1024xi32>
  %m = "tile.splat"(%t) : (i1) -> tensor<1024xi1>
  %other = "tile.splat"(%zero) : (f32) -> tensor<1024xf32>
  %a = "tile.load"(%x, %r, %m, %other) : (memref<?xf32, strided<[?], offset: ?>>, tensor<1024xi32>, tensor<1024xi1>, tensor<1024xf32>) -> tensor<1024xf32>
  %s = "tile.reduce"(%a) {axis = 0 : i32, kind = "sum"} : (tensor<1024xf32>) -> f32
  %c0 = arith.constant 0 : i32
  %true = arith.constant true
  "tile.store"(%y, %c0, %s, %true) : (memref<?xf32, strided<[?], offset: ?>>, i32, f32, i1) -> ()
  return
}

// -----

// Two full reductions back to back (a max, then a sum, as softmax does): the
// second writes the other half of the scratch, so it needs no barrier before
// its writes; the barrier between the first one's writes and reads already
// orders the first one's reads before them. (The first, the kernel's first use
// of shared memory, needs none either.)

// CHECK-LABEL: gpu.func @max_then_sum
// CHECK: %[[VIEW:.*]] = memref.view {{.*}} to memref<8xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[VIEW]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[VIEW]]
// CHECK: arith.addi %{{.*}}, %c4_i32 : i32
// CHECK-NOT: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[VIEW]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[VIEW]]
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
func.func @max_then_sum(%x: memref<?xf32, strided<[?], offset: ?>>, %y: memref<?xf32, strided<[?], offset: ?>>) attributes {tile.kernel} {
  %zero = arith.constant 0.0 : f32
  %t = arith.constant true
  %r = "tile.arange"() {start = 0 : i32, end = 1024 : i32} : () -> tensor<1024xi32>
  %m = "tile.splat"(%t) : (i1) -> tensor<1024xi1>
  %other = "tile.splat"(%zero) : (f32) -> tensor<1024xf32>
  %a = "tile.load"(%x, %r, %m, %other) : (memref<?xf32, strided<[?], offset: ?>>, tensor<1024xi32>, tensor<1024xi1>, tensor<1024xf32>) -> tensor<1024xf32>
  %mx = "tile.reduce"(%a) {axis = 0 : i32, kind = "max"} : (tensor<1024xf32>) -> f32
  %s = "tile.reduce"(%a) {axis = 0 : i32, kind = "sum"} : (tensor<1024xf32>) -> f32
  %both = arith.addf %mx, %s : f32
  %c0 = arith.constant 0 : i32
  %true = arith.constant true
  "tile.store"(%y, %c0, %both, %true) : (memref<?xf32, strided<[?], offset: ?>>, i32, f32, i1) -> ()
  return
}

// -----

// A dot whose accumulator is in `#tile.wgmma<[1, 1]>` (one warpgroup, 64 x 64)
// reads its operands from ring slots through matrix descriptors: A (64 x 32,
// rows of 64 bytes) in the 64-byte swizzle, stride offset 8 rows = 512 bytes;
// B (32 x 64, N-major) in the 128-byte swizzle, panels 32 x 128 bytes apart,
// stride offset 1024. One m64n64k16 per 16-wide K step, between a wgmma fence
// and a commit and wait. The ring's wait fences the async proxy before its barrier.

// CHECK-LABEL: gpu.func @wgmma
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: %[[DA:.*]] = arith.ori %{{.*}}, %c-9223371899415756800_i64 : i64
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: %[[DB:.*]] = arith.ori %{{.*}}, %c4611686293322072064_i64 : i64
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: %[[D0:.*]] = nvvm.wgmma.mma_async %[[DA0:.*]], %[[DB]], %{{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK: %[[D1:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[D0]], <m = 64, n = 64, k = 16>
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: gpu.return
!w = tensor<64x64xf32, #tile.wgmma<[1, 1]>>
!ring_a = memref<2x64x32xbf16, #gpu.address_space<workgroup>>
!ring_b = memref<2x32x64xbf16, #gpu.address_space<workgroup>>
func.func @wgmma(%out: memref<?xf32, strided<[?], offset: ?>>) attributes {tile.kernel} {
  %ra = "tile.local_alloc"() : () -> !ring_a
  %rb = "tile.local_alloc"() : () -> !ring_b
  %slot = arith.constant 1 : i32
  "tile.async_wait"() {pending = 0 : i32} : () -> ()
  %a = "tile.local_load"(%ra, %slot) : (!ring_a, i32) -> tensor<64x32xbf16>
  %b = "tile.local_load"(%rb, %slot) : (!ring_b, i32) -> tensor<32x64xbf16>
  %zf = arith.constant 0.0 : f32
  %acc = "tile.splat"(%zf) : (f32) -> !w
  %d = "tile.dot"(%a, %b, %acc) : (tensor<64x32xbf16>, tensor<32x64xbf16>, !w) -> !w
  %c0 = arith.constant 0 : i32
  %true = arith.constant true
  %offs = "tile.splat"(%c0) : (i32) -> tensor<64x64xi32, #tile.wgmma<[1, 1]>>
  %m = "tile.splat"(%true) : (i1) -> tensor<64x64xi1, #tile.wgmma<[1, 1]>>
  "tile.store"(%out, %offs, %d, %m) : (memref<?xf32, strided<[?], offset: ?>>, tensor<64x64xi32, #tile.wgmma<[1, 1]>>, !w, tensor<64x64xi1, #tile.wgmma<[1, 1]>>) -> ()
  return
}

// -----

// Operands held in registers (no ring) are staged for wgmma: a barrier (earlier
// readers are done), 8-byte stores into the swizzled scratch tiles, then the
// async-proxy fence and a barrier before the wgmma reads them.

// CHECK-LABEL: gpu.func @wgmma_staged
// CHECK: gpu.barrier
// CHECK-COUNT-4: vector.store %{{.*}}, %[[VIEW:.*]][%{{.*}}] {alignment = 8 : i64} : memref<2048xbf16, #gpu.address_space<workgroup>>, vector<4xbf16>
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
!w = tensor<64x64xf32, #tile.wgmma<[1, 1]>>
func.func @wgmma_staged(%out: memref<?xf32, strided<[?], offset: ?>>, %x: bf16) attributes {tile.kernel} {
  %a = "tile.splat"(%x) : (bf16) -> tensor<64x16xbf16>
  %b = "tile.splat"(%x) : (bf16) -> tensor<16x64xbf16>
  %zf = arith.constant 0.0 : f32
  %acc = "tile.splat"(%zf) : (f32) -> !w
  %d = "tile.dot"(%a, %b, %acc) : (tensor<64x16xbf16>, tensor<16x64xbf16>, !w) -> !w
  %c0 = arith.constant 0 : i32
  %true = arith.constant true
  %offs = "tile.splat"(%c0) : (i32) -> tensor<64x64xi32, #tile.wgmma<[1, 1]>>
  %m = "tile.splat"(%true) : (i1) -> tensor<64x64xi1, #tile.wgmma<[1, 1]>>
  "tile.store"(%out, %offs, %d, %m) : (memref<?xf32, strided<[?], offset: ?>>, tensor<64x64xi32, #tile.wgmma<[1, 1]>>, !w, tensor<64x64xi1, #tile.wgmma<[1, 1]>>) -> ()
  return
}

// -----

// An operand staged in a ring slot by `tile.local_store` (tile-pipeline's two
// slots for a decoded weight): its stores go to slot %slot (1024 elements a slot)
// with no barrier before them (the slot's last readers were waited for before
// the ring's barrier), then the async-proxy fence and a barrier; the dot reads it
// there, as it reads a copied slot.

// CHECK-LABEL: gpu.func @wgmma_local_store
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: arith.muli %arg2, %c1024_i32 : i32
// CHECK-NOT: gpu.barrier
// CHECK: vector.store
// CHECK-NEXT: vector.store
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
!w = tensor<64x64xf32, #tile.wgmma<[1, 1]>>
!ring_a = memref<2x64x16xbf16, #gpu.address_space<workgroup>>
!ring_s = memref<2x16x64xbf16, #gpu.address_space<workgroup>>
func.func @wgmma_local_store(%out: memref<?xf32, strided<[?], offset: ?>>, %x: bf16, %slot: i32) attributes {tile.kernel} {
  %ra = "tile.local_alloc"() : () -> !ring_a
  %rs = "tile.local_alloc"() : () -> !ring_s
  "tile.async_wait"() {pending = 0 : i32} : () -> ()
  %a = "tile.local_load"(%ra, %slot) : (!ring_a, i32) -> tensor<64x16xbf16>
  %b = "tile.splat"(%x) : (bf16) -> tensor<16x64xbf16>
  "tile.local_store"(%b, %rs, %slot) : (tensor<16x64xbf16>, !ring_s, i32) -> ()
  %s = "tile.local_load"(%rs, %slot) : (!ring_s, i32) -> tensor<16x64xbf16>
  %zf = arith.constant 0.0 : f32
  %acc = "tile.splat"(%zf) : (f32) -> !w
  %d = "tile.dot"(%a, %s, %acc) {in_flight = 1 : i32} : (tensor<64x16xbf16>, tensor<16x64xbf16>, !w) -> !w
  %w = "tile.dot_wait"(%d) {pending = 0 : i32} : (!w) -> !w
  %c0 = arith.constant 0 : i32
  %true = arith.constant true
  %offs = "tile.splat"(%c0) : (i32) -> tensor<64x64xi32, #tile.wgmma<[1, 1]>>
  %m = "tile.splat"(%true) : (i1) -> tensor<64x64xi1, #tile.wgmma<[1, 1]>>
  "tile.store"(%out, %offs, %w, %m) : (memref<?xf32, strided<[?], offset: ?>>, tensor<64x64xi32, #tile.wgmma<[1, 1]>>, !w, tensor<64x64xi1, #tile.wgmma<[1, 1]>>) -> ()
  return
}

// -----

// A dot left in flight (`in_flight`, set by tile-pipeline) commits its wgmma
// group without waiting; the `tile.dot_wait` after it waits, as inline PTX that
// takes and gives back the accumulator registers (nothing reads them before it).

// CHECK-LABEL: gpu.func @wgmma_in_flight
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NOT: nvvm.wgmma.wait.group.sync.aligned
// CHECK: llvm.inline_asm has_side_effects "wgmma.wait_group.sync.aligned 0;"
// CHECK-NOT: nvvm.wgmma.wait.group.sync.aligned
// CHECK: gpu.return
!w = tensor<64x64xf32, #tile.wgmma<[1, 1]>>
func.func @wgmma_in_flight(%out: memref<?xf32, strided<[?], offset: ?>>, %x: bf16) attributes {tile.kernel} {
  %a = "tile.splat"(%x) : (bf16) -> tensor<64x16xbf16>
  %b = "tile.splat"(%x) : (bf16) -> tensor<16x64xbf16>
  %zf = arith.constant 0.0 : f32
  %acc = "tile.splat"(%zf) : (f32) -> !w
  %d = "tile.dot"(%a, %b, %acc) {in_flight = 1 : i32} : (tensor<64x16xbf16>, tensor<16x64xbf16>, !w) -> !w
  %w = "tile.dot_wait"(%d) {pending = 0 : i32} : (!w) -> !w
  %c0 = arith.constant 0 : i32
  %true = arith.constant true
  %offs = "tile.splat"(%c0) : (i32) -> tensor<64x64xi32, #tile.wgmma<[1, 1]>>
  %m = "tile.splat"(%true) : (i1) -> tensor<64x64xi1, #tile.wgmma<[1, 1]>>
  "tile.store"(%out, %offs, %w, %m) : (memref<?xf32, strided<[?], offset: ?>>, tensor<64x64xi32, #tile.wgmma<[1, 1]>>, !w, tensor<64x64xi1, #tile.wgmma<[1, 1]>>) -> ()
  return
}

// -----

// TMA (sm_90a): the mbarriers are an nvgpu group, each initialized by thread 0,
// which then fences them for the async proxy (then a barrier). A copy, only if
// the iteration runs, issues one TMA per
// 128-byte panel (here 2 of 64 columns, the second 32 rows x 128 bytes further)
// into a view of the ring's slot, each from lane 0 of the next warp in turn (a
// branch on the warp); the first also announces the slot's bytes (8 KiB). The
// wait spins on the slot's mbarrier at the given parity. The dealloc waits for
// every thread, then thread 0 invalidates each mbarrier.

// CHECK-LABEL: gpu.func @tma
// CHECK-SAME: %[[DESC:[^:]*]]: !llvm.ptr
// CHECK: %[[BARS:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK-COUNT-2: nvgpu.mbarrier.init %[[BARS]][%{{.*}}], %{{.*}}, predicate = %[[T0:[^ ]*]] :
// CHECK-NEXT: scf.if %[[T0]] {
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK: %[[D:.*]] = builtin.unrealized_conversion_cast %[[DESC]] : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<32x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
// CHECK: %[[GO:.*]] = arith.andi
// CHECK: %[[W0:.*]] = arith.cmpi eq, %{{.*}}, %c0_i32
// CHECK-NEXT: scf.if %[[W0]] {
// CHECK-NEXT: nvgpu.mbarrier.arrive.expect_tx %[[BARS]][%[[SLOT:.*]]], %c8192, predicate = %[[GO]]
// CHECK: nvgpu.tma.async.load %[[D]][%[[COL:.*]], %[[ROW:.*]]], %[[BARS]][%[[SLOT]]] to %{{.*}}, predicate = %[[GO]]
// CHECK: %[[W1:.*]] = arith.cmpi eq, %{{.*}}, %c1_i32
// CHECK-NEXT: scf.if %[[W1]] {
// CHECK-NOT: nvgpu.mbarrier.arrive.expect_tx
// CHECK: %[[COL2:.*]] = arith.addi %[[COL]], %c64
// CHECK: nvgpu.tma.async.load %[[D]][%[[COL2]], %[[ROW]]], %[[BARS]][%[[SLOT]]] to %{{.*}}, predicate = %[[GO]]
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BARS]][%{{.*}}], %{{.*}}, %{{.*}}
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.if
// CHECK-NEXT: %[[B0:.*]] = nvgpu.mbarrier.get %[[BARS]][%c0]
// CHECK-NEXT: %[[P0:.*]] = llvm.inttoptr %[[B0]] : i32 to !llvm.ptr<3>
// CHECK-NEXT: nvvm.mbarrier.inval %[[P0]]
// CHECK-NEXT: %[[B1:.*]] = nvgpu.mbarrier.get %[[BARS]][%c1]
// CHECK-NEXT: %[[P1:.*]] = llvm.inttoptr %[[B1]] : i32 to !llvm.ptr<3>
// CHECK-NEXT: nvvm.mbarrier.inval %[[P1]]
!ring = memref<2x32x128xbf16, #gpu.address_space<workgroup>>
!bars = memref<2xi64, #gpu.address_space<workgroup>>
func.func @tma(%desc: !llvm.ptr, %row: i32, %col: i32, %live: i1, %slot: i32, %phase: i32) attributes {tile.kernel} {
  %r = "tile.local_alloc"() : () -> !ring
  %b = "tile.mbarrier_alloc"() {arrivals = 1 : i32} : () -> !bars
  "tile.tma_load"(%r, %slot, %b, %desc, %row, %col, %live) {box = [32 : i32, 64 : i32], swizzle = 128 : i32} : (!ring, i32, !bars, !llvm.ptr, i32, i32, i1) -> ()
  "tile.mbarrier_wait"(%b, %slot, %phase) : (!bars, i32, i32) -> ()
  "tile.mbarrier_dealloc"(%b) : (!bars) -> ()
  return
}

// -----

// A tf32 dot (f32 operands) in the `#tile.mma` layout: each warp (16 x 8 here)
// reads its A fragment (4 elements) and B fragment (2) from the ring slots one
// element at a time, rounds each to tf32 (+ 0x1000, clear the low 13 bits),
// then one m16n8k8 mma.sync per 8-wide K step.

// CHECK-LABEL: gpu.func @tf32_mma
// CHECK: %[[VA:.*]] = memref.view {{.*}} to memref<512xf32, #gpu.address_space<workgroup>>
// CHECK: %[[VB:.*]] = memref.view {{.*}} to memref<256xf32, #gpu.address_space<workgroup>>
// CHECK-COUNT-4: memref.load %[[VA]]
// CHECK: %[[A:.*]] = vector.from_elements %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : vector<4x1xf32>
// CHECK: %[[B0:.*]] = memref.load %[[VB]]
// CHECK-NEXT: %[[I:.*]] = arith.bitcast %[[B0]] : f32 to i32
// CHECK-NEXT: %[[S:.*]] = arith.addi %[[I]], %c4096_i32
// CHECK-NEXT: arith.andi %[[S]], %c-8192_i32
// CHECK: memref.load %[[VB]]
// CHECK: %[[B:.*]] = vector.from_elements %{{.*}}, %{{.*}} : vector<2x1xf32>
// CHECK-NEXT: nvgpu.mma.sync(%[[A]], %[[B]], %{{.*}}) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK-NOT: nvgpu.mma.sync
// CHECK: gpu.return
!m = tensor<32x16xf32, #tile.mma<[2, 2]>>
!ring_a = memref<2x32x8xf32, #gpu.address_space<workgroup>>
!ring_b = memref<2x8x16xf32, #gpu.address_space<workgroup>>
func.func @tf32_mma(%out: memref<?xf32, strided<[?], offset: ?>>) attributes {tile.kernel} {
  %ra = "tile.local_alloc"() : () -> !ring_a
  %rb = "tile.local_alloc"() : () -> !ring_b
  %slot = arith.constant 0 : i32
  "tile.async_wait"() {pending = 0 : i32} : () -> ()
  %a = "tile.local_load"(%ra, %slot) : (!ring_a, i32) -> tensor<32x8xf32>
  %b = "tile.local_load"(%rb, %slot) : (!ring_b, i32) -> tensor<8x16xf32>
  %zf = arith.constant 0.0 : f32
  %acc = "tile.splat"(%zf) : (f32) -> !m
  %d = "tile.dot"(%a, %b, %acc) {input_precision = "tf32"} : (tensor<32x8xf32>, tensor<8x16xf32>, !m) -> !m
  %c0 = arith.constant 0 : i32
  %true = arith.constant true
  %offs = "tile.splat"(%c0) : (i32) -> tensor<32x16xi32, #tile.mma<[2, 2]>>
  %msk = "tile.splat"(%true) : (i1) -> tensor<32x16xi1, #tile.mma<[2, 2]>>
  "tile.store"(%out, %offs, %d, %msk) : (memref<?xf32, strided<[?], offset: ?>>, tensor<32x16xi32, #tile.mma<[2, 2]>>, !m, tensor<32x16xi1, #tile.mma<[2, 2]>>) -> ()
  return
}

// -----

// The epilogue's layout conversion (tile-assign-layouts asks for it before a
// store of rows): the accumulator, in bf16, goes through a swizzled shared tile
// in the memory the rings held (freed by `tile.local_dealloc`, after a barrier),
// 4-byte stores of a thread's column pairs, a barrier, then 16-byte loads of
// the blocked layout's runs, which become 16-byte global stores (with the
// pointer and n known aligned).

// CHECK-LABEL: gpu.func @epilogue
// CHECK: %[[RING:.*]] = memref.view %{{.*}}[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4096xbf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: gpu.barrier
// CHECK-COUNT-16: vector.store %{{.*}}, %[[RING]][%{{.*}}] {alignment = 4 : i64} : memref<4096xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-4: vector.load %[[RING]][%{{.*}}] {alignment = 16 : i64} : memref<4096xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// ALIGNED-COUNT-4: vector.store %{{.*}}, %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<{{.*}}xbf16, strided<[1], offset: ?>>, vector<8xbf16>
// CHECK: gpu.return
!w = tensor<64x64xf32, #tile.wgmma<[1, 1]>>
!ring_a = memref<2x64x32xbf16, #gpu.address_space<workgroup>>
!ring_b = memref<2x32x64xbf16, #gpu.address_space<workgroup>>
#blk = #tile.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>
func.func @epilogue(%out: memref<?xbf16, strided<[?], offset: ?>>, %n: i32) attributes {tile.kernel} {
  %ra = "tile.local_alloc"() : () -> !ring_a
  %rb = "tile.local_alloc"() : () -> !ring_b
  %slot = arith.constant 0 : i32
  "tile.async_wait"() {pending = 0 : i32} : () -> ()
  %a = "tile.local_load"(%ra, %slot) : (!ring_a, i32) -> tensor<64x32xbf16>
  %b = "tile.local_load"(%rb, %slot) : (!ring_b, i32) -> tensor<32x64xbf16>
  %zf = arith.constant 0.0 : f32
  %acc = "tile.splat"(%zf) : (f32) -> !w
  %d = "tile.dot"(%a, %b, %acc) : (tensor<64x32xbf16>, tensor<32x64xbf16>, !w) -> !w
  "tile.local_dealloc"(%rb) : (!ring_b) -> ()
  "tile.local_dealloc"(%ra) : (!ring_a) -> ()
  %v = arith.truncf %d : !w to tensor<64x64xbf16, #tile.wgmma<[1, 1]>>
  %c = "tile.convert_layout"(%v) : (tensor<64x64xbf16, #tile.wgmma<[1, 1]>>) -> tensor<64x64xbf16, #blk>
  %r = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32, #tile.blocked<[1], [32], [4], [0]>>
  %rows = "tile.reshape"(%r) : (tensor<64xi32, #tile.blocked<[1], [32], [4], [0]>>) -> tensor<64x1xi32, #blk>
  %cols = "tile.reshape"(%r) : (tensor<64xi32, #tile.blocked<[1], [32], [4], [0]>>) -> tensor<1x64xi32, #blk>
  %ns = "tile.splat"(%n) : (i32) -> tensor<64x1xi32, #blk>
  %ro = arith.muli %rows, %ns : tensor<64x1xi32, #blk>
  %rb2 = "tile.broadcast"(%ro) : (tensor<64x1xi32, #blk>) -> tensor<64x64xi32, #blk>
  %cb = "tile.broadcast"(%cols) : (tensor<1x64xi32, #blk>) -> tensor<64x64xi32, #blk>
  %offs = arith.addi %rb2, %cb : tensor<64x64xi32, #blk>
  %true = arith.constant true
  %m = "tile.splat"(%true) : (i1) -> tensor<64x64xi1, #blk>
  "tile.store"(%out, %offs, %c, %m) : (memref<?xbf16, strided<[?], offset: ?>>, tensor<64x64xi32, #blk>, tensor<64x64xbf16, #blk>, tensor<64x64xi1, #blk>) -> ()
  return
}

// -----

// The same reduction in a loop keeps its barrier before the writes: the next
// iteration's writes must wait for this one's reads. Lane 0 of each warp writes its
// partial (every lane holds it after the butterfly: one writer an address).

// CHECK-LABEL: gpu.func @sum_in_loop
// CHECK: %[[LANE:.*]] = arith.andi %{{.*}}, %c31_i32
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0_i32
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<8xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK: scf.yield
func.func @sum_in_loop(%x: memref<?xf32, strided<[?], offset: ?>>, %y: memref<?xf32, strided<[?], offset: ?>>, %n: i32) attributes {tile.kernel} {
  %zero = arith.constant 0.0 : f32
  %t = arith.constant true
  %r = "tile.arange"() {start = 0 : i32, end = 1024 : i32} : () -> tensor<1024xi32>
  %m = "tile.splat"(%t) : (i1) -> tensor<1024xi1>
  %other = "tile.splat"(%zero) : (f32) -> tensor<1024xf32>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %total = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) : i32 {
    %a = "tile.load"(%x, %r, %m, %other) : (memref<?xf32, strided<[?], offset: ?>>, tensor<1024xi32>, tensor<1024xi1>, tensor<1024xf32>) -> tensor<1024xf32>
    %s = "tile.reduce"(%a) {axis = 0 : i32, kind = "sum"} : (tensor<1024xf32>) -> f32
    %next = arith.addf %acc, %s : f32
    scf.yield %next : f32
  }
  %true = arith.constant true
  "tile.store"(%y, %c0, %total, %true) : (memref<?xf32, strided<[?], offset: ?>>, i32, f32, i1) -> ()
  return
}

// -----

// tile.gather through shared memory: each thread stores its run of 8 f16 as four
// 4-byte stores from its linear position plus 4 bytes of padding per 128 and per
// 4096 (1024 elements take 1056), a barrier, then one load per element its index
// names, at the padded position of that index.

// CHECK-LABEL: gpu.func @gather(
// CHECK: %[[BUF:.*]] = memref.view %{{.*}}[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1056xf16, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK-NEXT: %[[SROW:.*]] = arith.shrui %[[S:.*]], %c6_i32 : i32
// CHECK-NEXT: %[[SBLK:.*]] = arith.shrui %[[S]], %c11_i32 : i32
// CHECK-NEXT: %[[SROWS:.*]] = arith.addi %[[SROW]], %[[SBLK]] : i32
// CHECK-NEXT: %[[SPAD:.*]] = arith.muli %[[SROWS]], %c2_i32 : i32
// CHECK-NEXT: %[[SAT:.*]] = arith.addi %[[S]], %[[SPAD]] : i32
// CHECK-COUNT-4: vector.store %{{.*}}, %[[BUF]][%{{.*}}] {alignment = 4 : i64} : memref<1056xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// CHECK-NOT: vector.store
// CHECK: gpu.barrier
// CHECK: %[[ROW:.*]] = arith.shrui %[[I:.*]], %c6_i32 : i32
// CHECK-NEXT: %[[BLK:.*]] = arith.shrui %[[I]], %c11_i32 : i32
// CHECK-NEXT: %[[ROWS:.*]] = arith.addi %[[ROW]], %[[BLK]] : i32
// CHECK-NEXT: %[[PAD:.*]] = arith.muli %[[ROWS]], %c2_i32 : i32
// CHECK-NEXT: %[[AT:.*]] = arith.addi %[[I]], %[[PAD]] : i32
// CHECK-NEXT: %[[AT1:.*]] = arith.addi %[[AT]], %c7_i32 : i32
// CHECK: %[[IX:.*]] = arith.index_cast %[[AT]] : i32 to index
// CHECK-NEXT: memref.load %[[BUF]][%[[IX]]]
// CHECK-NEXT: %[[IX1:.*]] = arith.index_cast %[[AT1]] : i32 to index
// CHECK-NEXT: memref.load %[[BUF]][%[[IX1]]]
// CHECK-COUNT-6: memref.load %[[BUF]]
// CHECK-NOT: memref.load %[[BUF]]
// CHECK: gpu.return
#b = #tile.blocked<[8], [32], [4], [0]>
func.func @gather(%x: memref<?xf16, strided<[?], offset: ?>>, %out: memref<?xf16, strided<[?], offset: ?>>) attributes {tile.kernel} {
  %r = "tile.arange"() {start = 0 : i32, end = 1024 : i32} : () -> tensor<1024xi32, #b>
  %t = arith.constant true
  %m = "tile.splat"(%t) : (i1) -> tensor<1024xi1, #b>
  %z = arith.constant 0.0 : f16
  %other = "tile.splat"(%z) : (f16) -> tensor<1024xf16, #b>
  %v = "tile.load"(%x, %r, %m, %other) : (memref<?xf16, strided<[?], offset: ?>>, tensor<1024xi32, #b>, tensor<1024xi1, #b>, tensor<1024xf16, #b>) -> tensor<1024xf16, #b>
  %c7 = arith.constant 7 : i32
  %s7 = "tile.splat"(%c7) : (i32) -> tensor<1024xi32, #b>
  %idx0 = arith.muli %r, %s7 : tensor<1024xi32, #b>
  %c1023 = arith.constant 1023 : i32
  %mk = "tile.splat"(%c1023) : (i32) -> tensor<1024xi32, #b>
  %idx = arith.andi %idx0, %mk : tensor<1024xi32, #b>
  %g = "tile.gather"(%v, %idx) {axis = 0 : i32} : (tensor<1024xf16, #b>, tensor<1024xi32, #b>) -> tensor<1024xf16, #b>
  "tile.store"(%out, %r, %g, %m) : (memref<?xf16, strided<[?], offset: ?>>, tensor<1024xi32, #b>, tensor<1024xf16, #b>, tensor<1024xi1, #b>) -> ()
  return
}

// -----

// A permutation within each thread's run (index r xor 1) picks registers the thread
// holds: no shared memory, no barrier, no load from it (`_held_gather`).

// CHECK-LABEL: gpu.func @gather_pairs_swapped(
// CHECK-SAME: tile.shared_bytes = 0
// CHECK-NOT: gpu.barrier
// CHECK-NOT: memref.load {{.*}}workgroup
// CHECK: gpu.return
#b = #tile.blocked<[8], [32], [4], [0]>
func.func @gather_pairs_swapped(%x: memref<?xf16, strided<[?], offset: ?>>, %out: memref<?xf16, strided<[?], offset: ?>>) attributes {tile.kernel} {
  %r = "tile.arange"() {start = 0 : i32, end = 1024 : i32} : () -> tensor<1024xi32, #b>
  %t = arith.constant true
  %m = "tile.splat"(%t) : (i1) -> tensor<1024xi1, #b>
  %z = arith.constant 0.0 : f16
  %other = "tile.splat"(%z) : (f16) -> tensor<1024xf16, #b>
  %v = "tile.load"(%x, %r, %m, %other) : (memref<?xf16, strided<[?], offset: ?>>, tensor<1024xi32, #b>, tensor<1024xi1, #b>, tensor<1024xf16, #b>) -> tensor<1024xf16, #b>
  %c1 = arith.constant 1 : i32
  %s1 = "tile.splat"(%c1) : (i32) -> tensor<1024xi32, #b>
  %idx = arith.xori %r, %s1 : tensor<1024xi32, #b>
  %g = "tile.gather"(%v, %idx) {axis = 0 : i32} : (tensor<1024xf16, #b>, tensor<1024xi32, #b>) -> tensor<1024xf16, #b>
  "tile.store"(%out, %r, %g, %m) : (memref<?xf16, strided<[?], offset: ?>>, tensor<1024xi32, #b>, tensor<1024xf16, #b>, tensor<1024xi1, #b>) -> ()
  return
}

// -----

// The neighbouring thread's run (index r xor 8) is the same shift in every thread:
// through shared memory, one address computed, the other 7 loads at constant offsets.

// CHECK-LABEL: gpu.func @gather_runs_swapped(
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK: arith.muli %{{.*}}, %c2_i32 : i32
// CHECK-NEXT: %[[AT:.*]] = arith.addi %{{.*}}, %{{.*}} : i32
// CHECK-COUNT-7: arith.addi %[[AT]], %c{{[0-9]+}}_i32 : i32
// CHECK-NOT: arith.shrui
// CHECK-COUNT-8: memref.load
// CHECK-NOT: memref.load
// CHECK: gpu.return
#b = #tile.blocked<[8], [32], [4], [0]>
func.func @gather_runs_swapped(%x: memref<?xf16, strided<[?], offset: ?>>, %out: memref<?xf16, strided<[?], offset: ?>>) attributes {tile.kernel} {
  %r = "tile.arange"() {start = 0 : i32, end = 1024 : i32} : () -> tensor<1024xi32, #b>
  %t = arith.constant true
  %m = "tile.splat"(%t) : (i1) -> tensor<1024xi1, #b>
  %z = arith.constant 0.0 : f16
  %other = "tile.splat"(%z) : (f16) -> tensor<1024xf16, #b>
  %v = "tile.load"(%x, %r, %m, %other) : (memref<?xf16, strided<[?], offset: ?>>, tensor<1024xi32, #b>, tensor<1024xi1, #b>, tensor<1024xf16, #b>) -> tensor<1024xf16, #b>
  %c8 = arith.constant 8 : i32
  %s8 = "tile.splat"(%c8) : (i32) -> tensor<1024xi32, #b>
  %idx = arith.xori %r, %s8 : tensor<1024xi32, #b>
  %g = "tile.gather"(%v, %idx) {axis = 0 : i32} : (tensor<1024xf16, #b>, tensor<1024xi32, #b>) -> tensor<1024xf16, #b>
  "tile.store"(%out, %r, %g, %m) : (memref<?xf16, strided<[?], offset: ?>>, tensor<1024xi32, #b>, tensor<1024xf16, #b>, tensor<1024xi1, #b>) -> ()
  return
}

// -----

// A ring copy too narrow in its readers' layout (a 1 x 128 bf16 row on 128 threads:
// one element, 2 bytes, a thread) is cut into 16-byte chunks of its own: thread t
// copies elements 8 (t mod 16) .. +7, one `cp.async` (16 threads would do; the rest
// copy a chunk again, the same bytes), its column mask evaluated at the chunk's start.
// Without the aligned base nothing is proven: one element a thread, through registers.

// CHECK-LABEL: gpu.func @chunked_row_copy
// ALIGNED: arith.remui %{{.*}}, %c16_i32 : i32
// ALIGNED: arith.muli %{{.*}}, %c8_i32 : i32
// ALIGNED: nvgpu.device_async_copy %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}], 8, %{{.*}} {bypassL1}
// ALIGNED-NOT: nvgpu.device_async_copy
// UNKNOWN-NOT: nvgpu.device_async_copy
// UNKNOWN: memref.store
// CHECK: gpu.return
!srow = memref<2x1x128xbf16, #gpu.address_space<workgroup>>
func.func @chunked_row_copy(%s: memref<?xbf16, strided<[?], offset: ?>>, %out: memref<?xbf16, strided<[?], offset: ?>>, %n: i32) attributes {tile.kernel} {
  %r = "tile.local_alloc"() : () -> !srow
  %c0 = arith.constant 0 : i32
  %cols = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %row = "tile.reshape"(%cols) : (tensor<128xi32>) -> tensor<1x128xi32>
  %ns = "tile.splat"(%n) : (i32) -> tensor<1x128xi32>
  %m = arith.cmpi slt, %row, %ns : tensor<1x128xi32>
  "tile.async_copy"(%r, %c0, %s, %row, %m) : (!srow, i32, memref<?xbf16, strided<[?], offset: ?>>, tensor<1x128xi32>, tensor<1x128xi1>) -> ()
  "tile.async_commit"() : () -> ()
  "tile.async_wait"() {pending = 0 : i32} : () -> ()
  %v = "tile.local_load"(%r, %c0) : (!srow, i32) -> tensor<1x128xbf16>
  %flat = "tile.reshape"(%v) : (tensor<1x128xbf16>) -> tensor<128xbf16>
  %all = arith.constant true
  %ms = "tile.splat"(%all) : (i1) -> tensor<128xi1>
  "tile.store"(%out, %cols, %flat, %ms) : (memref<?xbf16, strided<[?], offset: ?>>, tensor<128xi32>, tensor<128xbf16>, tensor<128xi1>) -> ()
  "tile.local_dealloc"(%r) : (!srow) -> ()
  return
}
