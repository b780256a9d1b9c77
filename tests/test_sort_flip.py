"""Triton's standard library as Triton kernels call it: `sort`, `topk` (top-k sampling),
`flip` (reversed scans), `histogram` (MoE expert counts), `cat`, `broadcast`, `view`,
`squeeze`/`unsqueeze`, `swizzle2d`, `softmax`, `PropagateNan` and `TRITON_MAX_TENSOR_NUMEL`:
on the CPU against torch (and Triton's interpreter), compiled for sm_90a and sm_80."""


import pytest
import torch

import tile
from as_triton import run_in_triton

BLOCK = tile.constexpr(1024)
NUM_EXPERTS = tile.constexpr(16)


@tile.kernel
def sort_rows_kernel(
    x_ptr,
    out_ptr,
    n_cols,
    stride_xr,
    stride_xc,
    stride_or,
    PAD: tile.constexpr,
    DESCENDING: tile.constexpr,
    BLOCK_N: tile.constexpr,
):
    """Each row of a strided x sorted; the tail past n_cols padded with PAD, which sorts last."""
    row = tile.program_id(0)
    cols = tile.arange(0, BLOCK_N)
    mask = cols < n_cols
    x_ptr += row * stride_xr
    out_ptr += row * stride_or
    x = tile.load(x_ptr + cols * stride_xc, mask=mask, other=PAD)
    tile.store(out_ptr + cols, tile.sort(x, descending=DESCENDING), mask=mask)


@tile.kernel
def sort_tile_kernel(x_ptr, out_ptr, ROWS: tile.constexpr, COLS: tile.constexpr, DESCENDING: tile.constexpr):
    """A whole 2-D tile sorted along its last dim (dim=-1: Triton 3.9 takes only 1 or None)."""
    offs = tile.arange(0, ROWS)[:, None] * COLS + tile.arange(0, COLS)[None, :]
    x = tile.load(x_ptr + offs)
    tile.store(out_ptr + offs, tile.sort(x, dim=-1, descending=DESCENDING))


@tile.kernel
def sort_block_kernel(x_ptr, out_ptr, n):
    """One row of BLOCK (a module's constexpr global) sorted."""
    offs = tile.arange(0, BLOCK)
    x = tile.load(x_ptr + offs, mask=offs < n, other=float("inf"))
    tile.store(out_ptr + offs, tile.sort(x), mask=offs < n)


@tile.kernel
def topk_kernel(
    logits_ptr,
    out_ptr,
    vocab,
    stride_row,
    K: tile.constexpr,
    LARGEST: tile.constexpr,
    BLOCK_V: tile.constexpr,
):
    """Top-k sampling's first step: the k largest (or smallest) logits of each row, in order."""
    row = tile.program_id(0)
    cols = tile.arange(0, BLOCK_V)
    fill = -float("inf") if LARGEST else float("inf")
    logits = tile.load(logits_ptr + row * stride_row + cols, mask=cols < vocab, other=fill)
    top = tile.topk(logits, K, descending=LARGEST)
    tile.store(out_ptr + row * K + tile.arange(0, K), top)


def _data(dtype, shape):
    if dtype.is_floating_point:
        return torch.randn(shape).to(dtype)
    return torch.randint(-100, 100, shape, dtype=dtype)


def _pad(dtype, descending):
    if dtype.is_floating_point:
        return -float("inf") if descending else float("inf")
    info = torch.iinfo(dtype)
    return info.min if descending else info.max


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.float16, torch.int8])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_rows_of_a_strided_view(dtype, descending):
    torch.manual_seed(0)
    base = _data(dtype, (37, 6))  # rows of 37 (odd: masked, padded), read down a column-major view
    x = base.t()
    out = torch.empty(6, 37, dtype=dtype)
    sort_rows_kernel[(6,)](
        x,
        out,
        37,
        x.stride(0),
        x.stride(1),
        out.stride(0),
        PAD=_pad(dtype, descending),
        DESCENDING=descending,
        BLOCK_N=64,
    )
    assert torch.equal(out, torch.sort(x, dim=-1, descending=descending).values)


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64, torch.uint8, torch.bool])
def test_sort_2d_tile(dtype):
    torch.manual_seed(1)
    high = {torch.bool: 2, torch.uint8: 256}.get(dtype)  # (uint8: both halves, whose top bits differ)
    x = torch.randint(0, high, (4, 8), dtype=dtype) if high else _data(dtype, (4, 8))
    for descending in (False, True):
        out = torch.empty_like(x)
        sort_tile_kernel[(1,)](x, out, ROWS=4, COLS=8, DESCENDING=descending)
        assert torch.equal(out, torch.sort(x, dim=-1, descending=descending).values)


def test_sort_1024_and_its_ptx(gpu_target):
    x = torch.randn(1000)
    out = torch.empty_like(x)
    sort_block_kernel[(1,)](x, out, 1000)
    assert torch.equal(out, torch.sort(x).values)
    gpu_target("sm_90a")
    meta = torch.empty(1024, device="meta")
    ptx = sort_block_kernel.compile(meta, meta, 1024).asm["ptx"]
    # the 55 steps are one loop, the tile in registers, each step's partner through shared memory
    assert ".local" not in ptx and "ld.shared" in ptx and ptx.count("bar.sync") <= 4


@pytest.mark.parametrize("largest", [True, False])
def test_topk(largest):
    torch.manual_seed(2)
    logits = torch.randn(3, 200)
    out = torch.empty(3, 8)
    topk_kernel[(3,)](logits, out, 200, logits.stride(0), K=8, LARGEST=largest, BLOCK_V=256)
    assert torch.equal(out, torch.topk(logits, 8, dim=-1, largest=largest).values)


def test_topk_of_one_and_of_all():
    x = torch.randn(2, 16)
    for k in (1, 16):
        out = torch.empty(2, k)
        topk_kernel[(2,)](x, out, 16, 16, K=k, LARGEST=True, BLOCK_V=16)
        assert torch.equal(out, torch.topk(x, k).values)


@tile.kernel
def bitonic_merge_kernel(x_ptr, out_ptr, N: tile.constexpr, DESCENDING: tile.constexpr):
    """The two sorted halves of a row (the second reversed: a bitonic sequence) merged."""
    offs = tile.arange(0, N // 2)
    lo = tile.sort(tile.load(x_ptr + offs))
    hi = tile.sort(tile.load(x_ptr + N // 2 + offs), descending=True)
    tile.store(out_ptr + tile.arange(0, N), tile.bitonic_merge(tile.cat(lo, hi), descending=DESCENDING))


@pytest.mark.parametrize("descending", [False, True])
def test_bitonic_merge(descending):
    x = torch.randint(-50, 50, (64,), dtype=torch.int16)
    out = torch.empty_like(x)
    bitonic_merge_kernel[(1,)](x, out, N=64, DESCENDING=descending)
    assert torch.equal(out, torch.sort(x, descending=descending).values)


@tile.kernel
def flip_kernel(x_ptr, out_ptr, M: tile.constexpr, N: tile.constexpr, DIM: tile.constexpr):
    offs = tile.arange(0, M)[:, None] * N + tile.arange(0, N)[None, :]
    x = tile.load(x_ptr + offs)
    if DIM is None:
        y = x.flip()
    else:
        y = tile.flip(x, DIM)
    tile.store(out_ptr + offs, y)


@tile.kernel
def reverse_kernel(x_ptr, out_ptr, n, BLOCK_N: tile.constexpr):
    """A row reversed in place of a reversed scan's `flip`: the masked tail moves to the front."""
    offs = tile.arange(0, BLOCK_N)
    x = tile.load(x_ptr + offs, mask=offs < n, other=0)
    tile.store(out_ptr + offs - (BLOCK_N - n), tile.flip(x), mask=offs >= BLOCK_N - n)


@pytest.mark.parametrize("dim", [0, 1, -1, None])
def test_flip(dim):
    x = torch.arange(32, dtype=torch.int32).reshape(4, 8)
    out = torch.empty_like(x)
    flip_kernel[(1,)](x, out, M=4, N=8, DIM=dim)
    assert torch.equal(out, torch.flip(x, (1 if dim is None else dim,)))


def test_flip_masked_row():
    x = torch.randn(13, dtype=torch.float16)
    out = torch.empty_like(x)
    reverse_kernel[(1,)](x, out, 13, BLOCK_N=16)
    assert torch.equal(out, torch.flip(x, (0,)))


@tile.kernel
def expert_counts_kernel(
    expert_ids_ptr,
    counts_ptr,
    n_tokens,
    BLOCK_T: tile.constexpr,
):
    """MoE routing's expert counts: each program's histogram of its tokens' experts, added up."""
    offs = tile.program_id(0) * BLOCK_T + tile.arange(0, BLOCK_T)
    mask = offs < n_tokens
    ids = tile.load(expert_ids_ptr + offs, mask=mask, other=0)
    counts = tile.histogram(ids, NUM_EXPERTS, mask=mask)
    tile.atomic_add(counts_ptr + tile.arange(0, NUM_EXPERTS), counts)


@tile.kernel
def histogram_kernel(x_ptr, out_ptr, N: tile.constexpr, BINS: tile.constexpr):
    x = tile.load(x_ptr + tile.arange(0, N))
    tile.store(out_ptr + tile.arange(0, BINS), x.histogram(BINS))


def test_histogram_expert_counts():
    torch.manual_seed(3)
    ids = torch.randint(0, 16, (1000,), dtype=torch.int32)
    ids[:300] = 5  # many tokens on one expert
    counts = torch.zeros(16, dtype=torch.int32)
    expert_counts_kernel[(tile.cdiv(1000, 256),)](ids, counts, 1000, BLOCK_T=256)
    assert torch.equal(counts, torch.bincount(ids, minlength=16).to(torch.int32))


def test_histogram_leaves_out_values_outside_the_bins():
    x = torch.randint(-8, 40, (2048,), dtype=torch.int32)  # 2048 x 32: two steps of compares
    out = torch.empty(32, dtype=torch.int32)
    histogram_kernel[(1,)](x, out, N=2048, BINS=32)
    assert torch.equal(out, torch.bincount(x[(x >= 0) & (x < 32)], minlength=32).to(torch.int32))


@tile.kernel
def shapes_kernel(a_ptr, b_ptr, cat0_ptr, cat1_ptr, sq_ptr, bc_ptr):
    rows = tile.arange(0, 4)
    cols = tile.arange(0, 8)
    a = tile.load(a_ptr + rows[:, None] * 8 + cols[None, :])
    b = tile.load(b_ptr + rows[:, None] * 8 + cols[None, :])
    c0 = tile.cat(a, b, dim=0)
    tile.store(cat0_ptr + tile.arange(0, 8)[:, None] * 8 + cols[None, :], c0)
    c1 = tile.cat(a, b, dim=1)
    tile.store(cat1_ptr + rows[:, None] * 16 + tile.arange(0, 16)[None, :], c1)
    col = tile.unsqueeze(tile.load(a_ptr + rows * 8), 1)  # (4, 1): column 0 of a
    total = tile.squeeze(tile.sum(col, 0, keep_dims=True), 0)  # (1,)
    tile.store(sq_ptr + tile.arange(0, 4), tile.view(col, 4) + tile.squeeze(total, 0))
    lhs, rhs = tile.broadcast(col, tile.load(b_ptr + cols)[None, :])
    tile.store(bc_ptr + rows[:, None] * 8 + cols[None, :], lhs * 100 + rhs)


def test_cat_squeeze_unsqueeze_view_broadcast():
    a = torch.arange(32, dtype=torch.int32).reshape(4, 8)
    b = a + 1000
    cat0, cat1 = torch.empty(8, 8, dtype=torch.int32), torch.empty(4, 16, dtype=torch.int32)
    sq, bc = torch.empty(4, dtype=torch.int32), torch.empty(4, 8, dtype=torch.int32)
    shapes_kernel[(1,)](a, b, cat0, cat1, sq, bc)
    assert torch.equal(cat0, torch.cat([a, b], 0)) and torch.equal(cat1, torch.cat([a, b], 1))
    assert torch.equal(sq, a[:, 0] + a[:, 0].sum())
    assert torch.equal(bc, a[:, :1] * 100 + b[0][None, :])


@tile.kernel
def swizzle_kernel(out_ptr, size_i, size_j, GROUP: tile.constexpr):
    i = tile.program_id(0)
    j = tile.program_id(1)
    new_i, new_j = tile.swizzle2d(i, j, size_i, size_j, GROUP)
    tile.store(out_ptr + i * size_j + j, new_i * size_j + new_j)


@tile.kernel
def softmax_nan_kernel(x_ptr, out_ptr, y_ptr, maxes_ptr, R: tile.constexpr, C: tile.constexpr):
    offs = tile.arange(0, R)[:, None] * C + tile.arange(0, C)[None, :]
    x = tile.load(x_ptr + offs)
    tile.store(out_ptr + offs, tile.softmax(x))  # along dim 0, as Triton's
    y = tile.load(y_ptr + offs)
    tile.store(maxes_ptr + offs, tile.maximum(x, y, propagate_nan=tile.PropagateNan.NONE))
    tile.store(maxes_ptr + R * C + offs, tile.minimum(x, y, propagate_nan=tile.PropagateNan.ALL))
    tile.store(maxes_ptr + 2 * R * C + offs, tile.clamp(y, -0.5, 0.5, propagate_nan=tile.PropagateNan.NONE))


def test_softmax_and_propagate_nan():
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    x[0, 0], y[1, 1] = float("nan"), float("nan")
    out, maxes = torch.empty_like(x), torch.empty(3, 4, 8)
    softmax_nan_kernel[(1,)](x, out, y, maxes, R=4, C=8)
    torch.testing.assert_close(out[:, 1:], torch.softmax(x[:, 1:], dim=0))
    assert torch.equal(maxes[0], torch.fmax(x, y))
    torch.testing.assert_close(maxes[1], torch.minimum(x, y), equal_nan=True)
    assert torch.equal(maxes[2], torch.where(y.isnan(), -0.5, y.clamp(-0.5, 0.5)))
    assert tile.TRITON_MAX_TENSOR_NUMEL == 1048576


TRITON_SCRIPT = """
from test_sort_flip import swizzle_kernel, topk_kernel, sort_tile_kernel

@triton.jit
def triton_sort(x_ptr, out_ptr, ROWS: tl.constexpr, COLS: tl.constexpr, DESCENDING: tl.constexpr):
    # (sort_tile_kernel's, with the dim Triton 3.9 takes: 1, not -1)
    offs = tl.arange(0, ROWS)[:, None] * COLS + tl.arange(0, COLS)[None, :]
    tl.store(out_ptr + offs, tl.sort(tl.load(x_ptr + offs), descending=DESCENDING))

ours, theirs = torch.empty(7 * 5, dtype=torch.int32), torch.empty(7 * 5, dtype=torch.int32)
swizzle_kernel[(7, 5)](ours, 7, 5, GROUP=3)
as_triton(swizzle_kernel)[(7, 5)](theirs, 7, 5, GROUP=3)
assert torch.equal(ours, theirs), (ours, theirs)
x = torch.randn(2, 100)
x[0, 3] = x[0, 7]  # a tie
ours, theirs = torch.empty(2, 4), torch.empty(2, 4)
topk_kernel[(2,)](x, ours, 100, 100, K=4, LARGEST=False, BLOCK_V=128)
as_triton(topk_kernel)[(2,)](x, theirs, 100, 100, K=4, LARGEST=False, BLOCK_V=128)
assert torch.equal(ours, theirs), (ours, theirs)
x = torch.randn(4, 16)
x[0, 2], x[1, 9], x[1, 3], x[2, 5] = float("nan"), float("nan"), float("inf"), -0.0  # (an order of its own)
ours, theirs = torch.empty_like(x), torch.empty_like(x)
sort_tile_kernel[(1,)](x, ours, ROWS=4, COLS=16, DESCENDING=True)
triton_sort[(1,)](x, theirs, ROWS=4, COLS=16, DESCENDING=True)
assert torch.equal(ours.view(torch.int32), theirs.view(torch.int32)), (ours, theirs)
print("same")
"""


def test_same_as_tritons_interpreter():
    """swizzle2d, topk (these kernels' own source renamed to Triton: as_triton.py) and sort
    (NaNs too, bit for bit: the same network) against Triton's, run by its interpreter."""
    pytest.importorskip("triton")
    run = run_in_triton(TRITON_SCRIPT)
    assert run.returncode == 0 and "same" in run.stdout, run.stderr[-2000:]


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_compiles_for_the_gpu(target, gpu_target):
    gpu_target(target)
    m = lambda *shape, dtype=torch.float32: torch.empty(*shape, dtype=dtype, device="meta")  # noqa: E731
    ptx = sort_rows_kernel.compile(m(6, 37), m(6, 37), 37, 37, 1, 37, PAD=float("inf"), DESCENDING=True,
                                   BLOCK_N=64, num_warps=1).asm["ptx"]
    assert ".local" not in ptx
    ptx = topk_kernel.compile(m(3, 200), m(3, 8), 200, 200, K=8, LARGEST=True, BLOCK_V=256).asm["ptx"]
    assert ".local" not in ptx and "max.NaN.f32" in ptx  # (the top-k halving steps)
    bitonic_merge_kernel.compile(m(64, dtype=torch.int16), m(64, dtype=torch.int16), N=64, DESCENDING=True)
    flip_kernel.compile(m(4, 8, dtype=torch.int32), m(4, 8, dtype=torch.int32), M=4, N=8, DIM=0)
    ids = m(1000, dtype=torch.int32)
    ptx = expert_counts_kernel.compile(ids, m(16, dtype=torch.int32), 1000, BLOCK_T=256).asm["ptx"]
    atoms = [line for line in ptx.splitlines() if "atom." in line]  # the counts' adds; the histogram has none
    assert atoms and all(".global.add." in line for line in atoms) and ".local" not in ptx
    histogram_kernel.compile(m(2048, dtype=torch.int32), m(32, dtype=torch.int32), N=2048, BINS=32)
    i32 = m(32, dtype=torch.int32)
    shapes_kernel.compile(i32, i32, m(64, dtype=torch.int32), m(64, dtype=torch.int32), m(4, dtype=torch.int32), i32)
    swizzle_kernel.compile(m(35, dtype=torch.int32), 7, 5, GROUP=3)
    softmax_nan_kernel.compile(i32.float(), i32.float(), i32.float(), m(96), R=4, C=8)


def _error(kernel, *args, **meta):
    with pytest.raises(tile.CompilationError) as e:
        kernel[(1,)](*args, **meta)
    return e.value


@tile.kernel
def bad_sort_kernel(x_ptr, out_ptr, K: tile.constexpr, WHAT: tile.constexpr):
    offs = tile.arange(0, 4)[:, None] * 8 + tile.arange(0, 8)[None, :]
    x = tile.load(x_ptr + offs)
    if WHAT == "dim":
        y = tile.sort(x, dim=0)
    elif WHAT == "topk":
        y = tile.topk(x, K)
    elif WHAT == "flip":
        y = tile.flip(x, 2)
    elif WHAT == "squeeze":
        y = tile.squeeze(x, 0)
    elif WHAT == "histogram":
        y = tile.histogram(x, 8)
    else:
        y = tile.maximum(x, x, propagate_nan=True)
    tile.store(out_ptr + offs, y)


@pytest.mark.parametrize("what, k, message", [
    ("dim", 1, "sort sorts along the last dim only"),
    ("topk", 3, "topk's k must be a power of two from 1 to the last dim's size 8, got 3"),
    ("topk", 16, "got 16"),
    ("flip", 1, "flip's dim 2 is out of range"),
    ("squeeze", 1, "squeeze's dim 0 must be a dim of size 1"),
    ("histogram", 1, "histogram needs a 1-D int32 tile"),
    ("nan", 1, "propagate_nan must be tile.PropagateNan.NONE or .ALL"),
])
def test_bad_use_is_an_error_at_its_line(what, k, message):
    lines = open(__file__).read().splitlines()
    first = lines.index("def bad_sort_kernel(x_ptr, out_ptr, K: tile.constexpr, WHAT: tile.constexpr):") + 1
    call = {"dim": "tile.sort(", "topk": "tile.topk(", "flip": "tile.flip(", "squeeze": "tile.squeeze(",
            "histogram": "tile.histogram(", "nan": "propagate_nan"}[what]
    line = first + next(i for i, text in enumerate(lines[first - 1:]) if call in text)
    x = torch.zeros(32)
    err = _error(bad_sort_kernel, x, x, K=k, WHAT=what)
    assert message in str(err) and f"test_sort_flip.py:{line}:" in str(err), str(err)


@tile.kernel
def big_histogram_kernel(x_ptr, out_ptr, N: tile.constexpr, BINS: tile.constexpr):
    counts = tile.histogram(tile.load(x_ptr + tile.arange(0, N)), BINS)
    tile.store(out_ptr + tile.arange(0, BINS), counts)


def test_histogram_past_one_programs_compares():
    x = torch.zeros(4096, dtype=torch.int32)
    err = _error(big_histogram_kernel, x, x, N=4096, BINS=512)
    assert "takes 2097152 compares" in str(err) and "test_sort_flip.py:" in str(err)
