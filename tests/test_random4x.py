"""Triton's other random entry points: `randint4x`, `rand4x`, `randn4x`, `philox` (4x32 and 4x64),
`philox_impl`, `uint_to_uniform_float`, `pair_uniform_to_normal`; on the CPU target against a
Philox written here with numpy (64-bit offsets: the counter's high word) and bit for bit against
Triton's own functions, the same kernel's source run by Triton's interpreter; compiled for sm_90a."""

import re

import numpy as np
import pytest
import torch

import tile
from as_triton import run_in_triton

M32 = np.uint64(0xFFFFFFFF)


def philox4x32(seed: int, c: list, rounds: int = 10) -> list:
    """Philox 4x32 (Salmon et al.) on counters c (four uint64 arrays of 32-bit words)."""
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)
    for _ in range(rounds):
        p0, p1 = np.uint64(0xD2511F53) * c[0], np.uint64(0xCD9E8D57) * c[2]
        c = [((p1 >> np.uint64(32)) ^ c[1] ^ k0) & M32, p1 & M32, ((p0 >> np.uint64(32)) ^ c[3] ^ k1) & M32, p0 & M32]
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & M32, (k1 + np.uint64(0xBB67AE85)) & M32
    return [x.astype(np.uint32) for x in c]


@tile.jit
def _random4x(seed, ints, uniform, normal, wide, n, base, BLOCK: tile.constexpr, ):
    pid = tile.program_id(0)
    offs = pid * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    big = offs.to(tile.int64) + base  # (past 2**32: the counter's second word)
    i0, i1, i2, i3 = tile.randint4x(seed, big)
    u0, u1, u2, u3 = tile.rand4x(seed, offs, n_rounds=7)
    n0, n1, n2, n3 = tile.randn4x(seed, offs)
    ints += offs
    uniform += offs
    tile.store(ints, i0, mask=mask)
    tile.store(ints + n, i1, mask=mask)
    tile.store(ints + 2 * n, i2, mask=mask)
    tile.store(ints + 3 * n, i3, mask=mask)
    tile.store(uniform, u0, mask=mask)
    tile.store(uniform + n, u1, mask=mask)
    tile.store(uniform + 2 * n, u2, mask=mask)
    tile.store(uniform + 3 * n, u3, mask=mask)
    for k in tile.static_range(4):
        z = n0 if k == 0 else n1 if k == 1 else n2 if k == 2 else n3
        tile.store(normal + k * n + offs, z, mask=mask)
    c = big.to(tile.uint64)
    p0, p1, p2, p3 = tile.philox(seed, c, c * 0, c ^ 0xFFFF, c, n_rounds=6)
    wide += offs
    tile.store(wide, p0 ^ p3, mask=mask)
    k0 = (seed & 0xFFFF).to(tile.uint32)
    q0, _, _, q3 = tile.philox_impl(offs.to(tile.uint32), k0, k0 + 1, offs.to(tile.uint32, bitcast=True), k0, k0 ^ 5, 3)
    a, b = tile.pair_uniform_to_normal(tile.uint_to_uniform_float(p1), tile.uint_to_uniform_float(q0 + q3))
    tile.store(wide + n, (a * 1000.0 + b).to(tile.int64).to(tile.uint64, bitcast=True), mask=mask)


def _run(seed, n=300, base=2**32 * 3 + 17, block=128):
    ints = torch.zeros(4 * n, dtype=torch.uint32)
    uniform, normal = torch.zeros(4 * n), torch.zeros(4 * n)
    wide = torch.zeros(2 * n, dtype=torch.uint64)
    _random4x[(tile.cdiv(n, block), )](seed, ints, uniform, normal, wide, n, base, BLOCK=block)
    return ints, uniform, normal, wide


@pytest.mark.parametrize("seed", [42, 2**40 + 7])
def test_randint4x_rand4x_randn4x_against_numpy(seed):
    n, base = 300, 2**32 * 3 + 17
    ints, uniform, normal, _ = _run(seed, n, base)
    big = np.arange(n, dtype=np.uint64) + np.uint64(base)
    zero = np.zeros(n, dtype=np.uint64)
    want = philox4x32(seed, [big & M32, big >> np.uint64(32), zero, zero])
    assert np.array_equal(ints.numpy().reshape(4, n), np.stack(want))
    offs = np.arange(n, dtype=np.uint64)
    u = [np.where(i.view(np.int32) < 0, ~i.view(np.int32), i.view(np.int32)).astype(np.float32) * np.float32(4.6566127342e-10)
         for i in philox4x32(seed, [offs, zero, zero, zero], rounds=7)]
    assert np.array_equal(uniform.numpy().reshape(4, n), np.stack(u))
    assert 0 <= uniform.min() and uniform.max() < 1
    z = normal.reshape(4, n)
    assert abs(z.mean()) < 0.15 and abs(z.std() - 1) < 0.15


TRITON_SCRIPT = """
from test_random4x import _random4x, _run

theirs_kernel = as_triton(_random4x)
n, base = 300, 2**32 * 3 + 17
for seed in (42, 2**40 + 7):
    ours = _run(seed, n, base)
    theirs = [torch.zeros_like(t) for t in ours]
    theirs_kernel[(3, )](seed, *theirs, n, base, BLOCK=128)
    assert torch.equal(ours[0], theirs[0]), "randint4x"
    assert torch.equal(ours[1], theirs[1]), "rand4x"
    torch.testing.assert_close(ours[2], theirs[2], rtol=1e-5, atol=1e-5)
    assert torch.equal(ours[3][:n], theirs[3][:n]), "philox 4x64"
    assert (ours[3][n:].view(torch.int64) - theirs[3][n:].view(torch.int64)).abs().max() <= 1, "philox_impl, normals"
print("same")
"""


def test_same_bits_as_triton():
    """Triton's own functions, run by its interpreter (a process of its own: TRITON_INTERPRET is
    read at import), give the same ints and uniforms; the normals agree to float rounding."""
    pytest.importorskip("triton")
    run = run_in_triton(TRITON_SCRIPT)
    assert run.returncode == 0 and "same" in run.stdout, run.stderr[-2000:]


@tile.jit
def _bad(seed, x, CASE: tile.constexpr):
    offs = tile.arange(0, 16)
    if CASE == 0:
        a, b, c, d = tile.philox(seed, offs, offs.to(tile.int64), offs, offs)
    elif CASE == 1:
        a, b, c, d = tile.philox_impl(offs, offs, offs, offs, seed, seed)
    else:
        a = tile.uint_to_uniform_float(offs.to(tile.int16))
    tile.store(x + offs, a)


@pytest.mark.parametrize("case, message", [(0, "all 32-bit or all 64-bit"), (1, "must be uint32 or uint64"),
                                           (2, "32- or 64-bit int")])
def test_bad_counters_are_errors_at_their_line(case, message):
    with pytest.raises(tile.CompilationError, match=message) as e:
        _bad[(1, )](5, torch.zeros(16), CASE=case)
    assert "test_random4x.py" in str(e.value)


def test_sm90a(gpu_target):
    gpu_target("sm_90a")
    meta = lambda n, dt: torch.empty(n, dtype=dt, device="meta")  # noqa: E731
    launcher = _random4x.compile(42, meta(4096, torch.uint32), meta(4096, torch.float32), meta(4096, torch.float32),
                                 meta(2048, torch.uint64), 1024, 2**33, BLOCK=256)
    ptx = launcher.asm["ptx"]
    assert re.search(r"mul\.hi\.u32", ptx) and re.search(r"mul\.hi\.u64", ptx) and re.search(r"cvt\.rn\.f32\.s32", ptx)
