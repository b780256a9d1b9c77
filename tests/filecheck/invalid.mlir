// RUN: tile-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(tile-verify)' | FileCheck %s

// Each op's semantic verifier (dialects/tile_ops.py, dialects/pipeline_ops.py), run by `tile-verify`.

func.func @program_id_axis() -> i32 {
  // expected-error @below {{'tile.program_id' op axis must be 0, 1 or 2}}
  %p = "tile.program_id"() {axis = 3 : i32} : () -> i32
  return %p : i32
}

// -----

func.func @num_programs_axis() -> i32 {
  %n = "tile.num_programs"() {axis = -1 : i32} : () -> i32 // expected-error {{'tile.num_programs' op axis must be 0, 1 or 2}}
  return %n : i32
}

// -----

func.func @program_id_result_type() -> i64 {
  // IRDL checks the structure of an op while parsing.
  // expected-error @+1 {{expected 'i32' but got 'i64'}}
  %p = "tile.program_id"() {axis = 0 : i32} : () -> i64
  return %p : i64
}

// -----

func.func @arange_not_power_of_two() -> tensor<48xi32> {
  // expected-error @below {{arange length 48 (end - start) must be a positive power of two}}
  %r = "tile.arange"() {start = 0 : i32, end = 48 : i32} : () -> tensor<48xi32>
  return %r : tensor<48xi32>
}

// -----

func.func @arange_empty() -> tensor<1xi32> {
  // expected-error @below {{arange length 0 (end - start) must be a positive power of two}}
  %r = "tile.arange"() {start = 8 : i32, end = 8 : i32} : () -> tensor<1xi32>
  return %r : tensor<1xi32>
}

// -----

func.func @arange_result_shape() -> tensor<32xi32> {
  // expected-error @below {{'tile.arange' op result must be tensor<64xi32>}}
  %r = "tile.arange"() {start = 64 : i32, end = 128 : i32} : () -> tensor<32xi32>
  return %r : tensor<32xi32>
}

// -----

func.func @splat_of_tensor(%t: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'tile.splat' op operand must be a scalar}}
  %s = "tile.splat"(%t) : (tensor<4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @splat_element_type(%x: f16) -> tensor<4xf32> {
  // expected-error @below {{result element type must match the scalar's type}}
  %s = "tile.splat"(%x) : (f16) -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @broadcast_non_unit_dim(%t: tensor<2x64xf32>) -> tensor<32x64xf32> {
  // expected-error @below {{cannot broadcast [2, 64] to [32, 64]: dims must be equal or 1 in the source}}
  %b = "tile.broadcast"(%t) : (tensor<2x64xf32>) -> tensor<32x64xf32>
  return %b : tensor<32x64xf32>
}

// -----

func.func @broadcast_rank(%t: tensor<64xf32>) -> tensor<32x64xf32> {
  // expected-error @below {{cannot broadcast [64] to [32, 64]}}
  %b = "tile.broadcast"(%t) : (tensor<64xf32>) -> tensor<32x64xf32>
  return %b : tensor<32x64xf32>
}

// -----

func.func @broadcast_element_type(%t: tensor<1x64xf16>) -> tensor<32x64xf32> {
  // expected-error @below {{'tile.broadcast' op element types differ}}
  %b = "tile.broadcast"(%t) : (tensor<1x64xf16>) -> tensor<32x64xf32>
  return %b : tensor<32x64xf32>
}

// -----

func.func @reshape_count(%t: tensor<4x16xf32>) -> tensor<128xf32> {
  // expected-error @below {{reshape from [4, 16] to [128] changes the number of elements}}
  %r = "tile.reshape"(%t) : (tensor<4x16xf32>) -> tensor<128xf32>
  return %r : tensor<128xf32>
}

// -----

func.func @reduce_axis_out_of_range(%t: tensor<4x64xf32>) -> tensor<4xf32> {
  // expected-error @below {{axis 2 is out of range for a rank-2 tile}}
  %r = "tile.reduce"(%t) {axis = 2 : i32, kind = "sum"} : (tensor<4x64xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @reduce_bad_kind(%t: tensor<64xf32>) -> f32 {
  // expected-error @below {{kind must be one of sum, max, min}}
  %r = "tile.reduce"(%t) {axis = 0 : i32, kind = "prod"} : (tensor<64xf32>) -> f32
  return %r : f32
}

// -----

func.func @reduce_result_shape(%t: tensor<4x64xf32>) -> tensor<64xf32> {
  // expected-error @below {{result must have shape [4] and the operand's element type}}
  %r = "tile.reduce"(%t) {axis = 1 : i32, kind = "max"} : (tensor<4x64xf32>) -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// -----

func.func @load_mask_shape(%x: memref<?xf32>, %offs: tensor<128xi32>, %mask: tensor<64xi1>, %other: tensor<128xf32>) -> tensor<128xf32> {
  // expected-error @below {{'tile.load' op offsets, mask and value must have the same shape}}
  %v = "tile.load"(%x, %offs, %mask, %other) : (memref<?xf32>, tensor<128xi32>, tensor<64xi1>, tensor<128xf32>) -> tensor<128xf32>
  return %v : tensor<128xf32>
}

// -----

func.func @load_float_offsets(%x: memref<?xf32>, %offs: tensor<128xf32>, %mask: tensor<128xi1>, %other: tensor<128xf32>) -> tensor<128xf32> {
  // expected-error @below {{offsets must be integers}}
  %v = "tile.load"(%x, %offs, %mask, %other) : (memref<?xf32>, tensor<128xf32>, tensor<128xi1>, tensor<128xf32>) -> tensor<128xf32>
  return %v : tensor<128xf32>
}

// -----

func.func @load_mask_not_i1(%x: memref<?xf32>, %offs: tensor<128xi32>, %mask: tensor<128xi8>, %other: tensor<128xf32>) -> tensor<128xf32> {
  // expected-error @below {{mask must be i1}}
  %v = "tile.load"(%x, %offs, %mask, %other) : (memref<?xf32>, tensor<128xi32>, tensor<128xi8>, tensor<128xf32>) -> tensor<128xf32>
  return %v : tensor<128xf32>
}

// -----

func.func @load_element_type(%x: memref<?xf16>, %offs: tensor<128xi32>, %mask: tensor<128xi1>, %other: tensor<128xf32>) -> tensor<128xf32> {
  // expected-error @below {{element type f32 does not match the tensor's f16}}
  %v = "tile.load"(%x, %offs, %mask, %other) : (memref<?xf16>, tensor<128xi32>, tensor<128xi1>, tensor<128xf32>) -> tensor<128xf32>
  return %v : tensor<128xf32>
}

// -----

func.func @store_value_shape(%y: memref<?xf32>, %offs: tensor<128xi32>, %v: tensor<64xf32>, %mask: tensor<128xi1>) {
  // expected-error @below {{'tile.store' op offsets, mask and value must have the same shape}}
  "tile.store"(%y, %offs, %v, %mask) : (memref<?xf32>, tensor<128xi32>, tensor<64xf32>, tensor<128xi1>) -> ()
  return
}

// -----

func.func @load_tile_rank(%a: memref<?x?xf32>, %i: i32) -> tensor<32x64xf32> {
  // expected-error @below {{a rank-2 tensor needs 2 tile indices and a rank-2 tile}}
  %t = "tile.load_tile"(%a, %i) {padding = 0.0 : f32} : (memref<?x?xf32>, i32) -> tensor<32x64xf32>
  return %t : tensor<32x64xf32>
}

// -----

func.func @store_tile_element_type(%a: memref<?x?xf32>, %t: tensor<32x64xf16>, %i: i32, %j: i32) {
  // expected-error @below {{'tile.store_tile' op element type f16 does not match the tensor's f32}}
  "tile.store_tile"(%a, %t, %i, %j) : (memref<?x?xf32>, tensor<32x64xf16>, i32, i32) -> ()
  return
}

// -----

func.func @dot_inner_dims(%a: tensor<64x32xf16>, %b: tensor<16x64xf16>, %acc: tensor<64x64xf32>) -> tensor<64x64xf32> {
  // expected-error @below {{dot needs (M, K) x (K, N) + (M, N) tiles, got [64, 32] x [16, 64] + [64, 64]}}
  %c = "tile.dot"(%a, %b, %acc) : (tensor<64x32xf16>, tensor<16x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}

// -----

func.func @dot_accumulator_shape(%a: tensor<64x32xf16>, %b: tensor<32x64xf16>, %acc: tensor<32x64xf32>) -> tensor<32x64xf32> {
  // expected-error @below {{got [64, 32] x [32, 64] + [32, 64]}}
  %c = "tile.dot"(%a, %b, %acc) : (tensor<64x32xf16>, tensor<32x64xf16>, tensor<32x64xf32>) -> tensor<32x64xf32>
  return %c : tensor<32x64xf32>
}

// -----

func.func @dot_element_types(%a: tensor<64x32xf16>, %b: tensor<32x64xbf16>, %acc: tensor<64x64xf32>) -> tensor<64x64xf32> {
  // expected-error @below {{dot operands must have the same element type}}
  %c = "tile.dot"(%a, %b, %acc) : (tensor<64x32xf16>, tensor<32x64xbf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}

// -----

func.func @dot_tf32_of_bf16(%a: tensor<64x32xbf16>, %b: tensor<32x64xbf16>, %acc: tensor<64x64xf32>) -> tensor<64x64xf32> {
  // expected-error @below {{dot input_precision "tf32" needs f32 operands and is "tf32"}}
  %c = "tile.dot"(%a, %b, %acc) {input_precision = "tf32"} : (tensor<64x32xbf16>, tensor<32x64xbf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}

// -----

func.func @dot_unknown_precision(%a: tensor<64x32xf32>, %b: tensor<32x64xf32>, %acc: tensor<64x64xf32>) -> tensor<64x64xf32> {
  // expected-error @below {{dot input_precision "tf32x3" needs f32 operands and is "tf32"}}
  %c = "tile.dot"(%a, %b, %acc) {input_precision = "tf32x3"} : (tensor<64x32xf32>, tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}

// -----

func.func @convert_layout_shape(%t: tensor<64xf32, #tile.blocked<[4], [32], [4], [0]>>) -> tensor<128xf32, #tile.blocked<[1], [32], [4], [0]>> {
  // expected-error @below {{convert_layout changes only the encoding}}
  %c = "tile.convert_layout"(%t) : (tensor<64xf32, #tile.blocked<[4], [32], [4], [0]>>) -> tensor<128xf32, #tile.blocked<[1], [32], [4], [0]>>
  return %c : tensor<128xf32, #tile.blocked<[1], [32], [4], [0]>>
}

// -----

func.func @dot_wait_type(%acc: tensor<128x128xf32, #tile.wgmma<[2, 1]>>) -> tensor<128x128xf32> {
  // expected-error @below {{dot_wait returns its accumulator's type}}
  %r = "tile.dot_wait"(%acc) {pending = 0 : i32} : (tensor<128x128xf32, #tile.wgmma<[2, 1]>>) -> tensor<128x128xf32>
  return %r : tensor<128x128xf32>
}

// -----

func.func @dot_wait_pending(%acc: tensor<64x64xf32>) -> tensor<64x64xf32> {
  // expected-error @below {{pending must be >= 0}}
  %r = "tile.dot_wait"(%acc) {pending = -1 : i32} : (tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

// -----

func.func @tma_load_box(%desc: !llvm.ptr, %i: i32, %live: i1) {
  %r = "tile.local_alloc"() : () -> memref<2x32x128xbf16, #gpu.address_space<workgroup>>
  %b = "tile.mbarrier_alloc"() {arrivals = 1 : i32} : () -> memref<2xi64, #gpu.address_space<workgroup>>
  // expected-error @below {{box [32, 48] does not tile the ring's [32, 128] slots}}
  "tile.tma_load"(%r, %i, %b, %desc, %i, %i, %live) {box = [32 : i32, 48 : i32], swizzle = 128 : i32} : (memref<2x32x128xbf16, #gpu.address_space<workgroup>>, i32, memref<2xi64, #gpu.address_space<workgroup>>, !llvm.ptr, i32, i32, i1) -> ()
  return
}

// -----

func.func @tma_store_box(%desc: !llvm.ptr, %i: i32, %v: tensor<128x128xbf16>) {
  // expected-error @below {{box [128, 48] does not tile the [128, 128] tile}}
  "tile.tma_store"(%desc, %i, %i, %v, %i) {box = [128 : i32, 48 : i32], swizzle = 128 : i32} : (!llvm.ptr, i32, i32, tensor<128x128xbf16>, i32) -> ()
  return
}

// -----

func.func @local_load_transposed(%i: i32) -> tensor<64x128xbf16> {
  %r = "tile.local_alloc"() : () -> memref<2x64x128xbf16, #gpu.address_space<workgroup>>
  // expected-error @below {{a transposed tile [64, 128] x bf16 does not match the ring's slots [64, 128]}}
  %t = "tile.local_load"(%r, %i) {transposed} : (memref<2x64x128xbf16, #gpu.address_space<workgroup>>, i32) -> tensor<64x128xbf16>
  return %t : tensor<64x128xbf16>
}

// -----

func.func @mbarrier_alloc_arrivals() {
  // expected-error @below {{arrivals must be >= 1}}
  %b = "tile.mbarrier_alloc"() {arrivals = 0 : i32} : () -> memref<2xi64, #gpu.address_space<workgroup>>
  return
}

// -----

// Every bad op of a function is reported, not only the first.
func.func @two_errors() -> (tensor<3xi32>, tensor<5xi32>) {
  // expected-error @below {{arange length 3}}
  %a = "tile.arange"() {start = 0 : i32, end = 3 : i32} : () -> tensor<3xi32>
  // expected-error @below {{arange length 5}}
  %b = "tile.arange"() {start = 0 : i32, end = 5 : i32} : () -> tensor<5xi32>
  return %a, %b : tensor<3xi32>, tensor<5xi32>
}

// -----

// Chunks without errors are still printed (and nothing else is).

// CHECK-NOT: func.func
// CHECK-LABEL: func.func @valid
// CHECK-NEXT: %[[R:.*]] = "tile.arange"() {end = 64 : i32, start = 0 : i32} : () -> tensor<64xi32>
// CHECK-NEXT: return %[[R]]
// CHECK-NOT: func.func
func.func @valid() -> tensor<64xi32> {
  %r = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
  return %r : tensor<64xi32>
}

// -----

func.func @gather_shapes(%src: tensor<4x8xf32>, %idx: tensor<2x8xi32>) -> tensor<2x8xf32> {
  // expected-error @below {{gather's index [2, 8] must match the source [4, 8] in every dim but the axis (1)}}
  %g = "tile.gather"(%src, %idx) {axis = 1 : i32} : (tensor<4x8xf32>, tensor<2x8xi32>) -> tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}

// -----

func.func @atomic_kind(%y: memref<?xf32>, %offs: tensor<64xi32>, %v: tensor<64xf32>, %mask: tensor<64xi1>) {
  // expected-error @below {{'tile.atomic_rmw' op kind must be one of add, max, min, and, or, xor, xchg, load, store, got nand}}
  %o = "tile.atomic_rmw"(%y, %offs, %v, %mask) {kind = "nand", sem = "acq_rel", scope = "gpu"} : (memref<?xf32>, tensor<64xi32>, tensor<64xf32>, tensor<64xi1>) -> tensor<64xf32>
  return
}

// -----

func.func @atomic_xor_float(%y: memref<?xf32>, %offs: tensor<64xi32>, %v: tensor<64xf32>, %mask: tensor<64xi1>) {
  // expected-error @below {{'tile.atomic_rmw' op atomic xor takes i32 or i64 values, got f32}}
  %o = "tile.atomic_rmw"(%y, %offs, %v, %mask) {kind = "xor", sem = "acq_rel", scope = "gpu"} : (memref<?xf32>, tensor<64xi32>, tensor<64xf32>, tensor<64xi1>) -> tensor<64xf32>
  return
}

// -----

func.func @atomic_sem(%y: memref<?xi32>, %offs: tensor<64xi32>, %v: tensor<64xi32>, %mask: tensor<64xi1>) {
  // expected-error @below {{'tile.atomic_rmw' op sem must be one of acq_rel, acquire, release, relaxed, got seq_cst}}
  %o = "tile.atomic_rmw"(%y, %offs, %v, %mask) {kind = "add", sem = "seq_cst", scope = "gpu"} : (memref<?xi32>, tensor<64xi32>, tensor<64xi32>, tensor<64xi1>) -> tensor<64xi32>
  return
}

// -----

func.func @atomic_cas_types(%y: memref<?xi32>, %offs: tensor<64xi32>, %c: tensor<64xi64>, %v: tensor<64xi32>, %mask: tensor<64xi1>) {
  // expected-error @below {{'tile.atomic_cas' op cmp, value and the result must have one type}}
  %o = "tile.atomic_cas"(%y, %offs, %c, %v, %mask) {sem = "acq_rel", scope = "gpu"} : (memref<?xi32>, tensor<64xi32>, tensor<64xi64>, tensor<64xi32>, tensor<64xi1>) -> tensor<64xi32>
  return
}

// -----

func.func @trans_not_a_permutation(%t: tensor<4x16xf32>) -> tensor<16x4xf32> {
  // expected-error @below {{permutation [1, 1] is not a permutation of the 2 dims}}
  %r = "tile.trans"(%t) {permutation = array<i32: 1, 1>} : (tensor<4x16xf32>) -> tensor<16x4xf32>
  return %r : tensor<16x4xf32>
}

// -----

func.func @trans_result_shape(%t: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @below {{result must have shape [16, 4] and the operand's element type}}
  %r = "tile.trans"(%t) {permutation = array<i32: 1, 0>} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

func.func @print_index(%i: index) {
  // expected-error @below {{cannot print a value of type index}}
  "tile.print"(%i) {prefix = "i: "} : (index) -> ()
  return
}

// -----

func.func @inline_asm_shapes(%a: tensor<64xi32>, %b: tensor<32xf32>) {
  // expected-error @below {{the operands and results must have one shape}}
  %o = "tile.inline_asm"(%a, %b) {asm = "mov.b32 $0, $1;", constraints = "=r,r,r", pure = 1 : i32, pack = 1 : i32, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<64xi32>, tensor<32xf32>) -> tensor<64xi32>
  return
}
