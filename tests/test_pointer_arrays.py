"""Pointers cast from int64 addresses (Triton's `tile.load(ptrs + g).to(tile.pointer_type(dt))`,
tutorial 08's arrays of pointers): loads, stores, atomics and tensor descriptors through them,
checked against torch on the CPU, in both styles (index arithmetic and pointer increments),
with masks and odd sizes; compiled for sm_90a, where `multiple_of` on such a pointer (or a
descriptor made from it) lets its accesses be 16-byte vectors; and the errors of a bad cast."""

import re

import pytest
import torch

import tile


def _addresses(tensors):
    return torch.tensor([t.data_ptr() for t in tensors], dtype=torch.int64)


@tile.jit
def _scale_rows(srcs, dsts, sizes, scale, BLOCK: tile.constexpr, HINT: tile.constexpr, ):
    """Index arithmetic: program g scales its own vector, of its own length, into its own output;
    with HINT, whole blocks only."""
    g = tile.program_id(0)
    n = tile.load(sizes + g)
    src = tile.load(srcs + g).to(tile.pointer_type(tile.float32))
    dst = tile.load(dsts + g).to(tile.pointer_type(tile.float32))
    for start in range(0, n, BLOCK):
        offs = start + tile.arange(0, BLOCK)
        if HINT:  # (as Triton's: on the pointers, in place)
            tile.multiple_of(src + offs, 16)
            tile.multiple_of(dst + offs, [16])
            tile.store(dst + offs, tile.load(src + offs) * scale)
        else:
            x = tile.load(src + offs, mask=offs < n, other=0.0)
            tile.store(dst + offs, x * scale, mask=offs < n)


@tile.jit
def _sum_blocks(srcs, out, n, BLOCK: tile.constexpr):
    """Pointer increments: a pointer cast from an address, advanced through a loop, and an
    atomic through another such pointer."""
    g = tile.program_id(0)
    p = tile.load(srcs + g).to(tile.pointer_type(tile.float16))
    acc = tile.zeros((BLOCK, ), dtype=tile.float32)
    for k in range(0, tile.cdiv(n, BLOCK)):
        offs = k * BLOCK + tile.arange(0, BLOCK)
        acc += tile.load(p + tile.arange(0, BLOCK), mask=offs < n, other=0.0).to(tile.float32)
        p += BLOCK
    total = tile.load(out).to(tile.pointer_type(tile.float32))
    tile.atomic_add(total + g % 2, tile.sum(acc, axis=0))


@tile.jit
def _copy_blocks(srcs, dsts, shapes, BM: tile.constexpr, BN: tile.constexpr):
    """Tensor descriptors made from cast pointers (tutorial 08's second kernel), over odd shapes
    whose row strides are multiples of 16 bytes (Triton's rule for a descriptor)."""
    g = tile.program_id(0)
    m = tile.load(shapes + 4 * g)
    n = tile.load(shapes + 4 * g + 1)
    src = tile.make_tensor_descriptor(tile.load(srcs + g).to(tile.pointer_type(tile.bfloat16)), shape=[m, n],
                                      strides=[tile.load(shapes + 4 * g + 2), 1], block_shape=[BM, BN], )
    dst = tile.make_tensor_descriptor(tile.load(dsts + g).to(tile.pointer_type(tile.bfloat16)), shape=[m, n],
                                      strides=[tile.load(shapes + 4 * g + 3), 1], block_shape=[BM, BN], )
    for i in range(0, tile.cdiv(m, BM)):
        for j in range(0, tile.cdiv(n, BN)):
            src_block = src.load([i * BM, j * BN])
            dst.store([i * BM, j * BN], src_block + 1)


@tile.jit
def _gemms(a_ptrs, b_ptrs, c_ptrs, dims, BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr):
    """C = A @ B.T per group, through descriptors made from cast pointers, as tutorial 08's
    second kernel; M, N and K of any size (row strides multiples of 16 bytes)."""
    g = tile.program_id(1)
    m, n, k = tile.load(dims + 3 * g), tile.load(dims + 3 * g + 1), tile.load(dims + 3 * g + 2)
    lda, ldb, ldc = tile.load(dims + 3 * g + 3 * 4), tile.load(dims + 3 * g + 3 * 4 + 1), tile.load(dims + 3 * g + 3 * 4 + 2)
    a = tile.make_tensor_descriptor(tile.load(a_ptrs + g).to(tile.pointer_type(tile.float16)), [m, k], [lda, 1], [BM, BK])
    b = tile.make_tensor_descriptor(tile.load(b_ptrs + g).to(tile.pointer_type(tile.float16)), [n, k], [ldb, 1], [BN, BK])
    c = tile.make_tensor_descriptor(tile.load(c_ptrs + g).to(tile.pointer_type(tile.float16)), [m, n], [ldc, 1], [BM, BN])
    pm, pn = tile.program_id(0) // tile.cdiv(n, BN), tile.program_id(0) % tile.cdiv(n, BN)
    if pm * BM < m:
        acc = tile.zeros((BM, BN), dtype=tile.float32)
        for kk in range(0, tile.cdiv(k, BK)):
            acc += tile.dot(a.load([pm * BM, kk * BK]), b.load([pn * BN, kk * BK]).T)
        c.store([pm * BM, pn * BN], acc.to(tile.float16))


@pytest.mark.parametrize("hint", [False, True])
def test_cpu_index_arithmetic(hint):
    srcs = [torch.randn(n) for n in ((64, 128, 192, 64) if hint else (1, 37, 128, 300))]
    dsts = [torch.full_like(s, -7.0) for s in srcs]
    sizes = torch.tensor([s.numel() for s in srcs], dtype=torch.int32)
    _scale_rows[(len(srcs), )](_addresses(srcs), _addresses(dsts), sizes, 2.5, BLOCK=64, HINT=hint)
    for s, d in zip(srcs, dsts):
        torch.testing.assert_close(d, s * 2.5)


def test_cpu_pointer_increments_and_atomics():
    srcs = [torch.randn(203, dtype=torch.float16) for _ in range(3)]
    out = torch.zeros(2)
    _sum_blocks[(3, )](_addresses(srcs), _addresses([out]), 203, BLOCK=32)
    sums = [s.float().sum() for s in srcs]
    torch.testing.assert_close(out, torch.stack([sums[0] + sums[2], sums[1]]), rtol=1e-4, atol=1e-3)


def test_cpu_descriptors_of_strided_views():
    base = torch.randn(70, 56).to(torch.bfloat16)
    srcs = [base[3:40, 8:39], torch.randn(17, 16).to(torch.bfloat16)[:, :9], base[:, :48]]
    fulls = [torch.full((s.shape[0], 64), -1.0, dtype=torch.bfloat16) for s in srcs]
    dsts = [f[:, :s.shape[1]] for f, s in zip(fulls, srcs)]
    shapes = torch.tensor([x for s, d in zip(srcs, dsts) for x in (*s.shape, s.stride(0), d.stride(0))], dtype=torch.int32)
    _copy_blocks[(3, )](_addresses(srcs), _addresses(dsts), shapes, BM=16, BN=16)
    for s, d, f in zip(srcs, dsts, fulls):
        torch.testing.assert_close(d, s + 1)
        assert (f[:, s.shape[1]:] == -1).all()  # (nothing written past the shape)


def test_cpu_gemms_through_descriptors():
    """Four GEMMs of odd sizes (M, N, K not multiples of the blocks), one launch."""
    shapes = [(40, 24, 72), (64, 64, 64), (17, 40, 8), (1, 8, 100)]
    As = [torch.randn(m, k + 8, dtype=torch.float16)[:, :k] for m, _, k in shapes]  # (a row stride past K)
    Bs = [torch.randn(n, k, dtype=torch.float16) for _, n, k in shapes]
    Cs = [torch.empty(m, n, dtype=torch.float16) for m, n, _ in shapes]
    dims = torch.tensor([x for s in shapes for x in s] + [x for t in zip(As, Bs, Cs) for x in (t[0].stride(0), t[1].stride(0),
                                                                                                t[2].stride(0))],
                        dtype=torch.int32)
    _gemms[(16, 4)](_addresses(As), _addresses(Bs), _addresses(Cs), dims, BM=16, BN=16, BK=32)
    for a, b, c in zip(As, Bs, Cs):
        torch.testing.assert_close(c, (a.float() @ b.float().T).half(), atol=1e-2, rtol=1e-2)


def _ops(ptx, pattern):
    return len(re.findall(pattern, ptx))


def test_sm90a_gemms_copy_whole_runs(gpu_target):
    """The descriptors' K blocks, cut by a run-time K, go by 16-byte cp.async of the run's elements
    below K (`codegen/gpu/tail_masked_copies.py`), the epilogue by 16-byte stores; no spills."""
    gpu_target("sm_90a")
    ptrs, dims = torch.empty(4, dtype=torch.int64, device="meta"), torch.empty(24, dtype=torch.int32, device="meta")
    launcher = _gemms.compile(ptrs, ptrs, ptrs, dims, BM=64, BN=64, BK=64, num_stages=3)
    ptx = launcher.asm["ptx"]
    copies = re.findall(r"cp\.async\.cg\.shared\.global \[%r\w+(?:\+\d+)?\], \[%rd\w+\], 16, %r\w+;", ptx)
    assert len(copies) == 3 * 2 * 64 * 64 * 2 // (128 * 16)  # 3 stages of A's and B's blocks, 16 bytes each
    assert "wgmma.mma_async" in ptx and _ops(ptx, r"\bst(\.global)?\.v4\.b32") == 64 * 64 * 2 // (128 * 16)
    assert launcher.metadata["ptxas"]["spill_stores"] == 0


def test_sm90a_hint_vectorizes(gpu_target):
    gpu_target("sm_90a")
    ptrs, sizes = torch.empty(4, dtype=torch.int64, device="meta"), torch.empty(4, dtype=torch.int32, device="meta")

    def ptx(hint):
        launcher = _scale_rows.compile(ptrs, ptrs, sizes, 2.0, BLOCK=512, HINT=hint)
        assert launcher.metadata["ptxas"]["spill_stores"] == 0
        return launcher.asm["ptx"]

    plain, hinted = ptx(False), ptx(True)
    assert _ops(plain, r"\bld(\.global)?\.v4") == 0 and _ops(plain, r"\bst(\.global)?\.b32") == 4
    # (4 f32 of 512 a thread: one 16-byte load and store)
    assert _ops(hinted, r"\bld(\.global)?\.v4\.b32") == _ops(hinted, r"\bst(\.global)?\.v4\.b32") == 1
    assert _ops(hinted, r"\bst(\.global)?\.b32") == 0


def test_sm90a_sum_blocks(gpu_target):
    gpu_target("sm_90a")
    ptrs = torch.empty(3, dtype=torch.int64, device="meta")
    launcher = _sum_blocks.compile(ptrs, torch.empty(1, dtype=torch.int64, device="meta"), 203, BLOCK=128)
    assert "atom" in launcher.asm["ptx"] and launcher.metadata["ptxas"]["spill_stores"] == 0


@tile.jit
def _bad_cast(x, KIND: tile.constexpr):
    if KIND == 0:
        p = tile.load(x).to(tile.pointer_type(tile.float32))  # an int32
    elif KIND == 1:
        p = tile.load(x + tile.arange(0, 4)).to(tile.pointer_type(tile.float32))  # a tile of addresses
    else:
        p = x.to(tile.pointer_type(tile.float32))
    tile.store(p, 1.0)


@pytest.mark.parametrize("kind, dtype, message", [
    (0, torch.int32, "only an int64 converts to a pointer"),
    (1, torch.int64, "a tile of addresses cannot be cast to pointers yet"),
    (2, torch.int64, "tensor argument 'x' has no attribute 'to'"),
])
def test_bad_casts_are_errors_at_their_line(kind, dtype, message):
    with pytest.raises(tile.CompilationError, match=message) as e:
        _bad_cast[(1, )](torch.zeros(4, dtype=dtype), KIND=kind)
    assert "test_pointer_arrays.py" in str(e.value)
