"""Triton source as written: Python's min/max on run-time values, `x.cast`, module-level
`tile.constexpr(...)` globals (in kernels and on the host), trailing commas (black), on the
CPU against torch and compiled for sm_90a / sm_80."""

import pytest
import torch

import tile

MAX_FUSED_SIZE = tile.constexpr(256)
SCALE = tile.constexpr(0.5)


@tile.kernel
def grouped_matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_SIZE_M: tile.constexpr,
    BLOCK_SIZE_N: tile.constexpr,
    BLOCK_SIZE_K: tile.constexpr,
    GROUP_SIZE_M: tile.constexpr,
):
    """Triton's matmul tutorial, its grouped program order and its hints included."""
    pid = tile.program_id(axis=0)
    num_pid_m = tile.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tile.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tile.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N)) % N
    offs_am = tile.max_contiguous(tile.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)  # (hints: accepted)
    offs_k = tile.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tile.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tile.float32)
    for k in range(0, tile.cdiv(K, BLOCK_SIZE_K)):
        a = tile.load(
            a_ptrs,
            mask=offs_k[None, :] < K - k * BLOCK_SIZE_K,
            other=0.0,
        )
        b = tile.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tile.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.cast(tile.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tile.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tile.store(c_ptrs, c, mask=c_mask)


def _grouped_matmul(M, N, K, device="cpu"):
    torch.manual_seed(0)
    a, b = torch.randn(M, K).half(), torch.randn(N, K).half().T  # b: a strided (column-major) view
    c = torch.empty(M, N, dtype=torch.float16, device=device)
    a_d, b_d = a.to(device), b.to(device)
    grid = lambda meta: (tile.cdiv(M, meta["BLOCK_SIZE_M"]) * tile.cdiv(N, meta["BLOCK_SIZE_N"]),)  # noqa: E731
    grouped_matmul_kernel[grid](
        a_d, b_d, c,
        M, N, K,
        a_d.stride(0), a_d.stride(1),
        b_d.stride(0), b_d.stride(1),
        c.stride(0), c.stride(1),
        BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32,
        GROUP_SIZE_M=2,
    )
    return a, b, c


def test_grouped_matmul_with_python_min():
    a, b, c = _grouped_matmul(100, 72, 80)  # 4 x 3 programs: the last group of rows is shorter
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=2e-2, rtol=1e-2)


@tile.kernel
def min_max_kernel(x, y, out, n, BLOCK: tile.constexpr,):
    pid = tile.program_id(0)
    end = min(n, (pid + 1) * BLOCK)  # a run-time scalar against a run-time scalar
    offs = pid * BLOCK + tile.arange(0, BLOCK)
    mask = offs < end
    a = tile.load(x + offs, mask=mask, other=0.0)
    b = tile.load(y + offs, mask=mask, other=0.0)
    tile.store(out + offs, min(a, b), mask=mask)
    tile.store(out + n + offs, max(a, SCALE, b), mask=mask)  # three operands, a global constexpr among them
    tile.store(out + 2 * n + offs, max(a, 1).to(tile.float32) * min(BLOCK, 2), mask=mask)


def _min_max(device="cpu"):
    torch.manual_seed(1)
    n = 70
    x, y = torch.randn(n), torch.randn(n)
    x[3], y[5], x[7], y[7] = float("nan"), float("nan"), float("nan"), float("nan")
    out = torch.full((3 * n,), -7.0, device=device)
    min_max_kernel[(tile.cdiv(n, 32),)](x.to(device), y.to(device), out, n, BLOCK=32)
    return x, y, out


def test_python_min_max_on_tiles_and_scalars():
    x, y, out = _min_max()
    n = x.numel()
    # Triton's builtin min/max: a NaN loses to a number (fmin/fmax)
    torch.testing.assert_close(out[:n], torch.fmin(x, y), equal_nan=True)
    torch.testing.assert_close(out[n:2 * n], torch.fmax(torch.fmax(x, torch.tensor(0.5)), y), equal_nan=True)
    torch.testing.assert_close(out[2 * n:], torch.fmax(x, torch.tensor(1.0)) * 2, equal_nan=True)


@tile.kernel
def cast_kernel(x, out_i, out_h, out_bits, n, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    v = tile.load(x + offs, mask=mask)
    tile.store(out_i + offs, v.cast(tile.int32), mask=mask)
    tile.store(out_h + offs, tile.cast(v, tile.float16, fp_downcast_rounding="rtne"), mask=mask)
    tile.store(out_bits + offs, v.cast(tile.int32, bitcast=True) ^ v.to(tile.int32, bitcast=True), mask=mask)
    tile.store(out_bits + n + offs, v.cast(tile.int32, bitcast=True), mask=mask)


def _cast(device="cpu"):
    x = torch.linspace(-40.0, 40.0, 45)
    outs = [torch.empty(45, dtype=torch.int32, device=device), torch.empty(45, dtype=torch.float16, device=device),
            torch.empty(90, dtype=torch.int32, device=device)]
    cast_kernel[(3,)](x.to(device), *outs, 45, BLOCK=16)
    return x, outs


def test_cast_method_and_bitcast():
    x, (i, h, bits) = _cast()
    assert torch.equal(i, x.to(torch.int32))
    assert torch.equal(h, x.half())
    assert torch.equal(bits[:45], torch.zeros(45, dtype=torch.int32))
    assert torch.equal(bits[45:], x.view(torch.int32))


def test_bitcast_needs_one_width():
    @tile.kernel
    def bad(x, out):
        tile.store(out, tile.load(x).cast(tile.float16, bitcast=True))

    with pytest.raises(tile.CompilationError, match="bitcast needs types of one width"):
        bad[(1,)](torch.ones(1), torch.ones(1, dtype=torch.float16))


@tile.func
def fused_limit(block, limit=MAX_FUSED_SIZE):
    tile.static_assert(block <= limit, "BLOCK past MAX_FUSED_SIZE")
    return tile.arange(0, limit)  # (a compile-time int here, not the wrapper)


@tile.kernel
def fused_size_kernel(x, out, n, BLOCK: tile.constexpr):
    fused_limit(BLOCK)
    kind = 1 if isinstance(BLOCK, tile.constexpr) else 0
    kind += 2 if isinstance(n, tile.constexpr) else 0
    offs = tile.arange(0, BLOCK)
    v = tile.load(x + offs, mask=offs < n, other=0.0)
    tile.store(out + offs, v * MAX_FUSED_SIZE + kind, mask=offs < n)


def test_constexpr_global_on_the_host_and_in_kernels():
    assert isinstance(MAX_FUSED_SIZE, tile.constexpr) and MAX_FUSED_SIZE.value == 256
    for n in (37, 1000):
        block = min(MAX_FUSED_SIZE, 1 << (n - 1).bit_length())  # Triton's host code: an int, or the constexpr
        assert int(block) == (64 if n == 37 else 256)
        x = torch.randn(n)
        out = torch.zeros(n)
        fused_size_kernel[(1,)](x, out, n, BLOCK=block)
        m = min(n, int(block))
        torch.testing.assert_close(out[:m], x[:m] * 256 + 1)
    assert MAX_FUSED_SIZE * 2 == 512 and 4 < MAX_FUSED_SIZE and -MAX_FUSED_SIZE == -256
    assert list(range(tile.constexpr(3))) == [0, 1, 2]


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_triton_spellings_compile_for_the_gpu(target, gpu_target):
    gpu_target(target)
    _grouped_matmul(100, 72, 80, device="meta")
    _cast(device="meta")
    x, out = torch.empty(70, device="meta"), torch.empty(210, device="meta")
    launcher = min_max_kernel.compile(x, x, out, 70, BLOCK=32)
    ptx = launcher.asm["ptx"]
    assert "min.f32" in ptx and "max.f32" in ptx  # fmin/fmax, not the NaN-propagating min.NaN.f32
    assert "min.NaN" not in ptx
    assert "min.s32" in ptx  # min(n, (pid + 1) * BLOCK)
    launcher = cast_kernel.compile(x, torch.empty(45, dtype=torch.int32, device="meta"),
                                   torch.empty(45, dtype=torch.float16, device="meta"),
                                   torch.empty(90, dtype=torch.int32, device="meta"), 45, BLOCK=16)
    assert "cvt.rzi.s32.f32" in launcher.asm["ptx"]


def _scans():
    @tile.kernel
    def cumsum(x):
        tile.store(x + tile.arange(0, 4), tile.cumsum(tile.load(x + tile.arange(0, 4)), 0))

    @tile.kernel
    def sort(x):
        tile.store(x + tile.arange(0, 4), tile.sort(tile.load(x + tile.arange(0, 4))))

    @tile.kernel
    def flip(x):
        tile.store(x + tile.arange(0, 4), tile.flip(tile.load(x + tile.arange(0, 4)), 0))

    return {"cumsum": cumsum, "sort": sort, "flip": flip}


def test_cumsum_as_triton_spells_it():
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    _scans()["cumsum"][(1,)](x)
    assert x.tolist() == [1.0, 3.0, 6.0, 10.0]


@pytest.mark.parametrize("name", ["sort", "flip"])
def test_not_yet_names(name):
    if hasattr(tile, name):
        pytest.skip(f"tile.{name} is in the language now")
    with pytest.raises(tile.CompilationError, match=rf"tile.{name} \(Triton's tl.{name}\) is not in the language yet"):
        _scans()[name][(1,)](torch.ones(4))


@tile.kernel
def print_kernel(x, BLOCK: tile.constexpr):
    print("x", tile.load(x + tile.arange(0, BLOCK)), BLOCK)


def test_print_is_device_print(capfd):
    print_kernel[(1,)](torch.tensor([0.5, 2.0]), BLOCK=2)
    lines = capfd.readouterr().out.splitlines()
    assert lines == ["pid (0, 0, 0) idx (0) x (operand 0): 0.500000", "pid (0, 0, 0) idx (1) x (operand 0): 2.000000",
                     "pid (0, 0, 0) idx () x (operand 1): 2"]


def test_print_needs_a_prefix():
    @tile.kernel
    def prints(x):
        print(tile.load(x))

    with pytest.raises(tile.CompilationError, match="tile.device_print"):
        prints[(1,)](torch.ones(4))


@tile.func
def scaled(v, HAS_W: tile.constexpr, w=None):
    if HAS_W:
        return v * w  # an early return under a compile-time if
    return v


@tile.kernel
def early_return_kernel(x, w, out, n_rows, n_cols, HAS_W: tile.constexpr, GUARD: tile.constexpr, BLOCK: tile.constexpr):
    row = tile.program_id(0)
    if GUARD:
        if row >= n_rows:  # Triton's `if pid >= n: return`, under a compile-time if
            return
    elif row >= n_rows + 100:
        return
    cols = tile.arange(0, BLOCK)
    v = tile.load(x + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    if not HAS_W:
        tile.store(out + row * n_cols + cols, v + 1.0, mask=cols < n_cols)
        return
    wv = tile.load(w + cols, mask=cols < n_cols, other=0.0)
    tile.store(out + row * n_cols + cols, scaled(v, HAS_W, wv), mask=cols < n_cols)


def _early_return(has_w, device="cpu"):
    torch.manual_seed(2)
    x, w = torch.randn(5, 20), torch.randn(20)
    out = torch.full((7, 20), 9.0, device=device)  # rows 5 and 6: programs that return at once
    early_return_kernel[(7,)](x.to(device), w.to(device), out, 5, 20, HAS_W=has_w, GUARD=True, BLOCK=32)
    return x, w, out


@pytest.mark.parametrize("has_w", [False, True])
def test_early_return_under_compile_time_if(has_w):
    x, w, out = _early_return(has_w)
    torch.testing.assert_close(out[:5], x * w if has_w else x + 1.0)
    assert torch.equal(out[5:], torch.full((2, 20), 9.0))


@tile.kernel
def python_number_loop_kernel(x, out, n_cols, stride, BLOCK: tile.constexpr, NEVER: tile.constexpr):
    row = tile.program_id(0)
    acc = 0  # a Python int; the loop carries it as what the body makes it (float32)
    count = 0  # stays int32
    unused = 0.0  # reassigned only under a false compile-time if: still a Python number after the loop
    halves = 0
    for start in range(0, n_cols, BLOCK):
        cols = start + tile.arange(0, BLOCK)
        v = tile.load(x + row * stride + cols, mask=cols < n_cols, other=0.0)
        acc += tile.sum(v)
        count += 1
        if NEVER:
            unused = 1.0
        for j in range(2):  # retyped through an inner loop and a run-time if
            if start % (2 * BLOCK) == 0:
                halves = halves + 0.5 * j
    tile.static_assert(unused == 0.0, "unused changed")
    k = 0
    squares = 0
    while k < count:  # (a while too)
        squares += k * k * 1.5
        k += 1
    tile.store(out + row * 4, acc)
    tile.store(out + row * 4 + 1, count.to(tile.float32) + unused)
    tile.store(out + row * 4 + 2, halves)
    tile.store(out + row * 4 + 3, squares)


def _python_number_loop(device="cpu"):
    torch.manual_seed(3)
    x = torch.randn(3, 80)[:, :70]  # a strided view, 70 = 4 blocks of 16 and a partial one
    out = torch.zeros(12, device=device)
    python_number_loop_kernel[(3,)](x.to(device), out, 70, x.stride(0), BLOCK=16, NEVER=False)
    return x, out.view(3, 4)


def test_python_number_reassigned_in_a_loop():
    x, out = _python_number_loop()
    blocks = -(-70 // 16)
    torch.testing.assert_close(out[:, 0], x.sum(1))
    assert out[:, 1].tolist() == [blocks] * 3
    assert out[:, 2].tolist() == [0.5 * ((blocks + 1) // 2)] * 3
    assert out[:, 3].tolist() == [1.5 * sum(k * k for k in range(blocks))] * 3


def test_python_number_that_becomes_a_tile_is_an_error():
    @tile.kernel
    def bad(x, n, BLOCK: tile.constexpr):
        acc = 0
        for i in range(n):
            acc = acc + tile.load(x + tile.arange(0, BLOCK))
        tile.store(x + tile.arange(0, BLOCK), acc)

    with pytest.raises(tile.CompilationError, match="'acc' changes type"):
        bad[(1,)](torch.ones(8), 2, BLOCK=8)


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_control_flow_spellings_compile_for_the_gpu(target, gpu_target):
    gpu_target(target)
    _early_return(True, device="meta")
    _early_return(False, device="meta")
    _python_number_loop(device="meta")


@tile.kernel
def dtype_names_kernel(x_ptr, q_ptr, y_ptr, n, BLOCK: tile.constexpr):
    tile.static_assert(q_ptr.dtype.element_ty == tile.float8e4nv)
    tile.static_assert(isinstance(x_ptr.dtype, tile.pointer_type) and x_ptr.dtype.element_ty == tile.int16)
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    x = tile.load(x_ptr + offs, mask=mask)  # int16
    doubled = x * 2 - 7  # int16 arithmetic, wrapping as torch's
    tile.store(x_ptr + offs, doubled, mask=mask)
    q = tile.load((q_ptr + 1) + offs - 1, mask=mask).to(tile.float32)
    tile.static_assert(q.dtype.is_floating() and q.dtype.is_fp32() and q_ptr.dtype.element_ty.is_fp8())
    tile.static_assert(x.dtype.is_int() and x.dtype.primitive_bitwidth == 16 and not x.dtype.is_floating())
    total = tile.sum(x, axis=0)  # a narrow int adds up in int32
    y = x.to(y_ptr.dtype.element_ty) * q + total.to((y_ptr + 0).dtype.element_ty)
    tile.store(y_ptr + offs, y, mask=mask)


def _dtype_names(device="cpu"):
    x = torch.tensor([-30000, -5, 0, 3, 17, 20000, 32767, 9, -1], dtype=torch.int16)
    q = torch.linspace(-3.0, 3.0, 9).to(torch.float8_e4m3fn)
    y = torch.empty(9, device=device)
    x_d = x.clone().to(device)
    dtype_names_kernel[(1,)](x_d, q.to(device), y, 9, BLOCK=16)
    return x, q, x_d, y


def test_triton_dtype_names():
    assert tile.float8e4nv is tile.float8e4m3 and tile.float8e5 is tile.float8e5m2
    assert tile.int16.bits == 16 and tile.pointer_type(tile.float16).element_ty is tile.float16
    x, q, x_after, y = _dtype_names()
    assert torch.equal(x_after, x * 2 - 7)
    torch.testing.assert_close(y, x.float() * q.float() + x.to(torch.int32).sum().float())


def test_wider_unsigned_ints_are_not_in_the_language_yet():
    """uint8 is (tests/test_uint8.py); uint16, uint32 and uint64 not yet."""
    @tile.kernel
    def unsigned(x):
        tile.store(x, tile.load(x).to(tile.uint16))

    with pytest.raises(tile.CompilationError, match=r"tile.uint16 \(Triton's tl.uint16\) is not in the language yet"):
        unsigned[(1,)](torch.ones(1))


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_dtype_names_compile_for_the_gpu(target, gpu_target):
    gpu_target(target)
    _dtype_names(device="meta")


@tile.jit
def scale_row(X, Y, row, n_cols, scale, BLOCK: tile.constexpr):
    """A kernel of its own, and a helper where another kernel calls it (Triton's @jit)."""
    cols = tile.arange(0, BLOCK)
    v = tile.load(X + row * n_cols + cols, mask=cols < n_cols)
    tile.store(Y + row * n_cols + cols, v * scale, mask=cols < n_cols)


@tile.jit(do_not_specialize=["n_rows"], noinline=True)
def scale_rows_kernel(X, Y, n_rows, n_cols, BLOCK: tile.constexpr):
    pid = tile.program_id(0)
    for r in range(pid * 2, min(pid * 2 + 2, n_rows)):
        scale_row(X, Y, r, n_cols, 2.0, BLOCK)


def _jit(device="cpu"):
    torch.manual_seed(4)
    x = torch.randn(5, 19)
    y = torch.zeros(5, 19, device=device)
    scale_rows_kernel[(3,)](x.to(device), y, 5, 19, BLOCK=32)
    scale_row[(1,)](x.to(device), y, 4, 19, -1.0, BLOCK=32)  # launched itself: row 4 again
    return x, y


def test_jit_is_a_kernel_and_a_helper():
    x, y = _jit()
    torch.testing.assert_close(y[:4], x[:4] * 2)
    torch.testing.assert_close(y[4], -x[4])


@tile.jit
def optional_pointers_kernel(
    X,
    W,
    B,
    Y,
    n_cols,
    stride,
    BLOCK: tile.constexpr,
):
    row = tile.program_id(0)
    cols = tile.arange(0, BLOCK)
    mask = cols < n_cols
    x = tile.load(X + row * stride + cols, mask=mask, other=0.0)
    if W is not None:
        x = x * tile.load(W + cols, mask=mask, other=0.0)
    if B is not None:
        x += tile.load(B + cols, mask=mask, other=0.0)
    tile.store(Y + row * n_cols + cols, x, mask=mask)


def _optional(has_w, has_b, device="cpu"):
    torch.manual_seed(5)
    x = torch.randn(3, 40)[:, :37]  # strided rows
    w, b = torch.randn(37), torch.randn(37)
    y = torch.zeros(3, 37, device=device)
    optional_pointers_kernel[(3,)](
        x.to(device), w.to(device) if has_w else None, b.to(device) if has_b else None, y, 37, x.stride(0), BLOCK=64,
    )
    return x, w, b, y


@pytest.mark.parametrize("has_w, has_b", [(True, True), (False, True), (True, False), (False, False)])
def test_none_for_a_tensor_argument(has_w, has_b):
    x, w, b, y = _optional(has_w, has_b)
    torch.testing.assert_close(y, x * (w if has_w else 1.0) + (b if has_b else 0.0))


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_jit_and_none_compile_for_the_gpu(target, gpu_target):
    gpu_target(target)
    _jit(device="meta")
    _optional(False, True, device="meta")
    x, y = torch.empty(3, 37, device="meta"), torch.empty(3, 37, device="meta")
    ptx = optional_pointers_kernel.compile(x, None, None, y, 37, 37, BLOCK=64).asm["ptx"]
    assert ptx.count("ld.global") == 1  # (no load of W or B)


@tile.kernel
def stages_kernel(x, out, n, BLOCK: tile.constexpr, num_stages: tile.constexpr = 2, num_warps: tile.constexpr = 4):
    """Kernel parameters named as the launch options: both take what the launch passes."""
    offs = tile.arange(0, BLOCK)
    acc = tile.zeros((BLOCK,), tile.float32)
    for i in tile.range(0, n, BLOCK, num_stages=num_stages):
        acc += tile.load(x + i + offs, mask=i + offs < n, other=0.0)
    tile.store(out + offs, acc * num_stages + num_warps)


@tile.kernel
def warps_kernel(out, num_warps: tile.constexpr):
    tile.store(out, num_warps + 0.0)


def test_launch_options_named_as_parameters():
    x = torch.randn(100)
    out = torch.zeros(16)
    expected = torch.nn.functional.pad(x, (0, 12)).view(-1, 16).sum(0)
    stages_kernel[(1,)](x, out, 100, BLOCK=16)
    torch.testing.assert_close(out, expected * 2 + 4)
    stages_kernel[(1,)](x, out, 100, BLOCK=16, num_stages=3, num_warps=8)
    torch.testing.assert_close(out, expected * 3 + 8)
    one = torch.zeros(1)
    warps_kernel[(1,)](one, num_warps=2)
    assert one.item() == 2.0
    with pytest.raises(tile.LaunchError, match=r"missing constexpr\(s\): num_warps \(num_warps: a launch option and a "
                                               r"parameter of this kernel; pass it by keyword"):
        warps_kernel[(1,)](one)


def test_launch_options_named_as_parameters_compile_for_the_gpu(gpu_target):
    gpu_target("sm_90a")
    x, out = torch.empty(100, device="meta"), torch.empty(16, device="meta")
    launcher = stages_kernel.compile(x, out, 100, BLOCK=16, num_stages=3, num_warps=8)
    assert ".maxntid 256" in launcher.asm["ptx"]  # num_warps=8 reached the launch too
