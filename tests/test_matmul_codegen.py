"""Compile-only checks of the tensor-core matmul (no GPU needed): the sm_80 and sm_90
PTX of examples/matmul.py uses cp.async into shared rings (tile-pipeline), ldmatrix
(.trans for the row-major B) and mma.sync; the sm_90a PTX uses wgmma on rings that
TMA fills (cp.async for a column-major B), and its SASS HGMMA; no spills."""

import os
import re
import subprocess
import tempfile

import pytest
import torch

import tile  # noqa: F401


def _sass(cubin: bytes) -> list[str]:
    """The SASS of a cubin, one instruction per line (cuobjdump from the triton wheel)."""
    import triton

    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([tool, "-sass", f.name], capture_output=True, text=True, check=True).stdout.splitlines()


def _loop_local_memory(cubin: bytes, mma: str = "HMMA") -> list[str]:
    """SASS local-memory accesses (spills) between the K loop's first and last `mma` (HMMA or HGMMA)."""
    sass = _sass(cubin)
    hmma = [i for i, line in enumerate(sass) if re.search(rf"\b{mma}\b", line)]
    assert hmma, f"no {mma} in the SASS"
    return [line for line in sass[hmma[0]:hmma[-1]] if re.search(r"\b(STL|LDL)\b", line)]


def _assert_no_loop_spills(launcher, mma: str = "HMMA"):
    """No local memory in the main loop."""
    assert _loop_local_memory(launcher.asm["cubin"], mma) == []


def _build(monkeypatch, target, dtype=torch.bfloat16, b_col_major=False, M=256, N=256, K=256, a_col_major=False,
           persistent=False, **cfg):
    import matmul

    monkeypatch.setenv("TILE_TARGET", target)
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    kernel = matmul.persistent_matmul_kernel if persistent else matmul.matmul_kernel
    kernel._launchers.clear()
    a = torch.empty(K, M, dtype=dtype).t() if a_col_major else torch.empty(M, K, dtype=dtype)
    b = torch.empty(N, K, dtype=dtype).t() if b_col_major else torch.empty(K, N, dtype=dtype)
    bias, out = torch.empty(N, dtype=dtype), torch.empty(M, N, dtype=dtype)
    opts = dict(BM=128, BN=128, BK=32, GROUP=8, num_warps=8, num_stages=3, ACTIVATION="gelu")
    opts.update(cfg)
    return kernel.compile(a, b, bias, out, M, N, K, *a.stride(), *b.stride(), *out.stride(), **opts)


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_pipelined_matmul_ptx(target, dtype, monkeypatch):
    launcher = _build(monkeypatch, target, dtype)
    ptx = launcher.asm["ptx"]
    kind = "bf16.bf16" if dtype == torch.bfloat16 else "f16.f16"
    # 8 warps as 4 x 2, each 32 x 64: 2 x 8 fragments, 2 steps of K per 32-wide tile.
    assert ptx.count(f"mma.sync.aligned.m16n8k16.row.col.f32.{kind}.f32") == 32
    # A: one x4 per 16 rows and K step (2 x 2); B: one x4.trans per two 8-column fragments (4 x 2).
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 4
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == 8
    # Each thread copies 2 + 2 16-byte chunks per stage: in the prologue (2 stages) and the loop.
    assert ptx.count("cp.async.cg.shared.global") == 12
    flat = " ".join(ptx.split())
    assert "cp.async.commit_group" in ptx and "cp.async.wait_group 1;" in flat and "cp.async.wait_group 0;" in flat
    assert "st.shared" not in ptx.split("cp.async.wait_group")[1].split("mma.sync")[0]  # operands are not staged
    _assert_no_loop_spills(launcher)
    assert launcher.metadata["shared_bytes"] >= 3 * (128 * 32 + 32 * 128) * 2


@pytest.mark.parametrize("col_major, plain, trans", [("b", 12, 0), ("a", 0, 12), ("ab", 8, 4)])
def test_column_major_operands_on_cp_async(col_major, plain, trans, monkeypatch):
    """A column-major operand (no TMA on sm_80) is copied into slots that hold its transpose,
    16 bytes at a time down its contiguous columns, as many cp.async as a row-major one; the
    ldmatrix that reads it flips `.trans` (A: 4 x4 per K step pair, B: 8; see above)."""
    launcher = _build(monkeypatch, "sm_80", a_col_major="a" in col_major, b_col_major="b" in col_major)
    ptx = launcher.asm["ptx"]
    assert ptx.count("cp.async.cg.shared.global") == 12
    assert ptx.count("ld.global") == 1  # the bias; no operand element is loaded on its own
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == plain
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == trans
    assert ptx.count("mma.sync.aligned.m16n8k16") == 32
    _assert_no_loop_spills(launcher)


def test_one_stage_stages_registers(monkeypatch):
    """num_stages=1 turns the pipeliner off: operands go through registers, then ldmatrix."""
    launcher = _build(monkeypatch, "sm_80", num_stages=1)
    ptx = launcher.asm["ptx"]
    assert "cp.async" not in ptx
    assert "st.shared.v4.b32" in ptx and "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx


@pytest.mark.parametrize("activation", ["none", "gelu"])
@pytest.mark.parametrize("cfg", [dict(BM=128, BN=128, BK=32, num_warps=4, num_stages=3),  # the benchmark's
                                 dict(BM=128, BN=256, BK=32, num_warps=8, num_stages=3),
                                 dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=4)])
def test_benchmark_configs_do_not_spill(cfg, activation, monkeypatch):
    """No local memory at all, epilogue included: a tensor-core kernel's masked stores stay
    branches (predicated ones spilled the gelu epilogue, with the accumulator live)."""
    launcher = _build(monkeypatch, "sm_90", M=4096, N=4096, K=4096, ACTIVATION=activation, **cfg)
    info = launcher.metadata["ptxas"]
    assert info["stack_frame"] == info["spill_stores"] == info["spill_loads"] == 0, info
    _assert_no_loop_spills(launcher)


@pytest.mark.parametrize("cfg,groups,n", [
    (dict(BM=128, BN=128, BK=64, num_warps=4, num_stages=3), (1, 1), 128),  # one warpgroup, two 64-row halves
    (dict(BM=128, BN=256, BK=64, num_warps=8, num_stages=4), (2, 1), 256),
    (dict(BM=128, BN=128, BK=32, num_warps=8, num_stages=3), (2, 1), 128),  # 64-byte swizzle for A
    (dict(BM=128, BN=256, BK=32, num_warps=8, num_stages=4), (2, 1), 256),  # the benchmark's
])
def test_wgmma_matmul(cfg, groups, n, monkeypatch):
    """sm_90a: the dot is wgmma.mma_async from the TMA rings (no ldmatrix, no mma.sync), one
    m64nNk16 per 64 rows of a warpgroup's part and 16-wide step of K; each operand tile comes
    by cp.async.bulk.tensor, one per 128-byte panel, on an mbarrier, from a tensor map the ABI
    describes; the shared memory starts on 1024 bytes; HGMMA in the SASS."""
    launcher = _build(monkeypatch, "sm_90a", M=4096, N=4096, K=4096, **cfg)
    ptx = launcher.asm["ptx"]
    per_group_rows = cfg["BM"] // groups[0]
    assert ptx.count(f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16") == per_group_rows // 64 * cfg["BK"] // 16
    assert "mma.sync" not in ptx and "ldmatrix" not in ptx and "cp.async.cg" not in ptx
    # A: BK bf16 per row, one panel (64-byte swizzle at BK=32); B: BN / 64 panels of 128 bytes.
    panels_a, panels_b = 1, cfg["BN"] // 64
    ahead = cfg["num_stages"] - 2  # copies in the prologue, then one iteration's in the loop
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes") == \
        (ahead + 1) * (panels_a + panels_b)
    assert ptx.count("mbarrier.init.shared.b64") == cfg["num_stages"] and "mbarrier.try_wait.parity.shared.b64" in ptx
    tma = [e for e in launcher.metadata["abi"] if e["part"] == "tma"]
    assert [(e["arg"], e["box"], e["swizzle"]) for e in tma] == [
        (0, [cfg["BM"], cfg["BK"]], cfg["BK"] * 2), (1, [cfg["BK"], 64], 128)]
    assert [(e["rows"], e["cols"], e["stride"]) for e in tma] == [  # a: M x K, row stride s_am; b: K x N, s_bk
        (["arg", 4], ["arg", 6], ["arg", 7]), (["arg", 6], ["arg", 5], ["arg", 9])]
    assert "wgmma.fence.sync.aligned" in ptx and "wgmma.wait_group.sync.aligned 0;" in " ".join(ptx.split())
    assert ".shared .align 1024 .b8 __dynamic_shmem__0" in ptx
    # The epilogue: the bf16 tile through the rings' memory (no more shared memory than they
    # take), then stored as 16-byte rows: BM x BN x 2 bytes over the threads.
    ring_bytes = cfg["num_stages"] * (cfg["BM"] + cfg["BN"]) * cfg["BK"] * 2
    assert launcher.metadata["shared_bytes"] <= ring_bytes + 1024
    assert ptx.count("st.global.v4.b32") == cfg["BM"] * cfg["BN"] * 2 // 16 // (32 * cfg["num_warps"])
    assert "ld.shared.v4.b32" in ptx
    # The bias row reaches the accumulator's layout in one 8-byte read per pair of columns a
    # thread holds (BN / 8), whatever rows hold them: no read per register (exchange's vector_reads).
    assert ptx.count("ld.shared.v2.b32") == cfg["BN"] // 8 and "ld.shared.b32" not in ptx
    info = launcher.metadata["ptxas"]
    assert info["stack_frame"] == info["spill_stores"] == info["spill_loads"] == 0, info
    _assert_no_loop_spills(launcher, "HGMMA")
    if groups[0] > 1:  # the warpgroup's A offset comes from a lane-0 broadcast (see distributed_wgmma.py)
        assert "shfl.sync.idx.b32" in ptx


def test_persistent_matmul_copies_the_next_tile_before_its_epilogue(monkeypatch):
    """A persistent grid's loop over output tiles holds the K loop. Its rings and mbarriers
    outlive the loop over tiles (made before it, the mbarriers initialized once and
    invalidated after it); the first tile's first copies start before that loop, the next
    tile's right after the K loop, before this tile's epilogue, which stages its
    accumulator for TMA stores (`tile-tma-stores`: a store inside a loop) in the two B-ring
    slots the next tile's copies leave free, 128 columns a slot, all four stores in one bulk
    group; the K loop's copies into those slots wait for the stores' reads (thread 0's
    `cp.async.bulk.wait_group.read` before the iteration's barrier); wgmma on TMA rings, no
    spills."""
    cfg = dict(BM=128, BN=256, BK=64, num_warps=8, num_stages=4)
    launcher = _build(monkeypatch, "sm_90a", M=4096, N=4096, K=4096, persistent=True, **cfg)
    opt = launcher.asm["tile-opt"]
    alloc, first_copy, outer = (opt.index(s) for s in ('"tile.mbarrier_alloc"', '"tile.tma_load"', "scf.for"))
    inner = opt.index("scf.for", outer + 1)
    assert alloc < first_copy < outer < inner < opt.index('"tile.tma_store"') < opt.index('"tile.mbarrier_dealloc"')
    # Two operands: two copies each before the loop over tiles, in the K loop, and for the next tile.
    assert opt.count('"tile.tma_load"') == 2 * (2 + 1 + 2)
    # Between the K loop's own dot wait (its last op but the yield) and the wait after it: the next tile's.
    assert opt[opt.index("{pending = 1 : i32}"):opt.index("{pending = 0 : i32}")].count('"tile.tma_load"') == 4
    ptx = launcher.asm["ptx"]
    assert ptx.count("mbarrier.init.shared.b64") == ptx.count("mbarrier.inval.shared.b64") == cfg["num_stages"]
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in ptx and "cp.async.bulk.tensor.2d" in ptx
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta") == 4 and ptx.count("cp.async.bulk.commit_group") == 1
    assert "st.global" not in ptx and "fence.proxy.async.shared::cta" in ptx
    staged = opt[opt.index('"tile.tma_store"'):]
    assert staged.split("\n")[0].count("memref<4x64x256xbf16") == 1  # the B ring is its staging
    assert [e["arg"] for e in launcher.metadata["abi"] if e["part"] == "tma"] == [0, 1, 3]  # a, b; out (TMA stores)
    ring = cfg["num_stages"] * (128 * 64 + 64 * 256) * 2
    assert ring < launcher.metadata["shared_bytes"] <= ring + 8 * 1024  # no staging buffer above the ring
    info = launcher.metadata["ptxas"]
    assert info["stack_frame"] == info["spill_stores"] == info["spill_loads"] == 0, info


_TRANSPOSES = r"wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.bf16\.bf16 .*, p, 1,\s*1, (\d),\s*(\d);"


@pytest.mark.parametrize("col_major, transposes", [("", ("0", "1")), ("b", ("0", "0")), ("a", ("1", "1")), ("ab", ("1", "0"))])
def test_wgmma_matmul_operand_majors(col_major, transposes, monkeypatch):
    """Row-major operands: A K-major, B N-major (wgmma's transpose immediates 0, 1). A
    column-major B (x @ W.T) is a transposed block: TMA copies it as N x K slots (K
    contiguous) and wgmma reads it K-major (0); a column-major A likewise as K x M slots, read
    M-major (1). Every operand on TMA, no spills, with 2 warpgroups along M."""
    launcher = _build(monkeypatch, "sm_90a", b_col_major="b" in col_major, a_col_major="a" in col_major,
                      M=4096, N=4096, K=4096, BM=128, BN=256, BK=64, num_warps=8, num_stages=4)
    ptx = launcher.asm["ptx"]
    assert "cp.async.bulk.tensor" in ptx and "cp.async.cg" not in ptx
    assert len([e for e in launcher.metadata["abi"] if e["part"] == "tma"]) == 2
    # One m64n256k16 per 16-wide K step of the 64-deep tile, whichever way the operands lie.
    assert set(re.findall(_TRANSPOSES, ptx)) == {transposes} and len(re.findall(_TRANSPOSES, ptx)) == 4
    assert launcher.metadata["ptxas"]["spill_stores"] == 0


@pytest.mark.parametrize("case", ["odd_row_stride", "unaligned_a"])
def test_wgmma_matmul_without_tensor_maps(case, monkeypatch):
    """A tensor map needs a 16-byte aligned tensor and a row stride of a multiple of 16 bytes:
    with K = 100 (a row stride of 200 bytes), or with `a` starting 2 bytes into its storage,
    the specialization does not promise them, so the operands stay on cp.async rings."""
    import matmul

    monkeypatch.setenv("TILE_TARGET", "sm_90a")
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    matmul.matmul_kernel._launchers.clear()
    M, N, K = 256, 256, (100 if case == "odd_row_stride" else 128)
    a = torch.empty(M * K + 1, dtype=torch.bfloat16)[1:].view(M, K) if case == "unaligned_a" else \
        torch.empty(M, K, dtype=torch.bfloat16)
    b = torch.empty(K, N, dtype=torch.bfloat16)
    bias, out = torch.empty(N, dtype=torch.bfloat16), torch.empty(M, N, dtype=torch.bfloat16)
    launcher = matmul.matmul_kernel.compile(a, b, bias, out, M, N, K, *a.stride(), *b.stride(), *out.stride(),
                                            BM=128, BN=128, BK=64, GROUP=8, num_warps=4, num_stages=3,
                                            ACTIVATION="none")
    ptx = launcher.asm["ptx"]
    assert "cp.async.cg.shared.global" in ptx and "cp.async.bulk.tensor" not in ptx
    assert not [e for e in launcher.metadata["abi"] if e["part"] == "tma"]


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_tf32_matmul_ptx(target, monkeypatch):
    """f32 operands with input_precision="tf32" go to the tensor cores as m16n8k8 mma.sync
    (8 warps as 4 x 2, each 32 x 64: 2 x 8 fragments, 4 steps of K per 32-wide tile), their
    operands pipelined like 16-bit ones (cp.async on sm_80, TMA on sm_90a), each element read
    from shared memory and rounded to tf32 (& -8192): 2 x 4 for A and 8 x 2 for B per K step."""
    launcher = _build(monkeypatch, target, torch.float32, PRECISION="tf32")
    ptx = launcher.asm["ptx"]
    assert ptx.count("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") == 64
    assert len(re.findall(r"and\.b32\s+%r\d+, %r\d+, -8192;", ptx)) == 4 * (2 * 4 + 8 * 2)
    copy = "cp.async.bulk.tensor" if target == "sm_90a" else "cp.async.cg.shared.global"
    assert copy in ptx and "wgmma" not in ptx and "ldmatrix" not in ptx
    _assert_no_loop_spills(launcher)


def test_exact_f32_dot_stays_off_tensor_cores(monkeypatch):
    """Without tf32 an f32 dot is exact: no mma, the loop lowering."""
    ptx = _build(monkeypatch, "sm_80", torch.float32, BM=32, BN=32, BK=16, num_warps=4).asm["ptx"]
    assert "mma.sync" not in ptx and "fma.rn.f32" in ptx


@tile.kernel
def _f32_dot(a, b, c, M, N, K, ALLOW: tile.constexpr, BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr):
    """Triton's f32 GEMM as written, the precision left to the default (ALLOW None) or named."""
    rm = tile.program_id(0) * BM + tile.arange(0, BM)
    rn = tile.program_id(1) * BN + tile.arange(0, BN)
    rk = tile.arange(0, BK)
    acc = tile.zeros((BM, BN), dtype=tile.float32)
    for k in range(0, K, BK):
        x = tile.load(a + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        y = tile.load(b + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tile.dot(x, y, allow_tf32=ALLOW)
    tile.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("allow, tensor_cores", [(None, True), (True, True), (False, False)])
def test_f32_dot_precision_defaults_as_tritons(allow, tensor_cores, monkeypatch):
    """As Triton's: an f32 dot naming no precision is tf32 on a GPU (the tensor cores, 128 x 128
    blocks of 32, which the exact lowering refused as past its 48 KiB of shared memory) and exact
    on the CPU (its interpreter's); allow_tf32=False keeps the GPU's exact too."""
    M, N, K = 70, 45, 100
    a, b = torch.randn(M, K), torch.randn(K, N)
    c = torch.empty(M, N)
    _f32_dot[(tile.cdiv(M, 32), tile.cdiv(N, 32))](a, b, c, M, N, K, ALLOW=allow, BM=32, BN=32, BK=16)
    want = a.double() @ b.double()
    if allow:  # (named tf32: rounded on the CPU as well)
        torch.testing.assert_close(c.double(), want, rtol=2e-2, atol=2e-2)
    else:
        torch.testing.assert_close(c.double(), want, rtol=1e-5, atol=1e-5)
    monkeypatch.setenv("TILE_TARGET", "sm_90a")
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    big = torch.empty(4096, 4096, device="meta")
    if not tensor_cores:
        ptx = _f32_dot.compile(big, big, big, 4096, 4096, 4096, ALLOW=allow, BM=32, BN=32, BK=16).asm["ptx"]
        assert "mma.sync" not in ptx
        return
    ptx = _f32_dot.compile(big, big, big, 4096, 4096, 4096, ALLOW=allow, BM=128, BN=128, BK=32, num_warps=8).asm["ptx"]
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in ptx
