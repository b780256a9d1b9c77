// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-verify, tile-assign-layouts)' | FileCheck %s --check-prefixes=CHECK,W4
// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-verify, tile-assign-layouts{num-warps=8})' | FileCheck %s --check-prefixes=CHECK,W8,MMA8
// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(tile-verify, tile-assign-layouts{num-warps=8 wgmma=1})' | FileCheck %s --check-prefixes=CHECK,W8,WG

// The default blocked layout: 16 bytes per thread along the fastest dim, then
// the 32 lanes, then the warps. tensor<1024xf32>, 4 warps: 4 x 32 x 4 = 512
// elements per pass; with 8 warps, 4 x 32 x 8 = 1024.

!buf = memref<?xf32, strided<[?], offset: ?>>

// CHECK-LABEL: func.func @vector_add
// CHECK-SAME: (%[[X:[^:]*]]: memref<?xf32, strided<[?], offset: ?>>, %[[Y:[^:]*]]: memref<?xf32, strided<[?], offset: ?>>, %[[OUT:[^:]*]]: memref
// W4: %[[R:.*]] = "tile.arange"() {end = 1024 : i32, start = 0 : i32} : () -> tensor<1024xi32, #tile.blocked<[4], [32], [4], [0]>>
// W8: %[[R:.*]] = "tile.arange"() {end = 1024 : i32, start = 0 : i32} : () -> tensor<1024xi32, #tile.blocked<[4], [32], [8], [0]>>
// W4: %[[OTHER:.*]] = "tile.splat"(%{{.*}}) : (f32) -> tensor<1024xf32, #tile.blocked<[4], [32], [4], [0]>>
// W8: %[[OTHER:.*]] = "tile.splat"(%{{.*}}) : (f32) -> tensor<1024xf32, #tile.blocked<[4], [32], [8], [0]>>
// W4: %[[A:.*]] = "tile.load"(%[[X]], %[[R]], %{{.*}}, %[[OTHER]]) : (memref<?xf32, strided<[?], offset: ?>>, tensor<1024xi32, #tile.blocked<[4], [32], [4], [0]>>, tensor<1024xi1, #tile.blocked<[4], [32], [4], [0]>>, tensor<1024xf32, #tile.blocked<[4], [32], [4], [0]>>) -> tensor<1024xf32, #tile.blocked<[4], [32], [4], [0]>>
// W8: %[[A:.*]] = "tile.load"(%[[X]], %[[R]], %{{.*}}, %[[OTHER]]) : (memref<?xf32, strided<[?], offset: ?>>, tensor<1024xi32, #tile.blocked<[4], [32], [8], [0]>>, tensor<1024xi1, #tile.blocked<[4], [32], [8], [0]>>, tensor<1024xf32, #tile.blocked<[4], [32], [8], [0]>>) -> tensor<1024xf32, #tile.blocked<[4], [32], [8], [0]>>
// CHECK: %[[B:.*]] = "tile.load"(%[[Y]], %[[R]],
// W4: %[[S:.*]] = arith.addf %[[A]], %[[B]] : tensor<1024xf32, #tile.blocked<[4], [32], [4], [0]>>
// W8: %[[S:.*]] = arith.addf %[[A]], %[[B]] : tensor<1024xf32, #tile.blocked<[4], [32], [8], [0]>>
// CHECK: "tile.store"(%[[OUT]], %[[R]], %[[S]], %{{.*}})
func.func @vector_add(%x: !buf, %y: !buf, %out: !buf, %n: i32) {
  %zero = arith.constant 0.0 : f32
  %r = "tile.arange"() {start = 0 : i32, end = 1024 : i32} : () -> tensor<1024xi32>
  %lim = "tile.splat"(%n) : (i32) -> tensor<1024xi32>
  %m = arith.cmpi slt, %r, %lim : tensor<1024xi32>
  %other = "tile.splat"(%zero) : (f32) -> tensor<1024xf32>
  %a = "tile.load"(%x, %r, %m, %other) : (!buf, tensor<1024xi32>, tensor<1024xi1>, tensor<1024xf32>) -> tensor<1024xf32>
  %b = "tile.load"(%y, %r, %m, %other) : (!buf, tensor<1024xi32>, tensor<1024xi1>, tensor<1024xf32>) -> tensor<1024xf32>
  %s = arith.addf %a, %b : tensor<1024xf32>
  "tile.store"(%out, %r, %s, %m) : (!buf, tensor<1024xi32>, tensor<1024xf32>, tensor<1024xi1>) -> ()
  return
}

// -----

// 2-D: the f16 load fixes the layout of every 32x64 tile: 8 per thread along
// dim 1 (lanes 4 x 8), warps along dim 0; the f32 extension shares it, so no
// conversion is needed.

// CHECK-LABEL: func.func @rows
// W4: %[[T:.*]] = "tile.load_tile"({{.*}}) -> tensor<32x64xf16, #tile.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>
// W8: %[[T:.*]] = "tile.load_tile"({{.*}}) -> tensor<32x64xf16, #tile.blocked<[1, 8], [4, 8], [8, 1], [1, 0]>>
// W4-NEXT: %[[W:.*]] = arith.extf %[[T]] : tensor<32x64xf16, #tile.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>> to tensor<32x64xf32, #tile.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>
// W8-NEXT: %[[W:.*]] = arith.extf %[[T]] : tensor<32x64xf16, #tile.blocked<[1, 8], [4, 8], [8, 1], [1, 0]>> to tensor<32x64xf32, #tile.blocked<[1, 8], [4, 8], [8, 1], [1, 0]>>
// W4-NEXT: %[[RED:.*]] = "tile.reduce"(%[[W]]) {axis = 1 : i32, kind = "max"} : (tensor<32x64xf32, #tile.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>) -> tensor<32xf32, #tile.blocked<[1], [32], [4], [0]>>
// W8-NEXT: %[[RED:.*]] = "tile.reduce"(%[[W]]) {axis = 1 : i32, kind = "max"} : (tensor<32x64xf32, #tile.blocked<[1, 8], [4, 8], [8, 1], [1, 0]>>) -> tensor<32xf32, #tile.blocked<[1], [32], [8], [0]>>
// CHECK-NEXT: %[[S:.*]] = "tile.reduce"(%[[RED]]) {axis = 0 : i32, kind = "sum"} : (tensor<32xf32, #tile.blocked<{{.*}}>>) -> f32
// CHECK-NEXT: return %[[S]] : f32
func.func @rows(%a: memref<?x?xf16, strided<[?, ?], offset: ?>>, %i: i32, %j: i32) -> f32 {
  %t = "tile.load_tile"(%a, %i, %j) {padding = 0.0 : f16} : (memref<?x?xf16, strided<[?, ?], offset: ?>>, i32, i32) -> tensor<32x64xf16>
  %w = arith.extf %t : tensor<32x64xf16> to tensor<32x64xf32>
  %r = "tile.reduce"(%w) {axis = 1 : i32, kind = "max"} : (tensor<32x64xf32>) -> tensor<32xf32>
  %s = "tile.reduce"(%r) {axis = 0 : i32, kind = "sum"} : (tensor<32xf32>) -> f32
  return %s : f32
}

// -----

// A layout already set is kept, and values computed from it follow it.

// CHECK-LABEL: func.func @keeps_existing
// CHECK: %[[T:.*]] = "tile.splat"(%{{.*}}) : (f32) -> tensor<64xf32, #tile.blocked<[1], [32], [2], [0]>>
// CHECK-NEXT: %[[U:.*]] = arith.mulf %[[T]], %[[T]] : tensor<64xf32, #tile.blocked<[1], [32], [2], [0]>>
// CHECK-NOT: tile.convert_layout
// CHECK: return
func.func @keeps_existing(%x: f32) -> f32 {
  %t = "tile.splat"(%x) : (f32) -> tensor<64xf32, #tile.blocked<[1], [32], [2], [0]>>
  %u = arith.mulf %t, %t : tensor<64xf32, #tile.blocked<[1], [32], [2], [0]>>
  %s = "tile.reduce"(%u) {axis = 0 : i32, kind = "sum"} : (tensor<64xf32, #tile.blocked<[1], [32], [2], [0]>>) -> f32
  return %s : f32
}

// -----

// Operands that disagree with the layout an op works in are converted
// explicitly: here a load whose result layout was set beforehand.

// CHECK-LABEL: func.func @converts
// W4: %[[R:.*]] = "tile.arange"() {{.*}} -> tensor<64xi32, #tile.blocked<[1], [32], [4], [0]>>
// W4: %[[C:.*]] = "tile.convert_layout"(%[[R]]) : (tensor<64xi32, #tile.blocked<[1], [32], [4], [0]>>) -> tensor<64xi32, #tile.blocked<[1], [32], [2], [0]>>
// W4: "tile.load"(%{{.*}}, %[[C]], %{{.*}}, %{{.*}}) : (memref<?xf32, strided<[?], offset: ?>>, tensor<64xi32, #tile.blocked<[1], [32], [2], [0]>>, tensor<64xi1, #tile.blocked<[1], [32], [2], [0]>>, tensor<64xf32, #tile.blocked<[1], [32], [2], [0]>>) -> tensor<64xf32, #tile.blocked<[1], [32], [2], [0]>>
// W8: tile.convert_layout
func.func @converts(%x: memref<?xf32, strided<[?], offset: ?>>, %t: i1, %z: f32) -> tensor<64xf32, #tile.blocked<[1], [32], [2], [0]>> {
  %r = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
  %m = "tile.splat"(%t) : (i1) -> tensor<64xi1>
  %o = "tile.splat"(%z) : (f32) -> tensor<64xf32>
  %v = "tile.load"(%x, %r, %m, %o) : (memref<?xf32, strided<[?], offset: ?>>, tensor<64xi32>, tensor<64xi1>, tensor<64xf32>) -> tensor<64xf32, #tile.blocked<[1], [32], [2], [0]>>
  return %v : tensor<64xf32, #tile.blocked<[1], [32], [2], [0]>>
}

// -----

// A gather: offsets scaled by a run-time stride are not provably consecutive,
// so the load takes one element per lane (a warp reads neighbouring elements)
// and its result is converted to the shape's layout for the store, which stays
// a 16-byte vector per thread. The contiguous store's offsets keep theirs.

!h = memref<?xf16, strided<[?], offset: ?>>

// CHECK-LABEL: func.func @gather
// W4: %[[G:.*]] = "tile.load"(%{{.*}}) : (memref<?xf16, strided<[?], offset: ?>>, tensor<1024xi32, #tile.blocked<[1], [32], [4], [0]>>, tensor<1024xi1, #tile.blocked<[1], [32], [4], [0]>>, tensor<1024xf16, #tile.blocked<[1], [32], [4], [0]>>) -> tensor<1024xf16, #tile.blocked<[1], [32], [4], [0]>>
// W4-NEXT: %[[V:.*]] = "tile.convert_layout"(%[[G]]) : (tensor<1024xf16, #tile.blocked<[1], [32], [4], [0]>>) -> tensor<1024xf16, #tile.blocked<[8], [32], [4], [0]>>
// W4: "tile.store"(%{{.*}}, %{{.*}}, %[[V]], %{{.*}}) : (memref<?xf16, strided<[?], offset: ?>>, tensor<1024xi32, #tile.blocked<[8], [32], [4], [0]>>, tensor<1024xf16, #tile.blocked<[8], [32], [4], [0]>>
// W8: "tile.load"{{.*}} -> tensor<1024xf16, #tile.blocked<[1], [32], [8], [0]>>
// W8-NEXT: "tile.convert_layout"{{.*}} -> tensor<1024xf16, #tile.blocked<[4], [32], [8], [0]>>
func.func @gather(%x: !h, %out: !h, %stride: i32) {
  %zero = arith.constant 0.0 : f16
  %t = arith.constant true
  %r = "tile.arange"() {start = 0 : i32, end = 1024 : i32} : () -> tensor<1024xi32>
  %s = "tile.splat"(%stride) : (i32) -> tensor<1024xi32>
  %src = arith.muli %r, %s : tensor<1024xi32>
  %m = "tile.splat"(%t) : (i1) -> tensor<1024xi1>
  %other = "tile.splat"(%zero) : (f16) -> tensor<1024xf16>
  %v = "tile.load"(%x, %src, %m, %other) : (!h, tensor<1024xi32>, tensor<1024xi1>, tensor<1024xf16>) -> tensor<1024xf16>
  "tile.store"(%out, %r, %v, %m) : (!h, tensor<1024xi32>, tensor<1024xf16>, tensor<1024xi1>) -> ()
  return
}

// -----

// A dot's accumulator takes a tensor-core layout: `#tile.mma` (mma.sync warp
// grid, square warp tiles) or, with wgmma (sm_90a), `#tile.wgmma`: 8 warps are
// 2 warpgroups along M, each 64 rows x 128 columns. A 32 x 32 accumulator has
// no whole 64-row wgmma, so it keeps `#tile.mma` there. Tiles of the
// accumulator's shape (the epilogue's) share its layout; operands keep theirs.

// CHECK-LABEL: func.func @dots
// W4-SAME: %{{[^:]*}}: tensor<128x128xf32, #tile.mma<[2, 2]>>
// MMA8-SAME: tensor<128x128xf32, #tile.mma<[4, 2]>>
// WG-SAME: tensor<128x128xf32, #tile.wgmma<[2, 1]>>
// W4: "tile.dot"{{.*}} -> tensor<128x128xf32, #tile.mma<[2, 2]>>
// MMA8: "tile.dot"{{.*}} -> tensor<128x128xf32, #tile.mma<[4, 2]>>
// WG: "tile.dot"{{.*}} -> tensor<128x128xf32, #tile.wgmma<[2, 1]>>
// W4: "tile.dot"{{.*}} -> tensor<32x32xf32, #tile.mma<[2, 2]>>
// MMA8: "tile.dot"{{.*}} -> tensor<32x32xf32, #tile.mma<[2, 4]>>
// WG: "tile.dot"{{.*}} -> tensor<32x32xf32, #tile.mma<[2, 4]>>
// WG: math.tanh %{{.*}} : tensor<128x128xf32, #tile.wgmma<[2, 1]>>
func.func @dots(%a: tensor<128x64xbf16>, %b: tensor<64x128xbf16>, %c: tensor<128x128xf32>,
                %a2: tensor<32x32xbf16>, %b2: tensor<32x32xbf16>, %c2: tensor<32x32xf32>) -> (tensor<128x128xf32>, tensor<32x32xf32>) {
  %d = "tile.dot"(%a, %b, %c) : (tensor<128x64xbf16>, tensor<64x128xbf16>, tensor<128x128xf32>) -> tensor<128x128xf32>
  %d2 = "tile.dot"(%a2, %b2, %c2) : (tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %e = math.tanh %d : tensor<128x128xf32>
  return %e, %d2 : tensor<128x128xf32>, tensor<32x32xf32>
}

// -----

// A tensor-core tile stored to rows that are contiguous (offsets row * n + col)
// is converted to the blocked layout of its shape first (16 bytes of a row per
// thread); its offsets and mask follow. Stored down the columns (col * n + row),
// it stays in the tensor-core layout.

// CHECK-LABEL: func.func @epilogue_rows
// CHECK: %[[V:.*]] = arith.truncf
// CHECK: %[[R:.*]] = "tile.convert_layout"(%[[V]]) : (tensor<128x128xbf16, #tile.{{(wg)?}}mma<{{.*}}>>) -> tensor<128x128xbf16, #tile.blocked<[1, 8], {{.*}}>>
// CHECK-NEXT: %[[O:.*]] = "tile.convert_layout"(%{{.*}}) : (tensor<128x128xi32, #tile.{{(wg)?}}mma<{{.*}}>>) -> tensor<128x128xi32, #tile.blocked<[1, 8], {{.*}}>>
// CHECK-NEXT: %[[M:.*]] = "tile.convert_layout"(%{{.*}}) : (tensor<128x128xi1, #tile.{{(wg)?}}mma<{{.*}}>>) -> tensor<128x128xi1, #tile.blocked<[1, 8], {{.*}}>>
// CHECK-NEXT: "tile.store"(%{{.*}}, %[[O]], %[[R]], %[[M]])
!c = memref<?xbf16, strided<[?], offset: ?>>
func.func @epilogue_rows(%c: !c, %a: tensor<128x64xbf16>, %b: tensor<64x128xbf16>, %acc: tensor<128x128xf32>, %n: i32) {
  %d = "tile.dot"(%a, %b, %acc) : (tensor<128x64xbf16>, tensor<64x128xbf16>, tensor<128x128xf32>) -> tensor<128x128xf32>
  %v = arith.truncf %d : tensor<128x128xf32> to tensor<128x128xbf16>
  %r = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %rows = "tile.reshape"(%r) : (tensor<128xi32>) -> tensor<128x1xi32>
  %cols = "tile.reshape"(%r) : (tensor<128xi32>) -> tensor<1x128xi32>
  %ns = "tile.splat"(%n) : (i32) -> tensor<128x1xi32>
  %ro = arith.muli %rows, %ns : tensor<128x1xi32>
  %rb = "tile.broadcast"(%ro) : (tensor<128x1xi32>) -> tensor<128x128xi32>
  %cb = "tile.broadcast"(%cols) : (tensor<1x128xi32>) -> tensor<128x128xi32>
  %offs = arith.addi %rb, %cb : tensor<128x128xi32>
  %true = arith.constant true
  %m = "tile.splat"(%true) : (i1) -> tensor<128x128xi1>
  "tile.store"(%c, %offs, %v, %m) : (!c, tensor<128x128xi32>, tensor<128x128xbf16>, tensor<128x128xi1>) -> ()
  return
}

// CHECK-LABEL: func.func @epilogue_columns
// CHECK-NOT: tile.convert_layout
// CHECK: "tile.store"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<{{.*}}>, tensor<128x128xi32, #tile.{{(wg)?}}mma<{{.*}}>>, tensor<128x128xbf16, #tile.{{(wg)?}}mma<{{.*}}>>
func.func @epilogue_columns(%c: !c, %a: tensor<128x64xbf16>, %b: tensor<64x128xbf16>, %acc: tensor<128x128xf32>, %n: i32) {
  %d = "tile.dot"(%a, %b, %acc) : (tensor<128x64xbf16>, tensor<64x128xbf16>, tensor<128x128xf32>) -> tensor<128x128xf32>
  %v = arith.truncf %d : tensor<128x128xf32> to tensor<128x128xbf16>
  %r = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %rows = "tile.reshape"(%r) : (tensor<128xi32>) -> tensor<128x1xi32>
  %cols = "tile.reshape"(%r) : (tensor<128xi32>) -> tensor<1x128xi32>
  %ns = "tile.splat"(%n) : (i32) -> tensor<1x128xi32>
  %co = arith.muli %cols, %ns : tensor<1x128xi32>
  %rb = "tile.broadcast"(%rows) : (tensor<128x1xi32>) -> tensor<128x128xi32>
  %cb = "tile.broadcast"(%co) : (tensor<1x128xi32>) -> tensor<128x128xi32>
  %offs = arith.addi %rb, %cb : tensor<128x128xi32>
  %true = arith.constant true
  %m = "tile.splat"(%true) : (i1) -> tensor<128x128xi1>
  "tile.store"(%c, %offs, %v, %m) : (!c, tensor<128x128xi32>, tensor<128x128xbf16>, tensor<128x128xi1>) -> ()
  return
}

// -----

// In a kernel with dots, a row of data broadcast into a blocked tile (a quantized
// weight's scales, over the weights decoded for a dot) takes that tile's layout,
// so that each thread holds the scales of its own columns; the index row of the
// same shape broadcast into another layout does not decide (any thread
// recomputes it), and its broadcast is left as it is.

// CHECK-LABEL: func.func @scale_row
// CHECK: "tile.broadcast"(%{{.*}}) : (tensor<1x128xf32, #tile.blocked<[[L:.*]]>>) -> tensor<64x128xf32, #tile.blocked<[[L]]>>
// CHECK: "tile.dot"
// CHECK: "tile.broadcast"(%{{.*}}) : (tensor<1x128xi32, #tile.blocked<[[L]]>>) -> tensor<2x128xi32, #tile.blocked<{{.*}}>>
func.func @scale_row(%a: tensor<128x64xbf16>, %w: tensor<64x128xi32>, %s: tensor<1x128xf32>,
                     %acc: tensor<128x128xf32>) -> (tensor<128x128xf32>, tensor<2x128xi32>) {
  %x = arith.sitofp %w : tensor<64x128xi32> to tensor<64x128xf32>
  %sb = "tile.broadcast"(%s) : (tensor<1x128xf32>) -> tensor<64x128xf32>
  %y = arith.mulf %x, %sb : tensor<64x128xf32>
  %b = arith.truncf %y : tensor<64x128xf32> to tensor<64x128xbf16>
  %d = "tile.dot"(%a, %b, %acc) : (tensor<128x64xbf16>, tensor<64x128xbf16>, tensor<128x128xf32>) -> tensor<128x128xf32>
  %r = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %cols = "tile.reshape"(%r) : (tensor<128xi32>) -> tensor<1x128xi32>
  %cb = "tile.broadcast"(%cols) : (tensor<1x128xi32>) -> tensor<2x128xi32>
  return %d, %cb : tensor<128x128xf32>, tensor<2x128xi32>
}

// -----

// A reduction of a tensor-core tile (attention's row maximum of its scores)
// reads it in its shape's blocked layout: a convert_layout goes before the reduce.

// CHECK-LABEL: func.func @reduce_scores
// CHECK: %[[S:.*]] = "tile.dot"
// CHECK-NEXT: %[[B:.*]] = "tile.convert_layout"(%[[S]]) : (tensor<64x64xf32, #tile.{{(wg)?}}mma<{{.*}}>>) -> tensor<64x64xf32, #tile.blocked<{{.*}}>>
// CHECK-NEXT: "tile.reduce"(%[[B]]) {axis = 1 : i32, kind = "max"}
func.func @reduce_scores(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>, %acc: tensor<64x64xf32>) -> tensor<64xf32> {
  %s = "tile.dot"(%a, %b, %acc) : (tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %m = "tile.reduce"(%s) {axis = 1 : i32, kind = "max"} : (tensor<64x64xf32>) -> tensor<64xf32>
  return %m : tensor<64xf32>
}

// -----

// Row statistics read back along the rows (a softmax of 16 short rows): the 16 x 256
// f32 tile is 4 a thread along dim 1, its 32 lanes along dim 1 and its warps along dim
// 0. The 16 x 1 shape broadcast into it takes its layout, and the 1-D shape of 16 (the
// reduction's result, the reshape's operand) its slice along dim 0: one row a warp and
// register, every lane holding it (lanes 1), so the broadcast reads registers the
// reduction left in each thread. The 1-D shape of 256 (a column vector) takes the slice
// along dim 1: 4 a thread, 32 lanes, every warp holding it.

!m2 = memref<?x?xf32, strided<[?, ?], offset: ?>>
!v1 = memref<?xf32, strided<[?], offset: ?>>

// CHECK-LABEL: func.func @row_statistics
// W4: %[[X:.*]] = "tile.load"{{.*}} -> tensor<16x256xf32, #tile.blocked<[1, 4], [1, 32], [4, 1], [1, 0]>>
// W4: %[[M:.*]] = "tile.reduce"(%[[X]]) {axis = 1 : i32, kind = "max"} : (tensor<16x256xf32, #tile.blocked<[1, 4], [1, 32], [4, 1], [1, 0]>>) -> tensor<16xf32, #tile.blocked<[1], [1], [4], [0]>>
// W4: %[[M2:.*]] = "tile.reshape"(%[[M]]) : (tensor<16xf32, #tile.blocked<[1], [1], [4], [0]>>) -> tensor<16x1xf32, #tile.blocked<[1, 4], [1, 32], [4, 1], [1, 0]>>
// W4: "tile.broadcast"(%[[M2]]) : (tensor<16x1xf32, #tile.blocked<[1, 4], [1, 32], [4, 1], [1, 0]>>) -> tensor<16x256xf32, #tile.blocked<[1, 4], [1, 32], [4, 1], [1, 0]>>
// W4: %[[W:.*]] = "tile.load"{{.*}} -> tensor<256xf32, #tile.blocked<[4], [32], [1], [0]>>
// W4: "tile.reshape"(%[[W]]) : (tensor<256xf32, #tile.blocked<[4], [32], [1], [0]>>) -> tensor<1x256xf32, #tile.blocked<[1, 4], [1, 32], [4, 1], [1, 0]>>
// CHECK-NOT: tile.convert_layout
func.func @row_statistics(%x: !m2, %w: !v1, %off: tensor<16x256xi32>, %m: tensor<16x256xi1>, %n: i32) -> tensor<16x256xf32> {
  %zero = arith.constant 0.0 : f32
  %woff = "tile.arange"() {start = 0 : i32, end = 256 : i32} : () -> tensor<256xi32>
  %ns = "tile.splat"(%n) : (i32) -> tensor<256xi32>
  %wm = arith.cmpi slt, %woff, %ns : tensor<256xi32>
  %z = "tile.splat"(%zero) : (f32) -> tensor<16x256xf32>
  %v = "tile.load"(%x, %off, %m, %z) : (!m2, tensor<16x256xi32>, tensor<16x256xi1>, tensor<16x256xf32>) -> tensor<16x256xf32>
  %max = "tile.reduce"(%v) {axis = 1 : i32, kind = "max"} : (tensor<16x256xf32>) -> tensor<16xf32>
  %max2 = "tile.reshape"(%max) : (tensor<16xf32>) -> tensor<16x1xf32>
  %maxb = "tile.broadcast"(%max2) : (tensor<16x1xf32>) -> tensor<16x256xf32>
  %d = arith.subf %v, %maxb : tensor<16x256xf32>
  %z1 = "tile.splat"(%zero) : (f32) -> tensor<256xf32>
  %wv = "tile.load"(%w, %woff, %wm, %z1) : (!v1, tensor<256xi32>, tensor<256xi1>, tensor<256xf32>) -> tensor<256xf32>
  %wv2 = "tile.reshape"(%wv) : (tensor<256xf32>) -> tensor<1x256xf32>
  %wvb = "tile.broadcast"(%wv2) : (tensor<1x256xf32>) -> tensor<16x256xf32>
  %y = arith.mulf %d, %wvb : tensor<16x256xf32>
  return %y : tensor<16x256xf32>
}

// -----

// Rows of 128 bf16 read back along themselves (paged attention's scores): the default
// layout would spread a row over 16 lanes of 8 (16-byte vectors, 2 rows a warp), whose
// rows a 1-D layout cannot name, so each broadcast back would go through shared memory.
// The shape takes a row a warp instead, 4 a lane (8-byte vectors), and the rows' slice
// holds each warp's rows in every lane. 64 f16 columns, which that would leave 4-byte
// vectors, keep their 16-byte ones, and their rows a default 1-D layout (the reshape back
// goes through shared memory).

!b2 = memref<?x?xbf16, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func.func @rows_a_warp
// W4: %[[X:.*]] = "tile.load"{{.*}} -> tensor<64x128xbf16, #tile.blocked<[1, 4], [1, 32], [4, 1], [1, 0]>>
// W4: "tile.reduce"(%{{.*}}) {axis = 1 : i32, kind = "sum"} : (tensor<64x128xf32, #tile.blocked<[1, 4], [1, 32], [4, 1], [1, 0]>>) -> tensor<64xf32, #tile.blocked<[1], [1], [4], [0]>>
// W8: "tile.reduce"(%{{.*}}) {axis = 1 : i32, kind = "sum"} : (tensor<64x128xf32, #tile.blocked<[1, 4], [1, 32], [8, 1], [1, 0]>>) -> tensor<64xf32, #tile.blocked<[1], [1], [8], [0]>>
// CHECK-NOT: tile.convert_layout
func.func @rows_a_warp(%x: !b2, %off: tensor<64x128xi32>, %m: tensor<64x128xi1>) -> tensor<64x128xf32> {
  %zero = arith.constant 0.0 : bf16
  %z = "tile.splat"(%zero) : (bf16) -> tensor<64x128xbf16>
  %v = "tile.load"(%x, %off, %m, %z) : (!b2, tensor<64x128xi32>, tensor<64x128xi1>, tensor<64x128xbf16>) -> tensor<64x128xbf16>
  %f = arith.extf %v : tensor<64x128xbf16> to tensor<64x128xf32>
  %s = "tile.reduce"(%f) {axis = 1 : i32, kind = "sum"} : (tensor<64x128xf32>) -> tensor<64xf32>
  %s2 = "tile.reshape"(%s) : (tensor<64xf32>) -> tensor<64x1xf32>
  %sb = "tile.broadcast"(%s2) : (tensor<64x1xf32>) -> tensor<64x128xf32>
  %d = arith.mulf %f, %sb : tensor<64x128xf32>
  return %d : tensor<64x128xf32>
}

// -----

!h2 = memref<?x?xf16, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func.func @short_rows_keep_vectors
// W4: "tile.load"{{.*}} -> tensor<64x64xf16, #tile.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>
// W4: "tile.reduce"(%{{.*}}) {axis = 1 : i32, kind = "sum"} : (tensor<64x64xf32, #tile.blocked<[1, 8], [4, 8], [4, 1], [1, 0]>>) -> tensor<64xf32, #tile.blocked<[1], [32], [4], [0]>>
func.func @short_rows_keep_vectors(%x: !h2, %off: tensor<64x64xi32>, %m: tensor<64x64xi1>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f16
  %z = "tile.splat"(%zero) : (f16) -> tensor<64x64xf16>
  %v = "tile.load"(%x, %off, %m, %z) : (!h2, tensor<64x64xi32>, tensor<64x64xi1>, tensor<64x64xf16>) -> tensor<64x64xf16>
  %f = arith.extf %v : tensor<64x64xf16> to tensor<64x64xf32>
  %s = "tile.reduce"(%f) {axis = 1 : i32, kind = "sum"} : (tensor<64x64xf32>) -> tensor<64xf32>
  %s2 = "tile.reshape"(%s) : (tensor<64xf32>) -> tensor<64x1xf32>
  %sb = "tile.broadcast"(%s2) : (tensor<64x1xf32>) -> tensor<64x64xf32>
  %d = arith.mulf %f, %sb : tensor<64x64xf32>
  return %d : tensor<64x64xf32>
}

// -----

// Running row statistics of a tensor-core tile (attention's row maximum) take
// `#tile.rows<parent>` where the parent's warps hold whole rows (4 warps along M for
// mma.sync, warpgroups along M for wgmma): each thread holds the rows it holds of the
// scores, so the reduction and the broadcast back stay in registers. With 8 warps on
// mma.sync (a 4 x 2 warp grid, rows shared by two warps) they stay blocked.

// CHECK-LABEL: func.func @online_softmax_rows
// W4: %[[R:.*]] = "tile.reduce"(%{{.*}}) {axis = 1 : i32, kind = "max"} : (tensor<128x64xf32, #tile.blocked<{{.*}}>>) -> tensor<128xf32, #tile.rows<#tile.mma<[4, 1]>>>
// MMA8: %[[R:.*]] = "tile.reduce"(%{{.*}}) {axis = 1 : i32, kind = "max"} : (tensor<128x64xf32, #tile.blocked<{{.*}}>>) -> tensor<128xf32, #tile.blocked<[1], [32], [8], [0]>>
// WG: %[[R:.*]] = "tile.reduce"(%{{.*}}) {axis = 1 : i32, kind = "max"} : (tensor<128x64xf32, #tile.blocked<{{.*}}>>) -> tensor<128xf32, #tile.rows<#tile.wgmma<[2, 1]>>>
// W4: arith.maximumf %{{.*}}, %[[R]] : tensor<128xf32, #tile.rows<#tile.mma<[4, 1]>>>
// WG: arith.maximumf %{{.*}}, %[[R]] : tensor<128xf32, #tile.rows<#tile.wgmma<[2, 1]>>>
func.func @online_softmax_rows(%a: tensor<128x64xf16>, %b: tensor<64x64xf16>, %acc: tensor<128x64xf32>, %mi: f32) -> tensor<128x64xf32> {
  %s = "tile.dot"(%a, %b, %acc) : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<128x64xf32>) -> tensor<128x64xf32>
  %m0 = "tile.splat"(%mi) : (f32) -> tensor<128xf32>
  %r = "tile.reduce"(%s) {axis = 1 : i32, kind = "max"} : (tensor<128x64xf32>) -> tensor<128xf32>
  %m = arith.maximumf %m0, %r : tensor<128xf32>
  %m2 = "tile.reshape"(%m) : (tensor<128xf32>) -> tensor<128x1xf32>
  %mb = "tile.broadcast"(%m2) : (tensor<128x1xf32>) -> tensor<128x64xf32>
  %d = arith.subf %s, %mb : tensor<128x64xf32>
  return %d : tensor<128x64xf32>
}

// -----

// Row statistics that are also stored (attention's log-sum-exp) take the rows layout
// all the same: each thread stores the rows it holds, its offsets and mask computed in
// that layout too (the four lanes of a row store the same value).

!st = memref<?xf32, strided<[?], offset: ?>>

// CHECK-LABEL: func.func @stored_rows
// WG: %[[OFFS:.*]] = "tile.arange"() {end = 128 : i32, start = 0 : i32} : () -> tensor<128xi32, #tile.rows<#tile.wgmma<[2, 1]>>>
// WG: %[[R:.*]] = "tile.reduce"(%{{.*}}) {axis = 1 : i32, kind = "max"} : (tensor<128x64xf32, #tile.blocked<{{.*}}>>) -> tensor<128xf32, #tile.rows<#tile.wgmma<[2, 1]>>>
// WG: "tile.store"(%{{.*}}, %[[OFFS]], %[[R]], %{{.*}}) : (memref<{{.*}}>, tensor<128xi32, #tile.rows<#tile.wgmma<[2, 1]>>>, tensor<128xf32, #tile.rows<#tile.wgmma<[2, 1]>>>, tensor<128xi1, #tile.rows<#tile.wgmma<[2, 1]>>>)
func.func @stored_rows(%a: tensor<128x64xf16>, %b: tensor<64x64xf16>, %acc: tensor<128x64xf32>, %out: !st, %n: i32) {
  %s = "tile.dot"(%a, %b, %acc) : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<128x64xf32>) -> tensor<128x64xf32>
  %offs = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %ns = "tile.splat"(%n) : (i32) -> tensor<128xi32>
  %mask = arith.cmpi slt, %offs, %ns : tensor<128xi32>
  %r = "tile.reduce"(%s) {axis = 1 : i32, kind = "max"} : (tensor<128x64xf32>) -> tensor<128xf32>
  "tile.store"(%out, %offs, %r, %mask) : (!st, tensor<128xi32>, tensor<128xf32>, tensor<128xi1>) -> ()
  return
}

// -----

// Data loaded as a vector and broadcast over the accumulator's rows (attention backward's
// log-sum-exp and delta: `m[:, None]`) takes the rows layout: each thread loads the rows
// it holds. Broadcast over its columns (`d[None, :]`) outside a loop, it keeps its blocked
// default (in the columns layout a thread would hold 16 of the 64).

!v = memref<?xf32, strided<[?], offset: ?>>

// CHECK-LABEL: func.func @broadcast_rows
// WG: "tile.load"(%{{.*}}) : (memref<{{.*}}>, tensor<128xi32, #tile.rows<#tile.wgmma<[2, 1]>>>, tensor<128xi1, #tile.rows<#tile.wgmma<[2, 1]>>>, tensor<128xf32, #tile.rows<#tile.wgmma<[2, 1]>>>) -> tensor<128xf32, #tile.rows<#tile.wgmma<[2, 1]>>>
// WG: "tile.load"(%{{.*}}) : (memref<{{.*}}>, tensor<64xi32, #tile.blocked<{{.*}}>>, tensor<64xi1, #tile.blocked<{{.*}}>>, tensor<64xf32, #tile.blocked<{{.*}}>>) -> tensor<64xf32, #tile.blocked<{{.*}}>>
func.func @broadcast_rows(%a: tensor<128x64xf16>, %b: tensor<64x64xf16>, %acc: tensor<128x64xf32>, %lse: !v, %d: !v) -> tensor<128x64xf32> {
  %s = "tile.dot"(%a, %b, %acc) : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<128x64xf32>) -> tensor<128x64xf32>
  %rows = "tile.arange"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %cols = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
  %true = arith.constant true
  %zero = arith.constant 0.0 : f32
  %mr = "tile.splat"(%true) : (i1) -> tensor<128xi1>
  %zr = "tile.splat"(%zero) : (f32) -> tensor<128xf32>
  %mc = "tile.splat"(%true) : (i1) -> tensor<64xi1>
  %zc = "tile.splat"(%zero) : (f32) -> tensor<64xf32>
  %m = "tile.load"(%lse, %rows, %mr, %zr) : (!v, tensor<128xi32>, tensor<128xi1>, tensor<128xf32>) -> tensor<128xf32>
  %dc = "tile.load"(%d, %cols, %mc, %zc) : (!v, tensor<64xi32>, tensor<64xi1>, tensor<64xf32>) -> tensor<64xf32>
  %m2 = "tile.reshape"(%m) : (tensor<128xf32>) -> tensor<128x1xf32>
  %mb = "tile.broadcast"(%m2) : (tensor<128x1xf32>) -> tensor<128x64xf32>
  %d2 = "tile.reshape"(%dc) : (tensor<64xf32>) -> tensor<1x64xf32>
  %db = "tile.broadcast"(%d2) : (tensor<1x64xf32>) -> tensor<128x64xf32>
  %x = arith.subf %s, %mb : tensor<128x64xf32>
  %y = arith.mulf %x, %db : tensor<128x64xf32>
  return %y : tensor<128x64xf32>
}

// -----

// Loaded each step of the loop that broadcasts it over the accumulator's columns (the
// transposed scores of attention's dK and dV, `delta[None, :]`), a vector takes the
// columns layout: each thread loads the columns it holds, in pairs.

!v = memref<?xf32, strided<[?], offset: ?>>

// CHECK-LABEL: func.func @broadcast_cols_in_loop
// WG: scf.for
// WG: "tile.load"(%{{.*}}) : (memref<{{.*}}>, tensor<64xi32, #tile.cols<#tile.wgmma<[2, 1]>>>, tensor<64xi1, #tile.cols<#tile.wgmma<[2, 1]>>>, tensor<64xf32, #tile.cols<#tile.wgmma<[2, 1]>>>) -> tensor<64xf32, #tile.cols<#tile.wgmma<[2, 1]>>>
func.func @broadcast_cols_in_loop(%a: tensor<128x64xf16>, %b: tensor<64x64xf16>, %acc: tensor<128x64xf32>, %d: !v, %n: i32) -> tensor<128x64xf32> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%x = %acc) -> (tensor<128x64xf32>) : i32 {
    %s = "tile.dot"(%a, %b, %x) : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<128x64xf32>) -> tensor<128x64xf32>
    %cols = "tile.arange"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
    %true = arith.constant true
    %zero = arith.constant 0.0 : f32
    %mc = "tile.splat"(%true) : (i1) -> tensor<64xi1>
    %zc = "tile.splat"(%zero) : (f32) -> tensor<64xf32>
    %dc = "tile.load"(%d, %cols, %mc, %zc) : (!v, tensor<64xi32>, tensor<64xi1>, tensor<64xf32>) -> tensor<64xf32>
    %d2 = "tile.reshape"(%dc) : (tensor<64xf32>) -> tensor<1x64xf32>
    %db = "tile.broadcast"(%d2) : (tensor<1x64xf32>) -> tensor<128x64xf32>
    %y = arith.mulf %s, %db : tensor<128x64xf32>
    scf.yield %y : tensor<128x64xf32>
  }
  return %r : tensor<128x64xf32>
}

// -----

// Tiles that only share the accumulator's shape (an FP8 matmul's 64 x 64 weights and
// their decoding, beside its 64 x 64 accumulator) keep the blocked layout: their loads
// are 16-byte vectors. The accumulator's chain (the dot, its epilogue) takes `#tile.mma`.

!w = memref<?xi8, strided<[?], offset: ?>>

// CHECK-LABEL: func.func @same_shape_operand
// W4: "tile.load"{{.*}} -> tensor<64x64xi8, #tile.blocked<{{.*}}>>
// W4: arith.sitofp %{{.*}} : tensor<64x64xi8, #tile.blocked<{{.*}}>> to tensor<64x64xbf16, #tile.blocked<{{.*}}>>
// W4: "tile.dot"{{.*}} -> tensor<64x64xf32, #tile.mma<[2, 2]>>
// W4: math.tanh %{{.*}} : tensor<64x64xf32, #tile.mma<[2, 2]>>
func.func @same_shape_operand(%w: !w, %offs: tensor<64x64xi32>, %m: tensor<64x64xi1>, %a: tensor<64x64xbf16>) -> tensor<64x64xf32> {
  %z8 = arith.constant 0 : i8
  %zf = arith.constant 0.0 : f32
  %z = "tile.splat"(%z8) : (i8) -> tensor<64x64xi8>
  %acc = "tile.splat"(%zf) : (f32) -> tensor<64x64xf32>
  %bits = "tile.load"(%w, %offs, %m, %z) : (!w, tensor<64x64xi32>, tensor<64x64xi1>, tensor<64x64xi8>) -> tensor<64x64xi8>
  %b = arith.sitofp %bits : tensor<64x64xi8> to tensor<64x64xbf16>
  %d = "tile.dot"(%a, %b, %acc) : (tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %e = math.tanh %d : tensor<64x64xf32>
  return %e : tensor<64x64xf32>
}
