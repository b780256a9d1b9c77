"""The atomics (`tile.atomic_add` / `max` / `min` / `and` / `or` / `xor` / `xchg` / `cas`):
old values, scalar atomics, bad dtypes, `sem=` / `scope=` in the PTX, Triton's tutorial-05
spin lock, and, on a GPU target, one update per element where threads hold copies of it.
(The examples split_k_matmul and histogram check tile and vector atomics against torch.)"""

import importlib
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

import tile


@tile.kernel
def ticket_kernel(counter, tickets, extremes, x, BLOCK: tile.constexpr):
    pid = tile.program_id(0)
    tile.store(tickets + pid, tile.atomic_add(counter + 0, 1))
    v = tile.load(x + pid * BLOCK + tile.arange(0, BLOCK))
    tile.atomic_max(extremes + 0, tile.max(v, axis=0))
    tile.atomic_min(extremes + 1, tile.min(v, axis=0))


@tile.kernel
def half_add_kernel(y, v, BLOCK: tile.constexpr):
    tile.atomic_add(y + tile.arange(0, BLOCK), v)


@tile.kernel
def float_max_kernel(y, BLOCK: tile.constexpr):
    tile.atomic_max(y + tile.arange(0, BLOCK), 1.0)


def test_scalar_atomics_return_old_values():
    """Each program takes a ticket from one counter: the tickets are 0 .. programs - 1, each once."""
    x = torch.randint(-1000, 1000, (37 * 32,), dtype=torch.int32)
    counter = torch.zeros(1, dtype=torch.int32)
    tickets = torch.full((37,), -1, dtype=torch.int32)
    extremes = torch.tensor([-(2**31), 2**31 - 1], dtype=torch.int32)
    ticket_kernel[(37,)](counter, tickets, extremes, x, BLOCK=32)
    assert counter.item() == 37
    assert sorted(tickets.tolist()) == list(range(37))
    assert extremes.tolist() == [x.max().item(), x.min().item()]


def test_atomic_dtypes_are_checked():
    with pytest.raises(tile.CompilationError, match="atomic_add takes float32, int32, int64, float64, float16, bfloat16 "
                                                    "tensors, but 'y' is int8") as e:
        half_add_kernel[(1,)](torch.zeros(16, dtype=torch.int8), 1, BLOCK=16)
    assert "tile.atomic_add(y + tile.arange(0, BLOCK), v)" in str(e.value)
    with pytest.raises(tile.CompilationError, match="atomic_max takes int32, int64, float32, float64 tensors, but 'y' is float16"):
        float_max_kernel[(1,)](torch.zeros(16, dtype=torch.float16), BLOCK=16)


def test_copies_of_an_element_add_it_once(monkeypatch):
    """The histogram's 64-element block in 4 warps (128 threads): the layout's 128 threads wrap
    around the 64 elements, so each atomic also asks whether its thread's coordinate, before
    it wraps, is inside the tile. Without that, each count would double on a GPU."""
    example = importlib.import_module("histogram")
    monkeypatch.setenv("TILE_TARGET", "sm_90a")
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    example.histogram_kernel._launchers.clear()
    example.histogram(torch.zeros(1000, dtype=torch.int32), 64, BLOCK=64, num_warps=4)
    (launcher,) = example.histogram_kernel._launchers.values()
    assert "tensor<64xi32, #tile.blocked<[1], [32], [4], [0]>>" in launcher.asm["tile-opt"]
    gpu = launcher.asm["gpu"]
    guard = re.search(r"(%\w+) = arith.cmpi ult, %\w+, %c64_i32 : i32\n(.*\n){0,3}?.*arith.andi %\w+, \1", gpu)
    assert guard and "atom.acq_rel.gpu.global.add.u32" in gpu[guard.end():], gpu
    ptx = launcher.asm["ptx"]
    assert ptx.count("atom.acq_rel.gpu.global.add.u32") == 1
    # The ranks (old values) reach the copies from the first copy, through shared memory:
    # each copy's store of its rank then writes the same value.
    assert re.search(r"st\.shared\.b32.*\n(.*\n)*.*bar\.sync.*\n(.*\n)*.*ld\.shared\.b32", ptx), ptx


@tile.kernel
def layer_norm_bwd_dx_fused(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N,
                            GROUP_SIZE_M: tile.constexpr, BLOCK_SIZE_N: tile.constexpr):
    """Triton's tutorial 05 (layer norm backward), as written there: each row's dx, and its
    dw and db partial sums added into one of GROUP_SIZE_M buffers under that buffer's spin lock."""
    row = tile.program_id(0)
    cols = tile.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    x = tile.load(X + cols, mask=mask, other=0).to(tile.float32)
    dy = tile.load(DY + cols, mask=mask, other=0).to(tile.float32)
    w = tile.load(W + cols, mask=mask).to(tile.float32)
    mean = tile.load(Mean + row)
    rstd = tile.load(Rstd + row)
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tile.where(mask, xhat, 0.)
    wdy = tile.where(mask, wdy, 0.)
    c1 = tile.sum(xhat * wdy, axis=0) / N
    c2 = tile.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tile.store(DX + cols, dx, mask=mask)
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = (dy).to(w.dtype)
    while tile.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tile.load(Count)
    if count == 0:
        tile.atomic_xchg(Count, 1)
    else:
        partial_dw += tile.load(DW, mask=mask)
        partial_db += tile.load(DB, mask=mask)
    tile.store(DW, partial_dw, mask=mask)
    tile.store(DB, partial_db, mask=mask)
    tile.debug_barrier()
    tile.atomic_xchg(Lock, 0)


def _layer_norm_bwd(M=37, N=100, group=4, device="cpu"):
    torch.manual_seed(0)
    x, dy, w = torch.randn(M, N), torch.randn(M, N), torch.randn(N)
    mean, rstd = x.mean(1), 1 / (x.var(1, unbiased=False) + 1e-5).sqrt()
    dx, dw, db = (torch.empty(M, N, device=device), torch.zeros(group, N, device=device), torch.zeros(group, N, device=device))
    lock = torch.zeros(2 * group, dtype=torch.int32, device=device)
    args = [t.to(device) for t in (x, dy, w, mean, rstd)]
    layer_norm_bwd_dx_fused[(M,)](dx, args[1], dw, db, args[0], args[2], args[3], args[4], lock, N, N,
                                  GROUP_SIZE_M=group, BLOCK_SIZE_N=128)
    return (x, dy, w, mean, rstd), dx, dw, db, lock


def test_tutorial_05_spin_lock_adds_every_row():
    """Rows 0, 4, 8, ... add into buffer 0 under lock 0, and so on; the locks end free and
    each count at 1. dw and db against torch's layer norm backward."""
    (x, dy, w, _, _), dx, dw, db, lock = _layer_norm_bwd()
    xr = x.clone().requires_grad_()
    wr = w.clone().requires_grad_()
    br = torch.zeros_like(w, requires_grad=True)
    torch.nn.functional.layer_norm(xr, (x.shape[1],), wr, br, eps=1e-5).backward(dy)
    assert lock.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    torch.testing.assert_close(dx, xr.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(dw.sum(0), wr.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(db.sum(0), br.grad, rtol=1e-4, atol=1e-4)
    xhat = (x - x.mean(1, keepdim=True)) / (x.var(1, unbiased=False, keepdim=True) + 1e-5).sqrt()
    torch.testing.assert_close(dw[1], (dy * xhat)[1::4].sum(0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_tutorial_05_spin_lock_ptx(gpu_target, target):
    """On a GPU thread 0 spins on `atom.cas` (its old value to every thread through shared
    memory), every thread waits at `bar.sync` before thread 0's release, an `atom.exch`."""
    gpu_target(target)
    layer_norm_bwd_dx_fused._launchers.clear()
    _layer_norm_bwd(device="meta")
    (launcher,) = layer_norm_bwd_dx_fused._launchers.values()
    ptx = launcher.asm["ptx"]
    cas = re.search(r"@%p\d+ atom\.acq_rel\.gpu\.global\.cas\.b32 %r\d+, \[%rd\d+\], %r\d+, %r\d+;", ptx)
    assert cas, ptx
    release = ptx.index("atom.acq_rel.gpu.global.exch.b32", cas.end())
    assert re.search(r"bar\.sync\s+0;", ptx[ptx.rindex("st.global", 0, release):release])
    # the locked buffers are written: no non-coherent reads of them (only of W, before the lock)
    assert "ld.global.nc" not in ptx[cas.end():] and "ld.global.b32" in ptx[cas.end():release]


@tile.kernel
def exchange_kernel(x, vals, cmps, c, old_x, old_c, n, BLOCK: tile.constexpr, SEM: tile.constexpr,
                    SCOPE: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    m = offs < n
    v = tile.load(vals + offs, mask=m)
    tile.store(old_x + offs, tile.atomic_xchg(x + offs, v, mask=m, sem=SEM, scope=SCOPE), mask=m,)
    # atomic_cas has no mask (as Triton's): c and old_c cover the whole grid
    cmp = tile.load(cmps + offs, mask=m)
    pc = c + tile.program_id(0) * BLOCK
    tile.store(old_c + offs, tile.atomic_cas(pc + tile.arange(0, BLOCK), cmp, v, sem=SEM, scope=SCOPE))


def _exchange(dtype, sem, scope, n=45, BLOCK=16, device="cpu"):
    torch.manual_seed(1)
    grid = -(-n // BLOCK)
    vals = torch.randint(-50, 50, (n,)).to(dtype)
    x0 = torch.randint(-50, 50, (n + 3,)).to(dtype)
    c0 = torch.randint(0, 3, (grid * BLOCK,)).to(dtype)
    cmps = torch.randint(0, 3, (n,)).to(dtype)
    x, c = x0.clone().to(device), c0.clone().to(device)
    old_x, old_c = torch.zeros(n, dtype=dtype, device=device), torch.zeros(grid * BLOCK, dtype=dtype, device=device)
    exchange_kernel[(grid,)](x, vals.to(device), cmps.to(device), c, old_x, old_c, n, BLOCK=BLOCK, SEM=sem, SCOPE=scope)
    return (x0, c0, vals, cmps), (x, c, old_x, old_c)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float32, torch.float64])
def test_xchg_and_cas_return_old_values(dtype):
    (x0, c0, vals, cmps), (x, c, old_x, old_c) = _exchange(dtype, "acq_rel", "gpu")
    n = len(vals)
    assert torch.equal(old_x, x0[:n]) and torch.equal(old_c, c0)
    assert torch.equal(x, torch.cat([vals, x0[n:]]))  # (the 3 past n untouched)
    cmp = torch.cat([cmps, torch.zeros(len(c0) - n, dtype=dtype)])
    v = torch.cat([vals, torch.zeros(len(c0) - n, dtype=dtype)])
    assert torch.equal(c, torch.where(c0 == cmp, v, c0))
    assert 0 < int((c0 == cmp).sum()) < len(c0)  # (some swapped, some not)


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("dtype, sem, scope, bits", [(torch.int64, "acquire", "cta", 64), (torch.float32, "relaxed", "sys", 32),
                                                     (torch.int32, "release", "gpu", 32)])
def test_sem_and_scope_reach_the_ptx(gpu_target, target, dtype, sem, scope, bits):
    gpu_target(target)
    exchange_kernel._launchers.clear()
    _exchange(dtype, sem, scope, device="meta")
    (launcher,) = exchange_kernel._launchers.values()
    ptx = launcher.asm["ptx"]
    assert ptx.count(f"atom.{sem}.{scope}.global.exch.b{bits}") == 1  # (16 elements, 4 warps: one each in 16 threads)
    assert ptx.count(f"atom.{sem}.{scope}.global.cas.b{bits}") == 1
    assert "atom.acq_rel" not in ptx


@tile.kernel
def bad_sem_kernel(x, SEM: tile.constexpr, SCOPE: tile.constexpr):
    tile.atomic_xchg(x + tile.arange(0, 16), 1, sem=SEM, scope=SCOPE)


@pytest.mark.parametrize("sem, scope, message", [
    ("seq_cst", "gpu", "atomic_xchg's sem must be one of 'acq_rel', 'acquire', 'release', 'relaxed', got 'seq_cst'"),
    ("acq_rel", "device", "atomic_xchg's scope must be one of 'gpu', 'cta', 'sys', got 'device'"),
])
def test_bad_sem_or_scope_is_an_error_at_the_line(sem, scope, message):
    with pytest.raises(tile.CompilationError, match=re.escape(message)) as e:
        bad_sem_kernel[(1,)](torch.zeros(16, dtype=torch.int32), SEM=sem, SCOPE=scope)
    assert "tile.atomic_xchg(x + tile.arange(0, 16), 1, sem=SEM, scope=SCOPE)" in str(e.value)


@tile.kernel
def scatter_kernel(y, idx, v, old, n, OP: tile.constexpr, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    m = offs < n
    p = y + tile.load(idx + offs, mask=m)
    val = tile.load(v + offs, mask=m)
    if OP == "add":
        got = tile.atomic_add(p, val, mask=m)
    elif OP == "max":
        got = tile.atomic_max(p, val, mask=m)
    elif OP == "min":
        got = tile.atomic_min(p, val, mask=m, sem="relaxed")
    elif OP == "and":
        got = tile.atomic_and(p, val, mask=m)
    elif OP == "or":
        got = tile.atomic_or(p, val, mask=m, scope="cta")
    else:
        got = tile.atomic_xor(p, val, mask=m)
    tile.store(old + offs, got, mask=m)


def _scatter(op, dtype, idx, device="cpu", BLOCK=32):
    torch.manual_seed(2)
    n = len(idx)
    if dtype.is_floating_point:  # (whole numbers: sums exact in any order, even in float16)
        v, y0 = torch.randint(-40, 40, (n,)).to(dtype), torch.randint(-40, 40, (11,)).to(dtype)
    else:
        v, y0 = torch.randint(-2**30, 2**30, (n,), dtype=dtype), torch.randint(-2**30, 2**30, (11,), dtype=dtype)
    y, old = y0.clone().to(device), torch.zeros(n, dtype=dtype, device=device)
    scatter_kernel[(-(-n // BLOCK),)](y, idx.to(device), v.to(device), old, n, OP=op, BLOCK=BLOCK)
    return y0, v, y, old


def _reference(op, y0, idx, v):
    if op in ("add", "max", "min"):
        return y0.scatter_reduce(0, idx.long(), v, {"add": "sum", "max": "amax", "min": "amin"}[op])
    out = y0.numpy().copy()
    {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op].at(out, idx.numpy(), v.numpy())
    return torch.from_numpy(out)


CASES = [("add", torch.int64), ("add", torch.float64), ("add", torch.float16), ("add", torch.bfloat16),
         ("max", torch.int64), ("max", torch.float32), ("min", torch.float32), ("min", torch.float64),
         ("and", torch.int32), ("or", torch.int64), ("xor", torch.int32), ("xor", torch.int64)]


@pytest.mark.parametrize("op, dtype", CASES)
def test_atomic_kinds_and_dtypes_against_torch(op, dtype):
    """37 elements, two programs of 32: into 11 places (many updates of each, their result
    against torch), and through a permutation (one update each: the old values)."""
    idx = torch.randint(0, 11, (37,), generator=torch.Generator().manual_seed(3), dtype=torch.int32)
    y0, v, y, _ = _scatter(op, dtype, idx)
    torch.testing.assert_close(y, _reference(op, y0, idx, v), rtol=0, atol=0)
    perm = torch.randperm(11, generator=torch.Generator().manual_seed(4)).to(torch.int32)
    y0, v, y, old = _scatter(op, dtype, perm)
    assert torch.equal(old, y0[perm.long()]) and torch.equal(y, _reference(op, y0, perm, v[:11]))


PTX = {("add", torch.int64): ["add.u64"], ("add", torch.float64): ["add.f64"], ("add", torch.float16): ["add.noftz.f16"],
       ("add", torch.bfloat16): ["add.noftz.bf16"], ("max", torch.int64): ["max.s64"],
       ("max", torch.float32): ["max.s32", "min.u32"], ("min", torch.float32): ["min.s32", "max.u32"],
       ("min", torch.float64): ["min.s64", "max.u64"], ("and", torch.int32): ["and.b32"], ("or", torch.int64): ["or.b64"],
       ("xor", torch.int32): ["xor.b32"], ("xor", torch.int64): ["xor.b64"]}


@pytest.mark.parametrize("op, dtype", CASES)
def test_atomic_kinds_and_dtypes_ptx(gpu_target, op, dtype):
    """Each atom with its sem and scope; a float max or min is two, on the bits."""
    gpu_target("sm_90a")
    scatter_kernel._launchers.clear()
    _scatter(op, dtype, torch.zeros(37, dtype=torch.int32), device="meta")
    (launcher,) = scatter_kernel._launchers.values()
    ptx = launcher.asm["ptx"]
    order = {"min": "relaxed.gpu", "or": "acq_rel.cta"}.get(op, "acq_rel.gpu")
    found = re.findall(r"@%p\d+ atom\.(\S+) ", ptx)  # (LLVM may copy a 16-bit one into both arms of a branch)
    assert set(found) == {f"{order}.global.{i}" for i in PTX[op, dtype]}, ptx


def test_bfloat16_atomic_add_needs_sm_90(gpu_target):
    gpu_target("sm_80")
    scatter_kernel._launchers.clear()
    _scatter("add", torch.float16, torch.zeros(37, dtype=torch.int32), device="meta")  # (float16's is sm_70's)
    (launcher,) = scatter_kernel._launchers.values()
    assert "atom.acq_rel.gpu.global.add.noftz.f16" in launcher.asm["ptx"]
    with pytest.raises(tile.CompilationError, match="atomic_add on bfloat16 needs sm_90") as e:
        _scatter("add", torch.bfloat16, torch.zeros(37, dtype=torch.int32), device="meta")
    assert "got = tile.atomic_add(p, val, mask=m)" in str(e.value)


@tile.kernel
def barrier_kernel(x, y, B: tile.constexpr, DOT: tile.constexpr):
    r = tile.arange(0, B)
    v = tile.load(x + r[:, None] * B + r[None, :])
    if DOT:
        v = tile.dot(v, v)
    tile.store(y + r[:, None] * B + r[None, :], v)
    tile.debug_barrier()
    tile.store(y + r[:, None] * B + r[None, :], v + tile.load(y + r[None, :] * B + r[:, None]))


def test_debug_barrier(gpu_target):
    """Nothing on the CPU (v + v.T read back after the barrier); `bar.sync 0` between the
    stores and the load on a GPU; an error where the dot takes the linalg path, which has none."""
    x = torch.randn(16, 16)
    y = torch.empty(16, 16)
    barrier_kernel[(1,)](x, y, B=16, DOT=False)
    assert torch.equal(y, x + x.T)
    gpu_target("sm_90a")
    barrier_kernel._launchers.clear()
    barrier_kernel[(1,)](x.to("meta"), y.to("meta"), B=16, DOT=False)
    (launcher,) = barrier_kernel._launchers.values()
    ptx = launcher.asm["ptx"]
    first_store, last_load = ptx.index("st.global"), ptx.rindex("ld.global")
    assert re.search(r"bar\.sync\s+0;", ptx[first_store:last_load])
    with pytest.raises(tile.CompilationError, match="debug_barrier is not supported on a GPU in a kernel whose dot takes the linalg path"):
        barrier_kernel[(1,)](x.to("meta"), y.to("meta"), B=16, DOT=True)


TRITON_SCRIPT = """
import importlib, inspect, os, re, sys, tempfile, torch
import triton, triton.language as tl
sys.path.insert(0, sys.argv[1])
import test_atomics as t

# the same kernels, as Triton's: s/tile./tl./, @tile.kernel -> @triton.jit
source = "import triton, triton.language as tl\\n" + "\\n\\n".join(
    re.sub(r"\\btile\\.", "tl.", inspect.getsource(k.fn)).replace("@tl.kernel", "@triton.jit")
    for k in (t.layer_norm_bwd_dx_fused, t.scatter_kernel, t.exchange_kernel))
folder = tempfile.mkdtemp()
with open(os.path.join(folder, "triton_atomics.py"), "w") as f:
    f.write(source)
sys.path.insert(0, folder)
theirs = importlib.import_module("triton_atomics")

def both(name, run):
    got = []
    for module in (t, theirs):
        setattr(t, name, getattr(module, name))
        got.append(run())
    setattr(t, name, getattr(importlib.import_module("test_atomics"), name))
    return got

ours, tri = both("layer_norm_bwd_dx_fused", t._layer_norm_bwd)
for a, b in zip(ours[1:], tri[1:]):
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
idx = torch.randint(0, 11, (37,), generator=torch.Generator().manual_seed(3), dtype=torch.int32)
# (the interpreter has no 16-bit atomics)
for op, dtype in [c for c in t.CASES if c[1].itemsize >= 4]:
    ours, tri = both("scatter_kernel", lambda: t._scatter(op, dtype, idx))
    assert torch.equal(ours[2], tri[2]), (op, dtype, ours[2], tri[2])
for dtype in (torch.int32, torch.int64):
    ours, tri = both("exchange_kernel", lambda: t._exchange(dtype, "acq_rel", "gpu"))
    assert all(torch.equal(a, b) for a, b in zip(ours[1], tri[1])), dtype
print("same")
"""


def test_same_results_as_tritons_interpreter():
    """The tutorial-05 kernel, the scatters (32- and 64-bit: the interpreter has no 16-bit
    atomics) and the integer exchanges (nor float ones), their source run as Triton kernels by Triton's interpreter (in a process of its own:
    TRITON_INTERPRET is read when triton.language is imported): the same results."""
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    run = subprocess.run([sys.executable, "-c", TRITON_SCRIPT, os.path.dirname(__file__)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "same" in run.stdout, run.stderr[-3000:]


@tile.kernel
def rows_into_kernel(dw, x, n_rows, n_cols, stride, BLOCK: tile.constexpr):
    """Each program adds its rows into dw, index arithmetic (an RMSNorm's dW, atomically)."""
    cols = tile.arange(0, BLOCK)
    acc = tile.zeros((BLOCK,), dtype=tile.float32)
    for r in range(tile.program_id(0), n_rows, tile.num_programs(0)):
        acc += tile.load(x + r * stride + cols, mask=cols < n_cols, other=0.0).to(tile.float32)
    tile.atomic_add(dw + cols, acc.to(dw.dtype.element_ty), mask=cols < n_cols)


@tile.kernel
def rows_into_pointer_kernel(dw, x, n_rows, n_cols, stride, BLOCK: tile.constexpr,):
    """The same with pointer increments, as library kernels write it."""
    cols = tile.arange(0, BLOCK)
    mask = cols < n_cols
    x += tile.program_id(0) * stride
    acc = tile.zeros((BLOCK,), dtype=tile.float32)
    for _ in range(tile.program_id(0), n_rows, tile.num_programs(0)):
        acc += tile.load(x + cols, mask=mask, other=0.0).to(tile.float32)
        x += tile.num_programs(0) * stride
    dw += cols
    tile.atomic_add(dw, acc.to(dw.dtype.element_ty), mask=mask)


def _rows_into(kernel, dtype, rows, cols, device="cpu", programs=5, BLOCK=None, x=None):
    if x is None:
        x = torch.randint(-8, 8, (rows, cols + 3), generator=torch.Generator().manual_seed(5)).to(dtype)[:, :cols]
    dw = torch.zeros(cols, dtype=dtype, device=device)
    block = BLOCK or 1 << (cols - 1).bit_length()
    kernel[(programs,)](dw, x.to(device), rows, cols, x.stride(0), BLOCK=block)
    return x, dw


@pytest.mark.parametrize("kernel", [rows_into_kernel, rows_into_pointer_kernel])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rows_added_atomically_against_torch(kernel, dtype):
    """Odd sizes, a strided view, five programs into one row: whole numbers, exact in any order."""
    x, dw = _rows_into(kernel, dtype, 37, 300)
    torch.testing.assert_close(dw, x.float().sum(0).to(dtype), rtol=0, atol=0)


@pytest.mark.parametrize("kernel", [rows_into_kernel, rows_into_pointer_kernel])
@pytest.mark.parametrize("dtype, vector", [(torch.float32, "add.v4.f32"), (torch.bfloat16, "add.noftz.v8.bf16")])
def test_contiguous_atomic_adds_are_vectors_on_sm90(gpu_target, kernel, dtype, vector):
    """sm_90a takes a run of consecutive, aligned elements under one mask in one vector atom;
    odd column counts (the mask unproven per run) and sm_80 keep one atom an element."""
    def atoms(target, cols):
        gpu_target(target)
        kernel._launchers.clear()
        x = torch.empty(64, cols, dtype=dtype, device="meta")
        _rows_into(kernel, dtype, 64, cols, device="meta", programs=132, BLOCK=4096, x=x)
        (launcher,) = kernel._launchers.values()
        return re.findall(r"@%p\d+ atom\.acq_rel\.gpu\.global\.(\S+) ", launcher.asm["ptx"])

    wide = atoms("sm_90a", 4096)
    assert wide and set(wide) == {vector}, wide
    scalar = re.sub(r"\.v\d", "", vector)
    assert set(atoms("sm_90a", 4095)) == {scalar}
    if dtype == torch.float32:
        assert set(atoms("sm_80", 4096)) == {scalar}
