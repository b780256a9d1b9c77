"""The GPU half of the language's tests (tests/test_math_functions.py, test_trans.py,
test_reductions.py, test_builtins.py, test_random.py, test_while_loops.py,
test_device_print.py, test_atomics.py, test_memory_hints.py, test_scans.py,
test_tile_column_loads.py): their kernels built on the CPU machine for sm_90a, then run on
the GPU and checked against torch.

    TILE_TARGET=sm_90a TILE_COMPILE_ONLY=1 python3 benchmarks/language_on_device.py --compile-only
    python3 benchmarks/language_on_device.py            # on the GPU, with that cache
    python3 benchmarks/language_on_device.py --cpu      # the same checks on the CPU target

Run from the repository root (the kernels are imported from tests/). On a GPU, f32 exp,
log, tanh and `/` are the special-function unit's approximations (README), so those
are compared with a looser tolerance than the CPU tests use.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.getcwd(), "tests"))

from device_checks import DeviceChecks  # noqa: E402

from test_atomics import CASES, _exchange, _layer_norm_bwd, _reference, _scatter  # noqa: E402
from test_builtins import builtins_kernel  # noqa: E402
from test_device_print import print_kernel  # noqa: E402
from test_math_functions import FUNCTIONS, math_kernel  # noqa: E402
from test_memory_hints import _run as hinted_copy  # noqa: E402
from test_random import dropout_kernel, philox_reference, random_kernel, uniform_reference  # noqa: E402
from test_reductions import arg_kernel, reductions_kernel  # noqa: E402
from test_scans import DEVICE_CASES as SCAN_CASES  # noqa: E402
from test_tile_column_loads import _block_ptr_columns, _column_store, _transpose_scale  # noqa: E402
from test_trans import dot_trans_kernel, loop_dot_trans_kernel, permute_kernel, trans_kernel  # noqa: E402
from test_while_loops import dot_while_kernel, halving_kernel  # noqa: E402

APPROXIMATE = {"exp", "exp2", "log", "log2", "tanh", "sigmoid", "rsqrt"}  # SFU or rsqrt.approx on a GPU


def main() -> int:
    checks = DeviceChecks()
    compile_only, device, failed, check = checks.compile_only, checks.device, checks.failed, checks.check

    g = torch.Generator().manual_seed(0)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        x = torch.randn(100, generator=g) * 4
        x[:6] = torch.tensor([float("inf"), float("-inf"), float("nan"), -0.0, 0.0, 2.5])
        x = x.to(dtype)
        out = torch.empty(len(FUNCTIONS), 100, dtype=dtype, device=device)
        math_kernel[(1,)](x.to(device), out, 100, BLOCK=128)
        for row, (name, fn) in enumerate(FUNCTIONS.items()):
            tol = {torch.float32: 2e-3 if name == "tanh" else 1e-5 if name in APPROXIMATE else 2e-6,
                   torch.float16: 2e-3, torch.bfloat16: 1e-2}[dtype]
            check(f"{name} {dtype}", out[row], fn(x), equal_nan=True, rtol=tol, atol=tol)

    x = torch.randn(32, 64, generator=g)
    outs = [torch.empty(64, 32, device=device) for _ in range(2)]
    trans_kernel[(1,)](x.to(device), *outs, M=32, N=64)
    check("trans", outs[0], x.T * 2)
    check(".T of an index tile", outs[1], x.T + torch.arange(32 * 64.0).reshape(32, 64).T)
    x = torch.randn(2, 8, 16, generator=g)
    out = torch.empty(16, 2, 8, device=device)
    permute_kernel[(1,)](x.to(device), out, A=2, B=8, C=16)
    check("permute", out, x.permute(2, 0, 1))
    for m, n, k, warps in ((64, 64, 32, 4), (128, 128, 64, 4), (128, 128, 64, 8)):
        a, b = torch.randn(m, k, generator=g).half(), torch.randn(n, k, generator=g).half()
        c = torch.empty(m, n, device=device)
        dot_trans_kernel[(1,)](a.to(device), b.to(device), c, M=m, N=n, K=k, num_warps=warps)
        check(f"dot(a, b.T) {m}x{n}x{k}/{warps}w", c, a.float() @ b.float().T, rtol=1e-3, atol=1e-3)
    for stages in (1, 3):
        a, b = torch.randn(128, 200, generator=g).half(), torch.randn(128, 200, generator=g).half()
        c = torch.empty(128, 128, device=device)
        loop_dot_trans_kernel[(1,)](a.to(device), b.to(device), c, 200, M=128, N=128, BK=32, num_stages=stages)
        check(f"loop dot(a, b.T), K tail, {stages} stages", c, a.float() @ b.float().T, rtol=1e-3, atol=1e-3)

    # tiles contiguous down dim 0, loaded and stored as transposes of row-major accesses (tile-column-loads)
    M, N, BM, BN = 77, 45, 32, 16
    grid = (-(-M // BM), -(-N // BN))
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(N, M + 3, generator=g).to(dtype)[:, :M]
        y = torch.empty(M, N, dtype=dtype, device=device)
        _transpose_scale[grid](x.to(device), y, M, N, M + 3, N, BM=BM, BN=BN)
        check(f"column-major load {dtype}", y, (x.T.float() * 2).to(dtype), rtol=0, atol=0)
        x = torch.randn(M, N, generator=g).to(dtype)
        y = torch.zeros(N, M + 5, dtype=dtype, device=device)
        _column_store[grid](x.to(device), y, M, N, N, M + 5, BM=BM, BN=BN)
        check(f"column-major store {dtype}", y, torch.nn.functional.pad((x.float() + 1).to(dtype).T, (0, 5)), rtol=0, atol=0)
    xt = torch.randn(N, M + 7, generator=g).bfloat16()[:, :M]
    y, s = torch.empty(M, N, dtype=torch.bfloat16, device=device), torch.empty(grid[1], M, device=device)
    _block_ptr_columns[grid](xt.to(device), y, s, M, N, M + 7, N, BM=BM, BN=BN)
    check("block pointer of order (0, 1)", y, (xt.T.float() * 3).bfloat16(), rtol=0, atol=0)
    padded = torch.nn.functional.pad(xt.T.float(), (0, grid[1] * BN - N))
    check("block pointer of order (0, 1): row maxima", s, padded.reshape(M, grid[1], BN).amax(2).T, rtol=0, atol=0)

    x = torch.randn(32, 64, generator=g)
    outs = [torch.empty(n, device=device) for n in (1, 32, 64)]
    reductions_kernel[(1,)](x.to(device), *outs, M=32, N=64)
    check("sum(axis=None, keep_dims)", outs[0], x.sum().reshape(1), rtol=1e-5, atol=1e-4)
    check("x.max(1, keep_dims)", outs[1], x.amax(1))
    check("min(axis=0)", outs[2], x.amin(0))
    for dtype in (torch.float32, torch.float16, torch.int32, torch.int8):
        x = torch.randint(-4, 4, (32, 64), generator=g).to(dtype)
        if dtype.is_floating_point:
            x[3, 7] = x[3, 9] = x[20, 0] = float("nan")
        outs = [torch.empty(n, dtype=torch.int32, device=device) for n in (32, 64, 32)]
        arg_kernel[(1,)](x.to(device), *outs, M=32, N=64)
        check(f"argmax {dtype}", outs[0].long(), x.argmax(1))
        check(f"argmin {dtype}", outs[1].long(), x.argmin(0))
        if not dtype.is_floating_point:
            check(f"argmax, last {dtype}", outs[2].long(), 63 - x.flip(1).argmax(1))

    for dtype in (torch.float32, torch.float16):
        x = torch.randn(16, 32, generator=g).to(dtype)
        x[0, 0] = float("nan")
        out = torch.empty(16 * 32, dtype=dtype, device=device)
        builtins_kernel[(1,)](x.to(device), out, M=16, N=32)
        want = (torch.addcmul(x.float().clamp(-0.5, 0.5), x.float(), torch.tensor(2.0)) + 3).to(dtype).reshape(-1)
        tol = 1e-6 if dtype == torch.float32 else 2e-3
        check(f"clamp, fma, *_like, ravel, expand_dims {dtype}", out, want, equal_nan=True, rtol=tol, atol=tol)

    for seed in (0, 2**40 + 7):
        outs = [torch.empty(1024, dtype=dt, device=device) for dt in (torch.int32, torch.float32, torch.float32)]
        random_kernel[(4,)](seed, *outs, BLOCK=256)
        i0, i1, _, _ = (torch.from_numpy(i) for i in philox_reference(seed, np.arange(1024)))
        u0, u1 = (torch.from_numpy(uniform_reference(i.numpy())) for i in (i0, i1))
        check(f"randint seed {seed}", outs[0], i0, rtol=0, atol=0)
        check(f"rand seed {seed}", outs[1], u0, rtol=0, atol=0)
        check(f"randn seed {seed}", outs[2], torch.sqrt(-2 * torch.log(u0.clamp(min=1e-7))) * torch.cos(6.283185307179586 * u1),
              rtol=1e-4, atol=1e-4)
    x = torch.randn(1000, generator=g)
    out = torch.empty(1000, device=device)
    dropout_kernel[(4,)](x.to(device), out, 1000, 0.25, 7, BLOCK=256)
    keep = torch.from_numpy(uniform_reference(philox_reference(7, np.arange(1000))[0]) > 0.25)
    check("dropout", out, torch.where(keep, x / 0.75, 0.0))

    x = torch.tensor([0.5, 3.0, 17.0, 1.0, 100.0])
    out = torch.zeros(9, dtype=torch.int32, device=device)
    halving_kernel[(1,)](x.to(device), out, 5, BLOCK=8)
    check("while: halvings", out, torch.tensor([0, 2, 5, 1, 7, 0, 0, 0, 7], dtype=torch.int32))
    a, b = torch.randn(64, 96, generator=g).half(), torch.randn(96, 64, generator=g).half()
    c = torch.empty(64, 64, device=device)
    dot_while_kernel[(1,)](a.to(device), b.to(device), c, 96, M=64, N=64, BK=32)
    check("while: a K loop of dots", c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)

    # atomics: tutorial 05's spin lock (rows into 4 buffers, each under its lock), exchanges,
    # every kind and dtype (many updates of each place; old values through a permutation)
    (x, dy, _, mean, rstd), _, dw, db, lock = _layer_norm_bwd(device=device)
    xhat = (x - mean[:, None]) * rstd[:, None]
    check("spin lock: dw", dw.sum(0), (dy * xhat).sum(0), rtol=1e-4, atol=1e-4)
    check("spin lock: db", db.sum(0), dy.sum(0), rtol=1e-4, atol=1e-4)
    check("spin lock: locks free, counts 1", lock, torch.tensor([0] * 4 + [1] * 4, dtype=torch.int32), rtol=0, atol=0)
    for dtype in (torch.int32, torch.int64, torch.float32, torch.float64):
        (x0, c0, vals, cmps), (x, c, old_x, old_c) = _exchange(dtype, "acq_rel", "gpu", device=device)
        n, pad = len(vals), torch.zeros(len(c0) - len(vals), dtype=dtype)
        check(f"atomic_xchg {dtype}", torch.stack([old_x, x[:n]]), torch.stack([x0[:n], vals]), rtol=0, atol=0)
        check(f"atomic_cas {dtype}", torch.stack([old_c, c]),
              torch.stack([c0, torch.where(c0 == torch.cat([cmps, pad]), torch.cat([vals, pad]), c0)]), rtol=0, atol=0)
    idx = torch.randint(0, 11, (37,), generator=g, dtype=torch.int32)
    perm = torch.randperm(11, generator=g).to(torch.int32)
    for op, dtype in CASES:
        y0, v, y, _ = _scatter(op, dtype, idx, device=device)
        check(f"atomic_{op} {dtype}", y, _reference(op, y0, idx, v), rtol=0, atol=0)
        y0, v, _, old = _scatter(op, dtype, perm, device=device)
        check(f"atomic_{op} {dtype}: old values", old, y0[perm.long()], rtol=0, atol=0)
    for hints in ({"CACHE": ".cg", "EVICT": "evict_last", "STORE_CACHE": ".cs"}, {"VOLATILE": True, "EVICT": "evict_first"}):
        x, y = hinted_copy(device=device, **hints)
        check(f"load/store with {hints}", y, x * 3, rtol=0, atol=0)

    # scans and reductions by a combine function
    for name, (run, args, tol) in SCAN_CASES.items():
        check(name, *run(device, *args), rtol=tol, atol=tol)

    # device_print: the lines go to the process's stdout (read in the log: 12 lines, any order)
    x = torch.arange(4.0).to(device)
    print_kernel[(1,)](x, 3, BLOCK=4)
    if device == "cuda":
        torch.cuda.synchronize()
    if compile_only:
        print("language kernels compiled")
        return 0
    print(f"{'FAILED: ' + ', '.join(failed) if failed else 'every language kernel matches torch'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
