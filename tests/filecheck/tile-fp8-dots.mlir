// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-fp8-dots{wgmma=1 num-warps=8})' | FileCheck %s
// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-fp8-dots{num-warps=8})' | FileCheck %s --check-prefix=WIDE
// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-fp8-dots{mma=1 num-warps=8})' | FileCheck %s --check-prefix=MMA

// A float8 dot that wgmma takes keeps its operands; its fp8_b says how B gets K-major:
// a load of a column-major block (b[k, n] at k + n * s) is copied transposed.

!buf = memref<?x?xf8E5M2, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func.func @column_major_b
// CHECK-NOT: arith.extf
// CHECK: "tile.dot"(%{{.*}}, %{{.*}}, %{{.*}}) {fp8_b = "transposed_copy"} : (tensor<128x64xf8E4M3FN>, tensor<64x128xf8E5M2>, tensor<128x128xf32>)
// WIDE-LABEL: func.func @column_major_b
// WIDE: %[[A:.*]] = arith.extf %{{.*}} : tensor<128x64xf8E4M3FN> to tensor<128x64xf16>
// WIDE: %[[B:.*]] = arith.extf %{{.*}} : tensor<64x128xf8E5M2> to tensor<64x128xf16>
// WIDE: "tile.dot"(%[[A]], %[[B]], %{{.*}}) : (tensor<128x64xf16>, tensor<64x128xf16>, tensor<128x128xf32>)
func.func @column_major_b(%b: !buf, %a: tensor<128x64xf8E4M3FN>, %acc: tensor<128x128xf32>, %s: i32, %k: i32, %n: i32) -> tensor<128x128xf32> {
  %rk = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
  %rn = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %rows = "tile.reshape"(%rk) : (tensor<64xi32>) -> tensor<64x1xi32>
  %cols = "tile.reshape"(%rn) : (tensor<128xi32>) -> tensor<1x128xi32>
  %ss = "tile.splat"(%s) : (i32) -> tensor<1x128xi32>
  %scaled = arith.muli %cols, %ss : tensor<1x128xi32>
  %rb = "tile.broadcast"(%rows) : (tensor<64x1xi32>) -> tensor<64x128xi32>
  %cb = "tile.broadcast"(%scaled) : (tensor<1x128xi32>) -> tensor<64x128xi32>
  %offs = arith.addi %rb, %cb : tensor<64x128xi32>
  %ks = "tile.splat"(%k) : (i32) -> tensor<64x1xi32>
  %in_k = arith.cmpi slt, %rows, %ks : tensor<64x1xi32>
  %ns = "tile.splat"(%n) : (i32) -> tensor<1x128xi32>
  %in_n = arith.cmpi slt, %cols, %ns : tensor<1x128xi32>
  %mk = "tile.broadcast"(%in_k) : (tensor<64x1xi1>) -> tensor<64x128xi1>
  %mn = "tile.broadcast"(%in_n) : (tensor<1x128xi1>) -> tensor<64x128xi1>
  %mask = arith.andi %mk, %mn : tensor<64x128xi1>
  %zero = arith.constant 0.0 : f8E5M2
  %other = "tile.splat"(%zero) : (f8E5M2) -> tensor<64x128xf8E5M2>
  %y = "tile.load"(%b, %offs, %mask, %other) : (!buf, tensor<64x128xi32>, tensor<64x128xi1>, tensor<64x128xf8E5M2>) -> tensor<64x128xf8E5M2>
  %c = "tile.dot"(%a, %y, %acc) : (tensor<128x64xf8E4M3FN>, tensor<64x128xf8E5M2>, tensor<128x128xf32>) -> tensor<128x128xf32>
  return %c : tensor<128x128xf32>
}

// -----

// A B held in registers (N-major in memory, or made by other ops) is stored into shared
// memory transposed by the dot.

// CHECK-LABEL: func.func @b_in_registers
// CHECK: "tile.dot"(%{{.*}}, %{{.*}}, %{{.*}}) {fp8_b = "transposed_in_shared"}
func.func @b_in_registers(%a: tensor<128x64xf8E4M3FN>, %b: tensor<64x128xf8E4M3FN>, %acc: tensor<128x128xf32>) -> tensor<128x128xf32> {
  %c = "tile.dot"(%a, %b, %acc) : (tensor<128x64xf8E4M3FN>, tensor<64x128xf8E4M3FN>, tensor<128x128xf32>) -> tensor<128x128xf32>
  return %c : tensor<128x128xf32>
}

// -----

// wgmma cannot take 16 rows (whole 64-row instructions) nor K = 48 (not whole swizzled
// rows): widened to f16 on sm_90a too. A 16-bit dot is left alone.

// CHECK-LABEL: func.func @not_for_wgmma
// CHECK: arith.extf %{{.*}} : tensor<16x64xf8E4M3FN> to tensor<16x64xf16>
// CHECK: arith.extf %{{.*}} : tensor<64x128xf8E4M3FN> to tensor<64x128xf16>
// CHECK: arith.extf %{{.*}} : tensor<128x48xf8E4M3FN> to tensor<128x48xf16>
// CHECK: "tile.dot"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<128x48xf16>, tensor<48x128xf16>, tensor<128x128xf32>)
// CHECK-NOT: arith.extf
// CHECK: "tile.dot"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<128x64xbf16>,
func.func @not_for_wgmma(%a: tensor<16x64xf8E4M3FN>, %b: tensor<64x128xf8E4M3FN>, %acc: tensor<16x128xf32>,
                         %x: tensor<128x48xf8E4M3FN>, %y: tensor<48x128xf8E4M3FN>, %acc2: tensor<128x128xf32>,
                         %p: tensor<128x64xbf16>, %q: tensor<64x128xbf16>) -> (tensor<16x128xf32>, tensor<128x128xf32>, tensor<128x128xf32>) {
  %c = "tile.dot"(%a, %b, %acc) : (tensor<16x64xf8E4M3FN>, tensor<64x128xf8E4M3FN>, tensor<16x128xf32>) -> tensor<16x128xf32>
  %d = "tile.dot"(%x, %y, %acc2) : (tensor<128x48xf8E4M3FN>, tensor<48x128xf8E4M3FN>, tensor<128x128xf32>) -> tensor<128x128xf32>
  %e = "tile.dot"(%p, %q, %acc2) : (tensor<128x64xbf16>, tensor<64x128xbf16>, tensor<128x128xf32>) -> tensor<128x128xf32>
  return %c, %d, %e : tensor<16x128xf32>, tensor<128x128xf32>, tensor<128x128xf32>
}

// -----

// A B whose offsets step by one along K but that is no block a copy lands transposed
// (its columns wrapped, `% n`, as tutorial 03 writes them) is loaded as its N x K
// transpose, K contiguous, and transposed back for the dot.

!buf = memref<?x?xf8E4M3FN, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func.func @k_major_b_wrapped
// CHECK: %[[BT:.*]] = "tile.load"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : ({{.*}}, tensor<128x64xi32>, tensor<128x64xi1>, tensor<128x64xf8E4M3FN>) -> tensor<128x64xf8E4M3FN>
// CHECK: %[[B:.*]] = "tile.trans"(%[[BT]]) {permutation = array<i32: 1, 0>} : (tensor<128x64xf8E4M3FN>) -> tensor<64x128xf8E4M3FN>
// CHECK: "tile.dot"(%{{.*}}, %[[B]], %{{.*}}) {fp8_b = "transposed_load"}
// CHECK-NOT: tensor<64x128xi32>
// WIDE-LABEL: func.func @k_major_b_wrapped
// WIDE-NOT: tile.trans
// WIDE: "tile.load"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : ({{.*}}, tensor<64x128xi32>, tensor<64x128xi1>, tensor<64x128xf8E4M3FN>) -> tensor<64x128xf8E4M3FN>
func.func @k_major_b_wrapped(%b: !buf, %a: tensor<128x64xf8E4M3FN>, %acc: tensor<128x128xf32>, %s: i32, %k: i32, %kmax: i32, %n: i32) -> tensor<128x128xf32> {
  %rk = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
  %rn0 = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %ns = "tile.splat"(%n) : (i32) -> tensor<128xi32>
  %rn = arith.remsi %rn0, %ns : tensor<128xi32>
  %rows = "tile.reshape"(%rk) : (tensor<64xi32>) -> tensor<64x1xi32>
  %cols = "tile.reshape"(%rn) : (tensor<128xi32>) -> tensor<1x128xi32>
  %ss = "tile.splat"(%s) : (i32) -> tensor<1x128xi32>
  %scaled = arith.muli %cols, %ss : tensor<1x128xi32>
  %rb = "tile.broadcast"(%rows) : (tensor<64x1xi32>) -> tensor<64x128xi32>
  %cb = "tile.broadcast"(%scaled) : (tensor<1x128xi32>) -> tensor<64x128xi32>
  %offs0 = arith.addi %rb, %cb : tensor<64x128xi32>
  %ks = "tile.splat"(%k) : (i32) -> tensor<64x128xi32>
  %offs = arith.addi %offs0, %ks : tensor<64x128xi32>
  %km = "tile.splat"(%kmax) : (i32) -> tensor<64x1xi32>
  %in_k = arith.cmpi slt, %rows, %km : tensor<64x1xi32>
  %mask = "tile.broadcast"(%in_k) : (tensor<64x1xi1>) -> tensor<64x128xi1>
  %zero = arith.constant 0.0 : f8E4M3FN
  %other = "tile.splat"(%zero) : (f8E4M3FN) -> tensor<64x128xf8E4M3FN>
  %y = "tile.load"(%b, %offs, %mask, %other) : (!buf, tensor<64x128xi32>, tensor<64x128xi1>, tensor<64x128xf8E4M3FN>) -> tensor<64x128xf8E4M3FN>
  %c = "tile.dot"(%a, %y, %acc) : (tensor<128x64xf8E4M3FN>, tensor<64x128xf8E4M3FN>, tensor<128x128xf32>) -> tensor<128x128xf32>
  return %c : tensor<128x128xf32>
}

// -----

// Advanced by pointer increments instead (+ splat(k)), it is a column-major block as the
// index form's is: copied transposed, the advance added to each copy's offsets.

!buf = memref<?x?xf8E4M3FN, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func.func @k_major_b_by_increments
// CHECK-NOT: tile.trans
// CHECK: "tile.dot"(%{{.*}}, %{{.*}}, %{{.*}}) {fp8_b = "transposed_copy"}
func.func @k_major_b_by_increments(%b: !buf, %a: tensor<128x64xf8E4M3FN>, %acc: tensor<128x128xf32>, %s: i32, %k: i32, %kmax: i32) -> tensor<128x128xf32> {
  %rk = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
  %rn = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %rows = "tile.reshape"(%rk) : (tensor<64xi32>) -> tensor<64x1xi32>
  %cols = "tile.reshape"(%rn) : (tensor<128xi32>) -> tensor<1x128xi32>
  %ss = "tile.splat"(%s) : (i32) -> tensor<1x128xi32>
  %scaled = arith.muli %cols, %ss : tensor<1x128xi32>
  %rb = "tile.broadcast"(%rows) : (tensor<64x1xi32>) -> tensor<64x128xi32>
  %cb = "tile.broadcast"(%scaled) : (tensor<1x128xi32>) -> tensor<64x128xi32>
  %offs0 = arith.addi %rb, %cb : tensor<64x128xi32>
  %ks = "tile.splat"(%k) : (i32) -> tensor<64x128xi32>
  %offs = arith.addi %offs0, %ks : tensor<64x128xi32>
  %km = "tile.splat"(%kmax) : (i32) -> tensor<64x1xi32>
  %in_k = arith.cmpi slt, %rows, %km : tensor<64x1xi32>
  %mask = "tile.broadcast"(%in_k) : (tensor<64x1xi1>) -> tensor<64x128xi1>
  %zero = arith.constant 0.0 : f8E4M3FN
  %other = "tile.splat"(%zero) : (f8E4M3FN) -> tensor<64x128xf8E4M3FN>
  %y = "tile.load"(%b, %offs, %mask, %other) : (!buf, tensor<64x128xi32>, tensor<64x128xi1>, tensor<64x128xf8E4M3FN>) -> tensor<64x128xf8E4M3FN>
  %c = "tile.dot"(%a, %y, %acc) : (tensor<128x64xf8E4M3FN>, tensor<64x128xf8E4M3FN>, tensor<128x128xf32>) -> tensor<128x128xf32>
  return %c : tensor<128x128xf32>
}

// -----

// An int8 dot is never widened: wgmma keeps it (B made K-major as a float8 B is), and so does
// mma.sync (`mma=1`: the distributed codegen, for dots wgmma cannot take, M = 16); without
// either it stays as it is (summed in int32 by a matmul).
// CHECK-LABEL: func.func @int8_dots
// CHECK: "tile.dot"(%arg0, %arg1, %arg2) {fp8_b = "transposed_in_shared"} : (tensor<128x64xi8>, tensor<64x128xi8>, tensor<128x128xi32>)
// CHECK: "tile.dot"(%arg3, %arg1, %arg4) : (tensor<16x64xi8>, tensor<64x128xi8>, tensor<16x128xi32>)
// MMA-LABEL: func.func @int8_dots
// MMA-COUNT-2: {fp8_b = "transposed_in_shared"}
// WIDE-LABEL: func.func @int8_dots
// WIDE-NOT: arith.
// WIDE-NOT: fp8_b
// WIDE: return
func.func @int8_dots(%a: tensor<128x64xi8>, %b: tensor<64x128xi8>, %acc: tensor<128x128xi32>, %a16: tensor<16x64xi8>,
                     %acc16: tensor<16x128xi32>) -> (tensor<128x128xi32>, tensor<16x128xi32>) {
  %c = "tile.dot"(%a, %b, %acc) : (tensor<128x64xi8>, tensor<64x128xi8>, tensor<128x128xi32>) -> tensor<128x128xi32>
  %d = "tile.dot"(%a16, %b, %acc16) : (tensor<16x64xi8>, tensor<64x128xi8>, tensor<16x128xi32>) -> tensor<16x128xi32>
  return %c, %d : tensor<128x128xi32>, tensor<16x128xi32>
}
