"""Warp specialization (`tile.range(..., warp_specialize=True)`, passes/tile_warp_specialize.py):
the CPU ignores it and matches torch; sm_90a splits a TMA-pipelined K loop into a producer
warpgroup and consumer warpgroups, checked in the PTX (register hand-over, per-slot mbarrier
waits and arrivals, no block barrier after the split, no spills); loops it cannot split keep
their code and warn, as Triton ignores the keyword on sm_80."""

import os
import re
import sys
import warnings

import pytest
import torch

import tile

BIG = dict(BM=128, BN=128, BK=64, GROUP=8)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _matmul_launcher(dtype=torch.bfloat16, M=256, N=256, K=256, b_col_major=False, persistent=False, **cfg):
    import matmul

    kernel = matmul.persistent_matmul_kernel if persistent else matmul.matmul_kernel
    a = torch.empty(M, K, dtype=dtype)
    b = torch.empty(N, K, dtype=dtype).t() if b_col_major else torch.empty(K, N, dtype=dtype)
    bias, out = torch.empty(N, dtype=dtype), torch.empty(M, N, dtype=dtype)
    opts = dict(BIG, num_warps=4, num_stages=3, ACTIVATION="gelu", WARP_SPECIALIZE=True)
    opts.update(cfg)
    return kernel.compile(a, b, bias, out, M, N, K, *a.stride(), *b.stride(), *out.stride(), **opts)


@pytest.mark.parametrize("dtype, shape, b_col_major", [
    (torch.bfloat16, (300, 200, 136), False),  # tails in M, N and K
    (torch.float16, (130, 72, 200), True),     # the B of x @ W.T, column-major
])
def test_cpu_ignores_warp_specialize(dtype, shape, b_col_major):
    import matmul

    torch.manual_seed(0)
    M, N, K = shape
    a = torch.randn(M, 2 * K, dtype=dtype)[:, ::2]  # a strided view: row stride 2K, column stride 2
    b = torch.randn(N, K, dtype=dtype).t() if b_col_major else torch.randn(K, N, dtype=dtype)
    bias = torch.randn(N, dtype=dtype)
    got = matmul.matmul(a, b, bias, warp_specialize=True, BM=64, BN=32, BK=32)
    torch.testing.assert_close(got, matmul.reference(a, b, bias), rtol=2e-2, atol=2e-2 * K ** 0.5)


def test_cpu_attention_ignores_warp_specialize():
    import flash_attention

    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 70, 32, dtype=torch.float16) for _ in range(3))
    got = flash_attention.attention(q, k, v, True, BLOCK_M=32, BLOCK_N=32, WARP_SPECIALIZE=True)
    torch.testing.assert_close(got, flash_attention.reference(q, k, v, True), rtol=2e-2, atol=2e-2)


def test_triton_spelling_pointer_increments():
    """Triton's tutorial form, pointers advanced each iteration: on the CPU the keyword changes nothing."""

    @tile.kernel
    def mm(a, b, c, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn, BM: tile.constexpr, BN: tile.constexpr,
           BK: tile.constexpr):
        rm = tile.program_id(0) * BM + tile.arange(0, BM)
        rn = tile.program_id(1) * BN + tile.arange(0, BN)
        rk = tile.arange(0, BK)
        a_ptrs = a + rm[:, None] * s_am + rk[None, :] * s_ak
        b_ptrs = b + rk[:, None] * s_bk + rn[None, :] * s_bn
        acc = tile.zeros((BM, BN), dtype=tile.float32)
        for k in tile.range(0, tile.cdiv(K, BK), warp_specialize=True, num_stages=3):
            x = tile.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
            y = tile.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
            acc = tile.dot(x, y, acc)
            a_ptrs += BK * s_ak
            b_ptrs += BK * s_bk
        tile.store(c + rm[:, None] * s_cm + rn[None, :] * s_cn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

    torch.manual_seed(0)
    a, b = torch.randn(50, 70, dtype=torch.float16), torch.randn(70, 40, dtype=torch.float16)
    c = torch.empty(50, 40)
    mm[(tile.cdiv(50, 32), tile.cdiv(40, 32))](a, b, c, 50, 40, 70, *a.stride(), *b.stride(), *c.stride(),
                                               BM=32, BN=32, BK=16)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)


def _barriers(ptx: str) -> list[str]:
    return re.findall(r"\b(?:bar|barrier)\.sync(?:\.aligned)?\s+[^;]*;", ptx)


@pytest.mark.parametrize("num_warps, threads, launch, consumer", [(4, 256, 128, 216), (8, 384, 168, 232)])
def test_sm90a_matmul_ptx(gpu_target, num_warps, threads, launch, consumer):
    gpu_target("sm_90a")
    with warnings.catch_warnings():
        warnings.simplefilter("error", tile.WarpSpecializeWarning)
        launcher = _matmul_launcher(num_warps=num_warps)
    ptx = launcher.asm["ptx"]
    assert launcher.metadata["num_threads"] == threads
    assert re.search(rf"\.(maxntid|reqntid) {threads}, 1, 1", ptx) and f".maxnreg {launch}" in ptx
    # the producer gives back registers, the consumers take them (what one frees covers the other)
    assert ptx.count("setmaxnreg.dec.sync.aligned.u32 \t40;") == 1
    assert ptx.count(f"setmaxnreg.inc.sync.aligned.u32 \t{consumer};") == 1
    assert 40 * 128 + consumer * num_warps * 32 <= launch * threads
    # full barriers: 2 arrivals (a copy each); empty: one per consumer warp; both initialized
    # before the split, the only block barriers there are
    inits = re.findall(r"mbarrier\.init\.shared\.b64 \[%r\d+\], (%r\d+);", ptx)
    assert len(inits) == 6
    split = ptx.index("setmaxnreg")
    before, after = _barriers(ptx[:split]), _barriers(ptx[split:])
    assert before == ["bar.sync \t0;"] * 2
    # after the split: named barriers of the consumer threads only, never barrier 0
    assert after and all(b == f"bar.sync \t1, {num_warps * 32};" for b in after), after
    # one wait per slot and iteration: the producer on empty[s], the consumers on full[s];
    # the consumers' releases (arrive), the producer's arming (expect_tx) and its TMA copies
    assert ptx.count("mbarrier.try_wait.parity.shared.b64") == 2
    assert ptx.count("mbarrier.arrive.shared.b64") == 1
    assert ptx.count("mbarrier.arrive.expect_tx.shared.b64") == 2
    assert ptx.count("cp.async.bulk.tensor.2d") == 3  # A: one 128-byte panel, B: two
    assert "wgmma.mma_async" in ptx and "wgmma.wait_group.sync.aligned 1;" in ptx
    report = launcher.metadata["ptxas"]
    assert report["spill_stores"] == report["spill_loads"] == report["stack_frame"] == 0
    assert report["registers"] == launch
    # and in the SASS: the register hand-over, block barrier 0 only before it
    from test_matmul_codegen import _sass

    sass = _sass(launcher.asm["cubin"])
    assert sum(f"USETMAXREG.DEALLOC.CTAPOOL {hex(40)}" in line for line in sass) == 1
    assert sum(f"USETMAXREG.TRY_ALLOC.CTAPOOL UP0, {hex(consumer)}" in line for line in sass) == 1
    first = next(n for n, line in enumerate(sass) if "USETMAXREG" in line)
    assert not any(re.search(r"BAR\.SYNC\S* 0x0 ;", line) for line in sass[first:])


def test_sm90a_odd_shape_f16_ptx(gpu_target):
    """Tails in every dim (TMA zero-fills them): 1000 x 1104 x 912 in f16 is split; at 1000 x 1100
    x 900 no row stride is known a multiple of 16 elements, so there is no TMA ring: a warning, and the
    kernel as it is without the keyword."""
    gpu_target("sm_90a")
    launcher = _matmul_launcher(torch.float16, 1000, 1104, 912)
    assert launcher.metadata["num_threads"] == 256 and "setmaxnreg.dec" in launcher.asm["ptx"]
    assert launcher.metadata["warp_specialize_skipped"] == []
    with pytest.warns(tile.WarpSpecializeWarning, match="cp.async rings"):
        launcher = _matmul_launcher(torch.float16, 1000, 1100, 900, num_warps=8)
    assert launcher.metadata["num_threads"] == 256 and "setmaxnreg" not in launcher.asm["ptx"]


def test_sm90a_off_by_default(gpu_target):
    gpu_target("sm_90a")
    launcher = _matmul_launcher(WARP_SPECIALIZE=False)
    assert launcher.metadata["num_threads"] == 128 and "setmaxnreg" not in launcher.asm["ptx"]
    assert "bar.sync \t1," not in launcher.asm["ptx"]


def test_pass_option_all_loops(gpu_target):
    """`tile-warp-specialize{all-loops=1}` splits the loops that did not ask."""
    gpu_target("sm_90a")
    import matmul

    p = tile.Pipeline("sm_90a", num_warps=4)
    p.replace("tile-warp-specialize", "tile-warp-specialize{num-warps=4 all-loops=1}", stage="tile-opt")
    kernel = tile.kernel(pipeline=p)(matmul.matmul_kernel.fn)
    a, b = torch.empty(256, 256, dtype=torch.bfloat16), torch.empty(256, 256, dtype=torch.bfloat16)
    bias, out = torch.empty(256, dtype=torch.bfloat16), torch.empty(256, 256, dtype=torch.bfloat16)
    launcher = kernel.compile(a, b, bias, out, 256, 256, 256, *a.stride(), *b.stride(), *out.stride(),
                              **BIG, ACTIVATION="gelu", num_warps=4, num_stages=3)
    assert launcher.metadata["num_threads"] == 256 and "setmaxnreg.inc" in launcher.asm["ptx"]


@pytest.mark.parametrize("target, case, reason", [
    ("sm_80", "matmul", "cp.async rings, not TMA"),
    ("sm_90a", "persistent", "nested in another loop"),
    ("sm_90a", "stages", "none of its loads is pipelined"),
    ("sm_90a", "attention", "cp.async rings, not TMA"),
])
def test_unsupported_loops_warn(gpu_target, target, case, reason):
    gpu_target(target)
    with pytest.warns(tile.WarpSpecializeWarning, match=reason) as seen:
        if case == "attention":
            import flash_attention

            q = torch.empty(1, 2, 256, 64, dtype=torch.float16)
            launcher = flash_attention.attention_kernel.compile(
                q, q, q, q, 256, 0.125, 2, *q.stride(), *q.stride(), *q.stride(), *q.stride(), BLOCK_M=128,
                BLOCK_N=64, D=64, CAUSAL=False, WARP_SPECIALIZE=True, num_warps=8, num_stages=3)
        else:
            launcher = _matmul_launcher(persistent=case == "persistent", num_stages=1 if case == "stages" else 3)
    assert "matmul.py" in str(seen[0].message) or "flash_attention.py" in str(seen[0].message)
    assert "setmaxnreg" not in launcher.asm["ptx"] and "bar.sync \t1," not in launcher.asm["ptx"]
    assert launcher.metadata["num_threads"] == (8 if case == "attention" else 4) * 32


def _rows_attention():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import warp_specialize_on_device

    return warp_specialize_on_device


def test_cpu_rows_attention_ignores_warp_specialize():
    """The attention whose KV loop sm_90a splits (keys and values by TMA), on the CPU."""
    ws = _rows_attention()
    import flash_attention

    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 2, 128, 32, dtype=torch.bfloat16) for _ in range(3))
    got = ws.rows_attention(q, k, v, BLOCK_M=64, BLOCK_N=32, warp_specialize=True)
    torch.testing.assert_close(got, flash_attention.reference(q, k, v), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("num_warps, num_stages", [(4, 3), (8, 2)])
def test_sm90a_attention_kv_loop_ptx(gpu_target, num_warps, num_stages):
    """Two dots a slot (Q K^T on the key slot, P V on the value slot): one release per
    iteration after the last; Q's one-off cp.async copy and the softmax's exchanges sit
    behind named barriers."""
    gpu_target("sm_90a")
    ws = _rows_attention()
    q = torch.empty(1, 2, 256, 64, dtype=torch.bfloat16)
    launcher = ws.rows_attention_kernel.compile(*ws.rows_attention_args(q, q, q, q), BLOCK_M=128, BLOCK_N=64, D=64,
                                                WARP_SPECIALIZE=True, num_warps=num_warps, num_stages=num_stages)
    ptx = launcher.asm["ptx"]
    assert launcher.metadata["num_threads"] == (num_warps + 4) * 32
    assert "setmaxnreg.dec" in ptx and "setmaxnreg.inc" in ptx
    split = ptx.index("setmaxnreg")
    assert _barriers(ptx[:split]) == ["bar.sync \t0;"] * 2
    assert all(b == f"bar.sync \t1, {num_warps * 32};" for b in _barriers(ptx[split:]))
    assert ptx.count("mbarrier.try_wait.parity.shared.b64") == 2 and ptx.count("mbarrier.arrive.shared.b64") == 1
    assert ptx.count("wgmma.mma_async") >= 2
    report = launcher.metadata["ptxas"]
    assert report["spill_stores"] == report["spill_loads"] == 0


def test_triton_tutorial_06_forward_split(gpu_target):
    """Triton's fused-attention tutorial asks for warp_specialize=True; its keys and values come
    through host tensor descriptors (TMA), so its KV loop splits. At 128 query rows, a head dim of
    128 and one consumer warpgroup the consumers fit two blocks' registers (216) without a spill
    (20 bytes spilled there before 2026-12-07's codegen changes; a spill now warns and fails)."""
    sys.path.insert(0, os.path.join(ROOT, "examples", "triton_tutorials"))
    import t06_fused_attention

    gpu_target("sm_90a")
    kernel, args, meta = t06_fused_attention.benchmark_launches(causal=(False,))[0]
    kernel = kernel.kernel if isinstance(kernel, tile.Autotuner) else kernel
    with warnings.catch_warnings():
        warnings.simplefilter("error", tile.WarpSpecializeWarning)
        warnings.simplefilter("error", tile.SpillWarning)
        launcher = kernel.compile(*args, **dict(meta, warp_specialize=True))
    assert launcher.metadata["num_threads"] == 256 and "setmaxnreg.inc.sync.aligned.u32 \t216;" in launcher.asm["ptx"]
    assert launcher.metadata["ptxas"]["registers"] == 144 and launcher.metadata["ptxas"]["spill_stores"] == 0


def test_register_split_is_checked(gpu_target, monkeypatch):
    """One block an SM's split rewrites the three numbers of the PTX; a build whose registers at
    launch are not the split's `.maxnreg` (the consumers' setmaxnreg.inc would wait forever for
    registers nobody frees) is a CompilationError, not a hang."""
    from tile.codegen.backend import cubin

    gpu_target("sm_90a")
    ptx = _matmul_launcher().asm["ptx"]
    roomier = cubin.one_block_registers(ptx)
    assert ".maxnreg 144" in roomier and "setmaxnreg.inc.sync.aligned.u32 \t240;" in roomier
    assert "setmaxnreg.dec.sync.aligned.u32 \t40;" in roomier
    assert cubin.one_block_registers(roomier) is None
    assert cubin.one_block_registers(_matmul_launcher(WARP_SPECIALIZE=False).asm["ptx"]) is None
    monkeypatch.setattr(cubin, "_ptxas", lambda ptx, target, extra: (b"", "ptxas info    : Used 96 registers"))
    with pytest.raises(tile.CompilationError, match="96 registers a thread, not the 128"):
        cubin.assemble(ptx + "\n", "sm_90a")
