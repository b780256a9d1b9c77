"""Triton's tensor descriptors (made in the kernel, or on the host and passed as arguments) and
block pointers (`make_block_ptr`, `advance`, `load`/`store` with `boundary_check`), run on the
CPU against torch, and compiled for sm_90a (descriptor loads in a K loop as TMA copies feeding
wgmma) and sm_80."""

import pytest
import torch

import tile


@tile.kernel
def scale_2d(x, y, M, N, sxm, sym, BM: tile.constexpr, BN: tile.constexpr):
    x_desc = tile.make_tensor_descriptor(x, shape=[M, N], strides=[sxm, 1], block_shape=[BM, BN],)
    y_desc = tile.make_tensor_descriptor(y, shape=[M, N], strides=[sym, 1], block_shape=[BM, BN],)
    m0, n0 = tile.program_id(0) * BM, tile.program_id(1) * BN
    y_desc.store([m0, n0], x_desc.load([m0, n0]) * 2 + 1)


def test_descriptor_load_store_odd_sizes_strided_views():
    """A 37 x 50 block view of a wider tensor (row stride 64, storage offset 3), blocks of 16 x 16:
    the edge blocks read zeros past the bounds and write nothing there (the rest of `out`'s
    storage keeps its sentinel)."""
    big = torch.randn(40, 64)
    x = big[2:39, 3:53]
    out_big = torch.full((40, 72), -7.0)
    y = out_big[1:38, 5:55]
    scale_2d[(3, 4)](x, y, 37, 50, x.stride(0), y.stride(0), BM=16, BN=16)
    assert torch.equal(y, x * 2 + 1)
    untouched = torch.ones_like(out_big, dtype=torch.bool)
    untouched[1:38, 5:55] = False
    assert (out_big[untouched] == -7.0).all()


@tile.kernel
def sum_rows_1d(x, out, n, B: tile.constexpr):
    desc = tile.make_tensor_descriptor(x + 0, [n], [1], [B])
    acc = tile.zeros([B], dtype=tile.float32)
    for i in range(0, tile.cdiv(n, B)):
        acc += desc.load([i * B])
    tile.store(out + tile.arange(0, B), acc)


def test_descriptor_1d_in_a_loop():
    x = torch.randn(100)
    out = torch.empty(32)
    sum_rows_1d[(1,)](x, out, 100, B=32)
    ref = torch.nn.functional.pad(x, (0, 28)).view(4, 32).sum(0)
    torch.testing.assert_close(out, ref)


@tile.kernel
def copy_3d(x, y, A, B, C, sa, sb, BA: tile.constexpr, BB: tile.constexpr, BC: tile.constexpr):
    src = tile.make_tensor_descriptor(x, shape=[A, B, C], strides=[sa, sb, 1], block_shape=[BA, BB, BC])
    dst = tile.make_tensor_descriptor(y, shape=[A, B, C], strides=[B * C, C, 1], block_shape=[BA, BB, BC])
    o = [tile.program_id(0) * BA, tile.program_id(1) * BB, tile.program_id(2) * BC]
    v = src.load(o)
    tile.static_assert(src.block_shape == (BA, BB, BC))
    dst.store(o, v - tile.sum(v, axis=2, keep_dims=True) * 0)
    dst.store([o[0], o[1], o[2]], v + 0.5)


def test_descriptor_3d_permuted_view():
    """A 3-D descriptor over a permuted (non-contiguous) view whose last dim stays contiguous."""
    base = torch.randn(5, 9, 21)
    x = base.permute(1, 0, 2)  # 9 x 5 x 21, strides (21, 189, 1)
    y = torch.empty(9, 5, 21)
    copy_3d[(3, 2, 3)](x, y, 9, 5, 21, x.stride(0), x.stride(1), BA=4, BB=4, BC=8)
    assert torch.equal(y, x + 0.5)


@tile.kernel
def desc_matmul(a_desc, b_desc, c_desc, K, BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr,
                B_NK: tile.constexpr):
    """Tutorial 09's descriptor matmul (one tile a program); B_NK: b is N x K, used as b.T."""
    pm, pn = tile.program_id(0), tile.program_id(1)
    acc = tile.zeros((BM, BN), dtype=tile.float32)
    for k in range(0, tile.cdiv(K, BK)):
        a = a_desc.load([pm * BM, k * BK])
        if B_NK:
            acc = tile.dot(a, b_desc.load([pn * BN, k * BK]).T, acc)
        else:
            acc = tile.dot(a, b_desc.load([k * BK, pn * BN]), acc)
    c_desc.store([pm * BM, pn * BN], acc.to(c_desc.dtype))


def test_host_descriptor_matmul():
    """tile.TensorDescriptor.from_tensor arguments, K not a multiple of BK, M and N not of the tiles."""
    M, N, K = 37, 45, 70
    a, b = torch.randn(M, K), torch.randn(K, N)
    c = torch.zeros(M, N)
    D = tile.TensorDescriptor.from_tensor
    desc_matmul[(3, 3)](D(a, [16, 16]), D(b, [16, 16]), D(c, [16, 16]), K, BM=16, BN=16, BK=16, B_NK=False)
    torch.testing.assert_close(c, a @ b, atol=1e-4, rtol=1e-4)


def test_triton_descriptor_matmul_b_transposed():
    """triton.tools.tensor_descriptor.TensorDescriptor arguments (its rows 16-byte aligned: K = 72, c a view),
    B stored N x K and used as b.T, as tutorial 09 does; the block shape differs per argument."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    M, N, K = 37, 45, 72
    a, b = torch.randn(M, K), torch.randn(N, K)
    c = torch.zeros(M, 48)[:, :N]  # (a row stride of 48)
    desc_matmul[(2, 3)](TensorDescriptor.from_tensor(a, [32, 16]), TensorDescriptor.from_tensor(b, [16, 16]),
                        TensorDescriptor.from_tensor(c, [32, 16]), K, BM=32, BN=16, BK=16, B_NK=True)
    torch.testing.assert_close(c, a @ b.T, atol=1e-4, rtol=1e-4)


@tile.kernel
def rows_of_flat(q_desc, out, N, D: tile.constexpr):
    """Tutorial 06's form: a rank-2 descriptor over a flattened [B*H*N, D] tensor; its block
    shape comes from the descriptor alone."""
    BN: tile.constexpr = q_desc.block_shape[0]
    row = tile.program_id(0) * N + tile.program_id(1) * BN
    q = q_desc.load([row, 0])
    offs = row + tile.arange(0, BN)
    tile.store(out + offs[:, None] * D + tile.arange(0, D)[None, :], q * 3, mask=offs[:, None] < q_desc.shape[0])


def test_host_descriptor_over_a_flattened_tensor_block_shape_and_dtype_in_the_key():
    """TensorDescriptor(base, shape, strides, block_shape) of another rank than its base; launches
    with another block shape, or another dtype, compile anew (both are in the cache key)."""
    B, H, N, D = 2, 3, 8, 16
    for bn, dtype in ((8, torch.float32), (4, torch.float32), (4, torch.float16)):
        q = torch.randn(B, H, N, D).to(dtype)
        out = torch.zeros(B * H * N, D, dtype=dtype)
        desc = tile.TensorDescriptor(q, shape=[B * H * N, D], strides=[D, 1], block_shape=[bn, D])
        rows_of_flat[(B * H, N // bn)](desc, out, N, D=D)
        assert torch.equal(out, q.reshape(-1, D) * 3)


@tile.kernel
def negative_offsets(x, y, M, N, BM: tile.constexpr, BN: tile.constexpr):
    desc = tile.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    out = tile.make_tensor_descriptor(y, shape=[BM, BN], strides=[BN, 1], block_shape=[BM, BN])
    out.store([0, 0], desc.load([-2, -3]))


def test_descriptor_negative_coordinates_read_zero():
    """A negative coordinate is out of bounds (as for TMA), not memory before the tensor."""
    x = torch.randn(8, 8)
    y = torch.full((8, 8), 5.0)
    negative_offsets[(1,)](x, y, 8, 8, BM=8, BN=8)
    ref = torch.zeros(8, 8)
    ref[2:, 3:] = x[:6, :5]
    assert torch.equal(y, ref)


@tile.kernel
def block_ptr_matmul(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
                     BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr):
    pm, pn = tile.program_id(0), tile.program_id(1)
    a_block = tile.make_block_ptr(base=a, shape=(M, K), strides=(sam, sak), offsets=(pm * BM, 0),
                                  block_shape=(BM, BK), order=(1, 0),)
    b_block = tile.make_block_ptr(base=b, shape=(K, N), strides=(sbk, sbn), offsets=(0, pn * BN),
                                  block_shape=(BK, BN), order=(1, 0),)
    acc = tile.zeros((BM, BN), dtype=tile.float32)
    for k in range(0, K, BK):
        x = tile.load(a_block, boundary_check=(0, 1))
        y = tile.load(b_block, boundary_check=(0, 1), padding_option="zero")
        acc = tile.dot(x, y, acc)
        a_block = tile.advance(a_block, (0, BK))
        b_block = tile.advance(b_block, (BK, 0))
    c_block = tile.make_block_ptr(c, (M, N), (scm, scn), (pm * BM, pn * BN), (BM, BN), (1, 0))
    tile.store(c_block, acc.to(tile.float16), boundary_check=(0, 1))


def test_block_ptr_matmul_k_loop():
    """Block pointers advanced through a run-time K loop (their offsets carried), B a transposed
    view (strides (1, K)), odd sizes."""
    M, N, K = 37, 45, 70
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(N, K, dtype=torch.float16).T
    c = torch.zeros(M, N, dtype=torch.float16)
    block_ptr_matmul[(3, 3)](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BM=16, BN=16, BK=16)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=2e-2, rtol=1e-2)


@tile.kernel
def block_ptr_checks(x, y, M, N, NAN: tile.constexpr, BM: tile.constexpr, BN: tile.constexpr):
    src = tile.make_block_ptr(x, (M, N), (N, 1), (tile.program_id(0) * BM, 0), (BM, BN), (1, 0))
    dst = tile.make_block_ptr(y, (M, BN), (BN, 1), (tile.program_id(0) * BM, 0), (BM, BN), (1, 0))
    if NAN:
        v = tile.load(src, boundary_check=(0, 1), padding_option="nan")
    else:
        v = tile.load(src, boundary_check=(0,))  # (the columns are whole: N == BN)
    tile.store(dst, v, boundary_check=(0,))


@pytest.mark.parametrize("nan", [False, True])
def test_block_ptr_boundary_check_and_padding(nan):
    M = 21
    x = torch.randn(M, 8 if nan else 16)
    y = torch.zeros(M, 16)
    block_ptr_checks[(3,)](x, y, M, x.shape[1], NAN=nan, BM=8, BN=16)
    if nan:
        assert torch.equal(y[:, :8], x) and y[:, 8:].isnan().all()
    else:
        assert torch.equal(y, x)


@tile.kernel
def block_ptr_branch_and_while(x, y, n, flip, B: tile.constexpr):
    """A block pointer chosen by a run-time if, and advanced in a while loop."""
    p = tile.make_block_ptr(x, (n,), (1,), (0,), (B,), (0,))
    if flip > 0:
        p = tile.advance(p, (B,))
    acc = tile.zeros([B], dtype=tile.float32)
    i = 0
    while i < n:
        acc += tile.load(p, boundary_check=(0,))
        p = tile.advance(p, (2 * B,))
        i += 2 * B
    tile.store(y + tile.arange(0, B), acc)


@pytest.mark.parametrize("flip", [0, 1])
def test_block_ptr_through_if_and_while(flip):
    x = torch.randn(70)
    y = torch.empty(8)
    block_ptr_branch_and_while[(1,)](x, y, 70, flip, B=8)
    blocks = torch.nn.functional.pad(x, (0, 96 - 70)).view(-1, 8)  # 5 iterations, every other block from `flip`
    torch.testing.assert_close(y, blocks[flip::2][:5].sum(0))


@pytest.mark.parametrize("body,message,line", [
    ("d = tile.make_tensor_descriptor(x, [n], [1], [B]); v = d.load([0, 0])", "must have 1 entries", 5),
    ("d = tile.make_tensor_descriptor(x, [n], [1], [12])", "powers of two", 5),
    ("d = tile.make_tensor_descriptor(x, [n, n], [1, n], [B, B])", "last stride must be 1", 5),
    ("p = tile.make_block_ptr(x, (n,), (1,), (0,), (B,), (0,)); v = tile.load(p, boundary_check=(1,))",
     "boundary_check must be dims", 5),
    ("p = tile.make_block_ptr(x, (n,), (1,), (0,), (B,), (0,)); v = tile.load(p, mask=n > 0)", "boundary_check", 5),
    ("p = tile.make_block_ptr(x, (n,), (1,), (0,), (B,), (0,))\n    for i in range(n):\n"
     "        p = tile.make_block_ptr(x, (n + 1,), (1,), (0,), (B,), (0,))", "must stay a block pointer", 6),
])
def test_bad_descriptors_name_the_line(tmp_path, body, message, line):
    src = tmp_path / "bad_desc.py"
    src.write_text(f"import tile\n\n@tile.kernel\ndef k(x, n, B: tile.constexpr):\n    {body}\n")
    import importlib.util

    spec = importlib.util.spec_from_file_location("bad_desc", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(tile.CompilationError, match=message) as e:
        mod.k[(1,)](torch.zeros(8), 7, B=8)
    assert f"bad_desc.py:{line}:" in str(e.value)


@pytest.mark.parametrize("make,message", [
    (lambda t: tile.TensorDescriptor(t, [8, 8], [1, 8], [8, 8]), "last stride must be 1"),
    (lambda t: tile.TensorDescriptor(t, [8, 8], [8, 1], [8, 6]), "powers of two"),
    (lambda t: tile.TensorDescriptor(t, [9, 8], [8, 1], [8, 8]), "reaches past the end"),
    (lambda t: tile.TensorDescriptor(t, [8], [8, 1], [8, 8]), "one length"),
])
def test_bad_host_descriptor_names_the_argument(make, message):
    t = torch.zeros(8, 8)
    with pytest.raises(tile.LaunchError, match=f"argument 'a_desc'.*{message}"):
        desc_matmul[(1, 1)](make(t), make(t), make(t), 8, BM=8, BN=8, BK=8, B_NK=False)


def _gpu_operands(dtype=torch.bfloat16, M=512, N=512, K=512, b_nk=False):
    a = torch.empty(M, K, dtype=dtype)
    b = torch.empty(N, K, dtype=dtype) if b_nk else torch.empty(K, N, dtype=dtype)
    return a, b, torch.empty(M, N, dtype=dtype)


@pytest.mark.parametrize("b_nk", [False, True])
def test_host_descriptor_matmul_sm90a_tma_and_wgmma(gpu_target, b_nk):
    """sm_90a: each descriptor load of the K loop is TMA copies into the rings the wgmma reads,
    from tensor maps the ABI builds from the descriptors' shape and stride arguments (b.T too:
    tutorial 09's N x K B)."""
    gpu_target("sm_90a")
    a, b, c = _gpu_operands(b_nk=b_nk)
    D = tile.TensorDescriptor.from_tensor
    launcher = desc_matmul.compile(D(a, [128, 64]), D(b, [128, 64] if b_nk else [64, 128]), D(c, [128, 128]), 512,
                                   BM=128, BN=128, BK=64, B_NK=b_nk, num_warps=4, num_stages=3)
    ptx = launcher.asm["ptx"]
    assert "cp.async.bulk.tensor.2d" in ptx and "wgmma.mma_async" in ptx and "cp.async.cg" not in ptx
    tma = [(e["arg"], e["rows"], e["cols"], e["stride"]) for e in launcher.metadata["abi"] if e["part"] == "tma"]
    # a_desc expands to args 0 (base), 1-2 (shape), 3-4 (strides); b_desc to 5..9
    assert tma == [(0, ["arg", 1], ["arg", 2], ["arg", 3]), (5, ["arg", 6], ["arg", 7], ["arg", 8])]


@tile.kernel
def device_desc_matmul(a, b, c, M, N, K, sam, sbk, scm, BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr):
    a_desc = tile.make_tensor_descriptor(a, shape=[M, K], strides=[sam, 1], block_shape=[BM, BK])
    b_desc = tile.make_tensor_descriptor(b, shape=[K, N], strides=[sbk, 1], block_shape=[BK, BN])
    c_desc = tile.make_tensor_descriptor(c, shape=[M, N], strides=[scm, 1], block_shape=[BM, BN])
    pm, pn = tile.program_id(0), tile.program_id(1)
    acc = tile.zeros((BM, BN), dtype=tile.float32)
    for k in range(0, tile.cdiv(K, BK)):
        acc = tile.dot(a_desc.load([pm * BM, k * BK]), b_desc.load([k * BK, pn * BN]), acc)
    c_desc.store([pm * BM, pn * BN], acc.to(tile.bfloat16))


def test_device_descriptor_matmul_cpu_and_sm90a(gpu_target):
    M, N, K = 40, 24, 50
    a, b = torch.randn(M, K, dtype=torch.bfloat16), torch.randn(K, N, dtype=torch.bfloat16)
    c = torch.zeros(M, N, dtype=torch.bfloat16)
    device_desc_matmul[(3, 2)](a, b, c, M, N, K, K, N, N, BM=16, BN=16, BK=16)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=5e-2, rtol=2e-2)
    gpu_target("sm_90a")
    a, b, c = _gpu_operands()
    launcher = device_desc_matmul.compile(a, b, c, 512, 512, 512, 512, 512, 512, BM=128, BN=128, BK=64,
                                          num_warps=4, num_stages=3)
    ptx = launcher.asm["ptx"]
    assert "cp.async.bulk.tensor.2d" in ptx and "wgmma.mma_async" in ptx


def test_descriptor_matmul_sm80_cp_async(gpu_target):
    gpu_target("sm_80")
    a, b, c = _gpu_operands(dtype=torch.float16)
    launcher = device_desc_matmul.compile(a, b, c, 512, 512, 512, 512, 512, 512, BM=64, BN=64, BK=32,
                                          num_warps=4, num_stages=3)
    ptx = launcher.asm["ptx"]
    assert "cp.async.cg" in ptx and "mma.sync" in ptx


def test_block_ptr_matmul_sm90a(gpu_target):
    """sm_90a: the block-pointer K loop compiles to wgmma on TMA copies: its loads' offsets are
    loop-carried scalars, which `tile-induction-offsets` makes functions of the loop index."""
    gpu_target("sm_90a")
    a, b, c = _gpu_operands(dtype=torch.float16)
    launcher = block_ptr_matmul.compile(a, b, c, 512, 512, 512, *a.stride(), *b.stride(), *c.stride(),
                                        BM=128, BN=128, BK=64, num_warps=4, num_stages=3)
    assert "wgmma.mma_async" in launcher.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier" in launcher.asm["ptx"]


@tile.kernel
def persistent_desc_matmul(a, b, c, M, N, K, BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr,
                           NUM_SMS: tile.constexpr):
    """Tutorial 09's device-side descriptor persistent matmul (B stored N x K, used as b.T)."""
    a_desc = tile.make_tensor_descriptor(a, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tile.make_tensor_descriptor(b, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tile.make_tensor_descriptor(c, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    num_pid_n = tile.cdiv(N, BN)
    for tile_id in range(tile.program_id(0), tile.cdiv(M, BM) * num_pid_n, NUM_SMS):
        pid_m, pid_n = tile_id // num_pid_n, tile_id % num_pid_n
        acc = tile.zeros((BM, BN), dtype=tile.float32)
        for ki in range(tile.cdiv(K, BK)):
            acc = tile.dot(a_desc.load([pid_m * BM, ki * BK]), b_desc.load([pid_n * BN, ki * BK]).T, acc)
        c_desc.store([pid_m * BM, pid_n * BN], acc.to(tile.bfloat16))


def test_persistent_descriptor_matmul_cpu_and_sm90a(gpu_target):
    """CPU: odd sizes, 3 programs over 9 tiles. sm_90a: TMA loads into wgmma, and the output tiles
    by TMA stores (tile-tma-stores), without spills."""
    M, N, K = 40, 36, 50
    a, b = torch.randn(M, K, dtype=torch.bfloat16), torch.randn(N, K, dtype=torch.bfloat16)
    c = torch.zeros(M, N, dtype=torch.bfloat16)
    persistent_desc_matmul[(3,)](a, b, c, M, N, K, BM=16, BN=16, BK=16, NUM_SMS=3)
    torch.testing.assert_close(c.float(), a.float() @ b.float().T, atol=5e-2, rtol=2e-2)
    gpu_target("sm_90a")
    a, b, c = _gpu_operands(b_nk=True)
    launcher = persistent_desc_matmul.compile(a, b, c, 512, 512, 512, BM=128, BN=128, BK=64, NUM_SMS=132,
                                              num_warps=4, num_stages=3)
    ptx = launcher.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier" in ptx and "wgmma.mma_async" in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx
    assert launcher.metadata["ptxas"]["spill_stores"] == 0


# Tutorial 06's block-pointer forward (tl. -> tile., tl.math.exp2 -> tile.exp2; tl.multiple_of and the
# fp8 V path dropped): Q at a 64-bit base offset, K read as HEAD_DIM x N_CTX (order=(0, 1)), the K and
# V block pointers advanced through the loop of a @tile.func, loads without boundary_check.
@tile.func
def _attn_fwd_inner(acc, l_i, m_i, q, K_block_ptr, V_block_ptr, start_m, qk_scale,
                    BLOCK_M: tile.constexpr, HEAD_DIM: tile.constexpr, BLOCK_N: tile.constexpr,
                    CAUSAL: tile.constexpr, offs_m, offs_n, N_CTX: tile.constexpr):
    if CAUSAL:
        causal_start = start_m * BLOCK_M
    else:
        causal_start = N_CTX
    lo, hi = 0, N_CTX
    K_block_ptr = tile.advance(K_block_ptr, (0, lo))
    V_block_ptr = tile.advance(V_block_ptr, (lo, 0))
    for start_n in range(lo, hi, BLOCK_N):
        k = tile.load(K_block_ptr)
        qk = tile.dot(q, k)
        if start_n >= causal_start:
            mask = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tile.where(mask, 0, -1.0e6)
            m_ij = tile.maximum(m_i, tile.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tile.maximum(m_i, tile.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tile.exp2(qk)
        l_ij = tile.sum(p, 1)
        alpha = tile.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tile.load(V_block_ptr)
        p = p.to(tile.float16)
        acc = tile.dot(p, v, acc)
        m_i = m_ij
        V_block_ptr = tile.advance(V_block_ptr, (BLOCK_N, 0))
        K_block_ptr = tile.advance(K_block_ptr, (0, BLOCK_N))
    return acc, l_i, m_i


@tile.kernel
def _attn_fwd(Q, K, V, sm_scale, M, Out,
              stride_qz, stride_qh, stride_qm, stride_qk,
              stride_kz, stride_kh, stride_kn, stride_kk,
              stride_vz, stride_vh, stride_vk, stride_vn,
              stride_oz, stride_oh, stride_om, stride_on,
              Z, H, N_CTX: tile.constexpr,
              HEAD_DIM: tile.constexpr, BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr, CAUSAL: tile.constexpr):
    tile.static_assert(BLOCK_N <= HEAD_DIM)
    start_m = tile.program_id(0)
    off_hz = tile.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    qvk_offset = off_z.to(tile.int64) * stride_qz + off_h.to(tile.int64) * stride_qh
    Q_block_ptr = tile.make_block_ptr(base=Q + qvk_offset, shape=(N_CTX, HEAD_DIM), strides=(stride_qm, stride_qk),
                                      offsets=(start_m * BLOCK_M, 0), block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    V_block_ptr = tile.make_block_ptr(base=V + qvk_offset, shape=(N_CTX, HEAD_DIM), strides=(stride_vk, stride_vn),
                                      offsets=(0, 0), block_shape=(BLOCK_N, HEAD_DIM), order=(1, 0))
    K_block_ptr = tile.make_block_ptr(base=K + qvk_offset, shape=(HEAD_DIM, N_CTX), strides=(stride_kk, stride_kn),
                                      offsets=(0, 0), block_shape=(HEAD_DIM, BLOCK_N), order=(0, 1))
    O_block_ptr = tile.make_block_ptr(base=Out + qvk_offset, shape=(N_CTX, HEAD_DIM), strides=(stride_om, stride_on),
                                      offsets=(start_m * BLOCK_M, 0), block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    offs_m = start_m * BLOCK_M + tile.arange(0, BLOCK_M)
    offs_n = tile.arange(0, BLOCK_N)
    m_i = tile.zeros([BLOCK_M], dtype=tile.float32) - float("inf")
    l_i = tile.zeros([BLOCK_M], dtype=tile.float32) + 1.0
    acc = tile.zeros([BLOCK_M, HEAD_DIM], dtype=tile.float32)
    qk_scale = sm_scale
    qk_scale *= 1.44269504
    q = tile.load(Q_block_ptr)
    acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K_block_ptr, V_block_ptr, start_m, qk_scale,
                                    BLOCK_M, HEAD_DIM, BLOCK_N, CAUSAL, offs_m, offs_n, N_CTX)
    m_i += tile.log2(l_i)
    acc = acc / l_i[:, None]
    m_ptrs = M + off_hz * N_CTX + offs_m
    tile.store(m_ptrs, m_i)
    tile.store(O_block_ptr, acc.to(tile.float16))


def _attn_args(Z, H, N, D):
    q, k, v = (torch.randn(Z, H, N, D, dtype=torch.float16) for _ in range(3))
    o, m = torch.empty_like(q), torch.empty(Z, H, N)
    return (q, k, v), o, (q, k, v, 0.5, m, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(), Z, H)


def test_tutorial_06_block_pointer_attention_cpu_and_sm90a(gpu_target):
    (q, k, v), o, args = _attn_args(2, 2, 64, 16)
    _attn_fwd[(4, 4)](*args, N_CTX=64, HEAD_DIM=16, BLOCK_M=16, BLOCK_N=16, CAUSAL=True)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True, scale=0.5)
    torch.testing.assert_close(o.float(), ref, atol=2e-3, rtol=2e-3)
    gpu_target("sm_90a")
    _, _, args = _attn_args(1, 2, 1024, 64)
    launcher = _attn_fwd.compile(*args, N_CTX=1024, HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64, CAUSAL=True,
                                 num_warps=8, num_stages=3)
    assert "wgmma.mma_async" in launcher.asm["ptx"] and launcher.metadata["ptxas"]["spill_stores"] == 0
    # The CPU's 16 x 16 blocks, too small for the tensor cores (the linalg path): the causal branch
    # yields a buffer written in shared memory or one in registers, whose types disagreed (an
    # internal verifier error at the `if`); the buffers control flow merges now share one space.
    _, _, args = _attn_args(2, 2, 64, 16)
    small = _attn_fwd.compile(*args, N_CTX=64, HEAD_DIM=16, BLOCK_M=16, BLOCK_N=16, CAUSAL=True)
    assert "mma" not in small.asm["ptx"] and small.metadata["ptxas"]["spill_stores"] == 0


# Tutorial 06's TMA forward (tl. -> tile., tl.float8e5 -> tile.float8e5m2), with host descriptors over
# the flattened [Z*H*N, D] tensors; CARRIED=False computes the K/V row from the loop index instead of
# the tutorial's loop-carried `offsetkv_y += BLOCK_N`.
@tile.func
def _attn_fwd_inner_tma(acc, l_i, m_i, q, desc_k, desc_v, offset_y, dtype: tile.constexpr, start_m, qk_scale,
                        BLOCK_M: tile.constexpr, HEAD_DIM: tile.constexpr, BLOCK_N: tile.constexpr,
                        STAGE: tile.constexpr, offs_m, offs_n, N_CTX: tile.constexpr, CARRIED: tile.constexpr):
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
    else:
        lo, hi = 0, N_CTX
    offsetkv_y = offset_y + lo
    for start_n in range(lo, hi, BLOCK_N):
        if not CARRIED:  # (the index form)
            offsetkv_y = offset_y + start_n
        k = desc_k.load([offsetkv_y, 0]).T
        qk = tile.dot(q, k)
        if STAGE == 2:
            mask = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tile.where(mask, 0, -1.0e6)
            m_ij = tile.maximum(m_i, tile.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tile.maximum(m_i, tile.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tile.exp2(qk)
        l_ij = tile.sum(p, 1)
        alpha = tile.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = desc_v.load([offsetkv_y, 0])
        p = p.to(dtype)
        acc = tile.dot(p, v, acc)
        m_i = m_ij
        if CARRIED:
            offsetkv_y += BLOCK_N
    return acc, l_i, m_i


@tile.kernel
def _attn_fwd_tma(sm_scale, M, Z, H, desc_q, desc_k, desc_v, desc_o, N_CTX,
                  HEAD_DIM: tile.constexpr, BLOCK_M: tile.constexpr, BLOCK_N: tile.constexpr,
                  FP8_OUTPUT: tile.constexpr, STAGE: tile.constexpr, CARRIED: tile.constexpr = True):
    dtype = tile.float8e5m2 if FP8_OUTPUT else tile.float16
    tile.static_assert(BLOCK_N <= HEAD_DIM)
    start_m = tile.program_id(0)
    off_hz = tile.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    offset_y = off_z + off_h * N_CTX
    qo_offset_y = offset_y + start_m * BLOCK_M
    offs_m = start_m * BLOCK_M + tile.arange(0, BLOCK_M)
    offs_n = tile.arange(0, BLOCK_N)
    m_i = tile.zeros([BLOCK_M], dtype=tile.float32) - float("inf")
    l_i = tile.zeros([BLOCK_M], dtype=tile.float32) + 1.0
    acc = tile.zeros([BLOCK_M, HEAD_DIM], dtype=tile.float32)
    qk_scale = sm_scale
    qk_scale *= 1.44269504
    q = desc_q.load([qo_offset_y, 0])
    if STAGE & 1:
        acc, l_i, m_i = _attn_fwd_inner_tma(acc, l_i, m_i, q, desc_k, desc_v, offset_y, dtype, start_m, qk_scale,
                                            BLOCK_M, HEAD_DIM, BLOCK_N, 4 - STAGE, offs_m, offs_n, N_CTX, CARRIED)
    if STAGE & 2:
        acc, l_i, m_i = _attn_fwd_inner_tma(acc, l_i, m_i, q, desc_k, desc_v, offset_y, dtype, start_m, qk_scale,
                                            BLOCK_M, HEAD_DIM, BLOCK_N, 2, offs_m, offs_n, N_CTX, CARRIED)
    m_i += tile.log2(l_i)
    acc = acc / l_i[:, None]
    m_ptrs = M + off_hz * N_CTX + offs_m
    tile.store(m_ptrs, m_i)
    desc_o.store([qo_offset_y, 0], acc.to(dtype))


def _attn_tma_args(Z, H, N, D, BM, BN):
    q, k, v = (torch.randn(Z, H, N, D, dtype=torch.float16) for _ in range(3))
    o, m = torch.empty_like(q), torch.empty(Z, H, N)
    descs = [tile.TensorDescriptor(t, [Z * H * N, D], [D, 1], [BM if t is q or t is o else BN, D]) for t in (q, k, v, o)]
    return (q, k, v), o, (0.5, m, Z, H, *descs, N)


@pytest.mark.parametrize("carried", [True, False])
def test_tutorial_06_descriptor_attention_cpu_and_sm90a(gpu_target, carried):
    """CPU against SDPA (causal: both stages). sm_90a: wgmma; the K/V loads are TMA copies in the
    index form and with the tutorial's loop-carried row (`tile-induction-offsets`)."""
    (q, k, v), o, args = _attn_tma_args(1, 2, 64, 16, 16, 16)
    meta = dict(HEAD_DIM=16, BLOCK_M=16, BLOCK_N=16, FP8_OUTPUT=False, STAGE=3, CARRIED=carried)
    _attn_fwd_tma[(4, 2)](*args, **meta)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True, scale=0.5)
    torch.testing.assert_close(o.float(), ref, atol=2e-3, rtol=2e-3)
    gpu_target("sm_90a")
    _, _, args = _attn_tma_args(1, 2, 1024, 64, 128, 64)
    launcher = _attn_fwd_tma.compile(*args, **{**meta, "HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64},
                                     num_warps=8, num_stages=3)
    ptx = launcher.asm["ptx"]
    assert "wgmma.mma_async" in ptx and launcher.metadata["ptxas"]["spill_stores"] == 0
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier" in ptx


@tile.jit
def _chunk_linear_attn_fwd(
    q, k, v, o,
    s_qk_h, s_qk_t, s_qk_d,
    s_vo_h, s_vo_t, s_vo_d,
    scale,
    T: tile.constexpr,
    K: tile.constexpr,
    V: tile.constexpr,
    BT: tile.constexpr,
    BK: tile.constexpr,
    BV: tile.constexpr,
):
    """Causal linear attention by chunks, as flash-linear-attention writes it: block pointers
    made in the loop (K's transposed through order=(0, 1)), the state carried in registers, and
    the store's cast spelled `p_o.dtype.element_ty`."""
    i_v, i_bh = tile.program_id(0), tile.program_id(1)
    o_i = tile.arange(0, BT)
    m_s = o_i[:, None] >= o_i[None, :]
    b_h = tile.zeros([BK, BV], dtype=tile.float32)
    for i_t in range(0, tile.cdiv(T, BT)):
        p_q = tile.make_block_ptr(q + i_bh * s_qk_h, (T, K), (s_qk_t, s_qk_d), (i_t * BT, 0), (BT, BK), (1, 0))
        p_k = tile.make_block_ptr(k + i_bh * s_qk_h, (K, T), (s_qk_d, s_qk_t), (0, i_t * BT), (BK, BT), (0, 1))
        p_v = tile.make_block_ptr(v + i_bh * s_vo_h, (T, V), (s_vo_t, s_vo_d), (i_t * BT, i_v * BV), (BT, BV), (1, 0))
        p_o = tile.make_block_ptr(o + i_bh * s_vo_h, (T, V), (s_vo_t, s_vo_d), (i_t * BT, i_v * BV), (BT, BV), (1, 0))
        b_q = tile.load(p_q, boundary_check=(0, 1))
        b_q = (b_q * scale).to(b_q.dtype)
        b_k = tile.load(p_k, boundary_check=(0, 1))
        b_v = tile.load(p_v, boundary_check=(0, 1))
        b_s = tile.dot(b_q, b_k, allow_tf32=False)
        b_s = tile.where(m_s, b_s, 0)
        b_o = tile.dot(b_s.to(b_q.dtype), b_v, allow_tf32=False)
        b_o += tile.dot(b_q, b_h.to(b_q.dtype), allow_tf32=False)
        b_h += tile.dot(b_k, b_v, allow_tf32=False)
        tile.store(p_o, b_o.to(p_o.dtype.element_ty), boundary_check=(0, 1))


def _chunk_linear_attn(q, k, v, BT=32, BV=32):
    B, H, T, K = q.shape
    V = v.shape[-1]
    o = torch.empty_like(v)
    _chunk_linear_attn_fwd[(tile.cdiv(V, BV), B * H)](
        q, k, v, o,
        q.stride(1), q.stride(2), q.stride(3),
        v.stride(1), v.stride(2), v.stride(3),
        K ** -0.5,
        T=T, K=K, V=V, BT=BT, BK=K, BV=BV,
        num_warps=4,
    )
    return o


def test_linear_attention_block_pointers_cpu_and_sm90a(gpu_target):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 100, 64, dtype=torch.float16) for _ in range(3))
    o = _chunk_linear_attn(q, k / 8, v)
    s = ((q.float() * 64 ** -0.5) @ (k.float() / 8).transpose(-1, -2)).tril()
    torch.testing.assert_close(o.float(), s @ v.float(), rtol=2e-2, atol=2e-2)
    gpu_target("sm_90a")
    meta = [torch.empty_like(t, device="meta") for t in (q, k, v)]
    launcher = _chunk_linear_attn_fwd.compile(*meta, meta[2], 3 * 100 * 64, 64, 1, 3 * 100 * 64, 64, 1, 0.125,
                                              T=100, K=64, V=64, BT=32, BK=64, BV=32, num_warps=4)
    assert launcher.metadata["ptxas"]["spill_stores"] == 0
    assert "mma" in launcher.asm["ptx"]
