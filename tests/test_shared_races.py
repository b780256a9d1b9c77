"""Shared-memory races in the sm_90a code (issue 38), found at compile time: tests/shared_races.py
evaluates every thread's shared-memory accesses in the `gpu` stage and reports a byte that one
thread writes and another accesses between two barriers, what compute-sanitizer's racecheck
reports on a GPU. The kernels are the examples' (their own shapes and options): a bias row in a
layout wider than it, `cp.async` copies of a tile smaller than the threads, reductions whose
result every lane of a butterfly holds, a pipelined layer norm's tail copies, a persistent
matmul's ring reused per tile, a fused MoE's rings of transposed expert weights."""

import numpy as np
import pytest
import torch

import tile
from flash_attention import attention_kernel
from fused_moe import fused_moe_kernel
from fused_softmax import softmax_kernel
from layer_norm import layer_norm_kernel
from matmul import matmul_kernel, persistent_matmul_kernel
from shared_races import check

from tile.codegen.gpu import first_copies
from tile.codegen.gpu.first_copies import copy_bits


def meta(*shape, dtype=torch.float16):
    return torch.empty(*shape, dtype=dtype, device="meta")


def _matmul(M, N, K, dtype=torch.float16, persistent=False, **tiles):
    a, b, bias, out = meta(M, K, dtype=dtype), meta(K, N, dtype=dtype), meta(N, dtype=dtype), meta(M, N, dtype=dtype)
    kernel = persistent_matmul_kernel if persistent else matmul_kernel
    return kernel.compile(a, b, bias, out, M, N, K, K, 1, N, 1, N, 1, GROUP=4, ACTIVATION="gelu", **tiles)


CASES = {
    # 32x32 tiles on 4 warps: the 32-wide bias row (warps 1..3 hold warp 0's copies) and the 32x16
    # operand copies (64 16-byte runs on 128 threads) written twice or four times each
    "matmul 32x32x16": lambda: _matmul(100, 72, 48, BM=32, BN=32, BK=16),
    # its ring allocated per tile: the previous tile's epilogue still reads where the next copies write
    "persistent matmul": lambda: _matmul(300, 520, 144, dtype=torch.bfloat16, persistent=True, BM=128, BN=128, BK=32),
    # every lane of a warp holds the row's max and sum after the butterfly
    "softmax": lambda: softmax_kernel.compile(meta(7, 1000), meta(7, 1000), 1000, 1000, 1000, BLOCK=1024, SINGLE_TILE=True),
    # 2 elements a thread, copied 16 bytes at a time: over the neighbours' and past the slot
    "pipelined layer norm": lambda: layer_norm_kernel.compile(
        meta(29, 700), meta(700), meta(700), meta(29, 700), 700, 700, 700, 1e-5, BLOCK=256, ONE_BLOCK=False, STAGES=2),
    # 32 elements on 128 threads: four copies of each
    "gather": lambda: gather_kernel.compile(meta(30), meta(30, dtype=torch.int32), meta(30), 30, BLOCK=32),
    # rows of the wgmma scores reduced in place: the four lanes of a row hold its max and sum
    "causal attention": lambda: _attention(2, 3, 200, 64, lse=meta(2, 3, 200, dtype=torch.float32)),
    # attention's backward: q and dO read in place by wgmma as B and, K-major, as B transposed
    "attention backward dK dV": lambda: _bwd("dkdv"),
    "attention backward dQ": lambda: _bwd("dq"),
    # a 128-wide row on 16 warps: warps 4-15 hold copies of 0-3's partials (an RMSNorm backward at 16 warps)
    "row sums past the row": lambda: row_sums_kernel.compile(meta(7, 100), meta(7), meta(7), 100, BLOCK=128, num_warps=16),
    "column sums past the rows": lambda: row_sums_kernel.compile(meta(7, 300), meta(7), meta(7), 300, BLOCK=512,
                                                                 COLUMNS=True, num_warps=16),
    # expert weights read as B = W.T (% N): rings of their transposes read in place (tile-k-major-loads)
    "fused moe": lambda: _fused_moe(100, 256, 192, 8),
}


def _fused_moe(M, K, N, E, BM=64):
    ids = torch.empty(M * 2 + E * BM, dtype=torch.int32, device="meta")
    return fused_moe_kernel.compile(
        meta(M, K), meta(E, N, K), meta(M, 2, N), meta(M, 2, dtype=torch.float32), ids,
        meta(ids.numel() // BM, dtype=torch.int32), meta(1, dtype=torch.int32), N, K, ids.numel(), 2 * M,
        K, 1, N * K, 1, K, 2 * N, 1, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=64, BLOCK_SIZE_K=64, GROUP_SIZE_M=8,
        MUL_ROUTED_WEIGHT=True, top_k=2, compute_type=tile.float16, num_warps=4, num_stages=3)


def _bwd(which):
    import flash_attention_bwd as fab
    from test_flash_attention_bwd import _dkdv_args, _dq_args

    args, meta = (_dkdv_args if which == "dkdv" else _dq_args)(64, True)
    return (fab.bwd_dkdv if which == "dkdv" else fab.bwd_dq).compile(*args, **meta)


@tile.kernel
def row_sums_kernel(x, out, out2, n, BLOCK: tile.constexpr, COLUMNS: tile.constexpr = False):
    """Two back-to-back row reductions (alternating scratch halves); or, COLUMNS, a column sum
    of a tile of 8 rows (a reduction into a layout)."""
    r = tile.arange(0, BLOCK)
    if COLUMNS:
        rows = tile.arange(0, 8)
        v = tile.load(x + rows[:, None] * n + r[None, :], mask=(rows[:, None] < 7) & (r[None, :] < n), other=0.0)
        tile.store(out + rows, tile.sum(v, axis=1), mask=rows < 7)
    else:
        v = tile.load(x + tile.program_id(0) * n + r, mask=r < n, other=0.0)
        mean = tile.sum(v, axis=0) / n
        tile.store(out + tile.program_id(0), mean)
        tile.store(out2 + tile.program_id(0), tile.sum((v - mean) * (v - mean), axis=0))


@tile.kernel
def gather_kernel(x, idx, out, n, BLOCK: tile.constexpr):
    """A permutation of a row shorter than the threads (each element held by several)."""
    r = tile.arange(0, BLOCK)
    v = tile.load(x + r, mask=r < n, other=0.0)
    tile.store(out + r, tile.gather(v, tile.load(idx + r, mask=r < n, other=0), 0), mask=r < n)


def _attention(B, H, N, D, **options):
    q = meta(B, H, N, D)
    return attention_kernel.compile(q, q, q, q, N, 0.125, H, *q.stride(), *q.stride(), *q.stride(), *q.stride(),
                                    BLOCK_M=64, BLOCK_N=64, D=D, CAUSAL=True, **options)


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_shared_memory_races(gpu_target, case):
    gpu_target()
    launcher = CASES[case]()
    report = check(launcher.asm["gpu"], launcher.metadata["shared_bytes"])
    # every write's address known (a gather's reads are at its run-time indices)
    assert report.checked > 0 and not [u for u in report.unknown if "store" in u or "copy" in u], report.unknown
    assert not report.hazards and not report.out_of_bounds, report


def test_copies_all_writing_are_races(gpu_target, monkeypatch, tmp_path):
    """The check fails where every copy of an element writes it (the code before the fix)."""
    gpu_target()
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(first_copies, "copy_bits", lambda ids: [0] * ids.shape[1])

    @tile.kernel  # (a kernel of its own: nothing compiled before the patch is reused)
    def row_sum_kernel(x, out, n, BLOCK: tile.constexpr):
        cols = tile.arange(0, BLOCK)
        tile.store(out, tile.sum(tile.load(x + cols, mask=cols < n, other=0.0), axis=0))

    report = check(row_sum_kernel.compile(meta(900), meta(1), 900, BLOCK=1024).asm["gpu"])
    assert report.hazards and "memref.store" in report.hazards[0].ops[0], report


def test_copy_bits():
    tid = np.arange(128)[:, None]
    assert copy_bits(tid % 32) == [96]  # a 32-wide row on 4 warps: warp 0 writes
    assert copy_bits(tid // 4) == [3]  # a quad's four lanes hold a row: lane 4g writes
    assert copy_bits(np.concatenate([tid, 128 + tid // 32], 1)) == [0, 31]  # no copies; a warp's value
    assert copy_bits(np.minimum(tid, 5)) == [0]  # threads 5.. hold one element: no bits say which (all write)
