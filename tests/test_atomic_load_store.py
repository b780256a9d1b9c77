"""Triton's `atomic_load` and `atomic_store` (Triton 3.9): on the CPU target, values written and
read back under masks (odd sizes, pointer increments, a scalar flag a later program reads);
compiled for sm_90a, `ld.acquire.gpu` / `st.release.gpu` (`.relaxed`, `.cta`, `.sys` as asked)
in the PTX; a `sem` Triton refuses, or an element type the atomics lack, an error at the line."""

import re

import pytest
import torch

import tile


@tile.jit
def _publish(src, dst, readback, flag, seen, n, SEM_STORE: tile.constexpr, SEM_LOAD: tile.constexpr,
             SCOPE: tile.constexpr, BLOCK: tile.constexpr, ):
    pid = tile.program_id(0)
    offs = pid * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    v = tile.load(src + offs, mask=mask)
    dst += pid * BLOCK
    tile.atomic_store(dst + tile.arange(0, BLOCK), v * 2, mask=mask, sem=SEM_STORE, scope=SCOPE)
    got = tile.atomic_load(dst + tile.arange(0, BLOCK), mask=mask, sem=SEM_LOAD, scope=SCOPE)
    tile.store(readback + offs, got + 1, mask=mask)
    # (the CPU runs programs one after another: each sees the flag the one before it raised)
    tile.store(seen + pid, tile.atomic_load(flag))
    tile.atomic_store(flag, pid + 1, sem="release")


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float16, torch.uint32])
def test_cpu_store_then_load(dtype):
    n = 300
    src = torch.arange(n).to(dtype) if dtype != torch.uint32 else torch.arange(n, dtype=torch.int64).to(dtype)
    dst = torch.full((n + 7, ), 5).to(dtype)
    readback = torch.zeros(n).to(dtype)
    flag, seen = torch.zeros(1, dtype=torch.int32), torch.full((3, ), -1, dtype=torch.int32)
    _publish[(3, )](src, dst, readback, flag, seen, n, SEM_STORE="release", SEM_LOAD="acquire", SCOPE="gpu", BLOCK=128)
    want = (torch.arange(n) * 2)
    assert torch.equal(dst[:n].to(torch.int64), want) and torch.equal(dst[n:].to(torch.int64), torch.full((7, ), 5))
    assert torch.equal(readback.to(torch.int64), want + 1)
    assert seen.tolist() == [0, 1, 2] and flag.item() == 3


@pytest.mark.parametrize("sem_store, sem_load, scope, bits, ptx_dtype", [
    ("release", "acquire", "gpu", 32, torch.float32), ("relaxed", "relaxed", "cta", 16, torch.bfloat16),
    ("release", "relaxed", "sys", 64, torch.int64),
])
def test_sm90a_ptx(sem_store, sem_load, scope, bits, ptx_dtype, gpu_target):
    gpu_target("sm_90a")
    meta = lambda dt: torch.empty(1000, dtype=dt, device="meta")  # noqa: E731
    launcher = _publish.compile(meta(ptx_dtype), meta(ptx_dtype), meta(ptx_dtype), torch.empty(1, dtype=torch.int32, device="meta"),
                                torch.empty(8, dtype=torch.int32, device="meta"), 1000, SEM_STORE=sem_store, SEM_LOAD=sem_load,
                                SCOPE=scope, BLOCK=256)
    ptx = launcher.asm["ptx"]
    assert re.search(rf"st\.{sem_store}\.{scope}\.global\.b{bits} \[", ptx)
    assert re.search(rf"ld\.{sem_load}\.{scope}\.global\.b{bits} ", ptx)
    assert re.search(r"ld\.acquire\.gpu\.global\.b32 ", ptx) and re.search(r"st\.release\.gpu\.global\.b32 \[", ptx)  # (the flag)
    assert "atom." not in ptx


@tile.jit
def _bad(x, CASE: tile.constexpr):
    offs = tile.arange(0, 16)
    if CASE == 0:
        v = tile.atomic_load(x + offs, sem="release")
    elif CASE == 1:
        tile.atomic_store(x + offs, 1.0, sem="acquire")
        v = offs
    else:
        v = tile.atomic_load(x + offs)
    tile.store(x + offs, v)


@pytest.mark.parametrize("case, dtype, message", [(0, torch.float32, "atomic_load's sem must be 'acquire' or 'relaxed'"),
                                                  (1, torch.float32, "atomic_store's sem must be 'release' or 'relaxed'"),
                                                  (2, torch.int8, "atomic_load takes .* but 'x' is int8")])
def test_bad_uses_are_errors_at_their_line(case, dtype, message):
    with pytest.raises(tile.CompilationError, match=message) as e:
        _bad[(1, )](torch.zeros(16, dtype=dtype), CASE=case)
    assert "test_atomic_load_store.py" in str(e.value)
