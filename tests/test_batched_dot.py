"""`tile.dot` of rank-3 tiles, as Triton's batched `tl.dot`: CPU against torch.bmm (with and
without an accumulator, pointer-increment K loop, odd sizes masked), compiled for sm_90a and
sm_80 onto the tensor cores, and bad shapes named at the line."""

import pytest
import torch

import tile


@tile.kernel
def bmm_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_ab, stride_am, stride_ak,
    stride_bb, stride_bk, stride_bn,
    stride_cb, stride_cm, stride_cn,
    BB: tile.constexpr, BM: tile.constexpr, BN: tile.constexpr, BK: tile.constexpr,
):
    pid_b, pid_m = tile.program_id(0), tile.program_id(1)
    offs_b = pid_b * BB + tile.arange(0, BB)
    offs_m = pid_m * BM + tile.arange(0, BM)
    offs_n = tile.arange(0, BN)
    offs_k = tile.arange(0, BK)
    a_ptrs = a_ptr + offs_b[:, None, None] * stride_ab + offs_m[None, :, None] * stride_am + offs_k[None, None, :] * stride_ak
    b_ptrs = b_ptr + offs_b[:, None, None] * stride_bb + offs_k[None, :, None] * stride_bk + offs_n[None, None, :] * stride_bn
    acc = tile.zeros((BB, BM, BN), dtype=tile.float32)
    for k in range(0, tile.cdiv(K, BK)):
        a = tile.load(a_ptrs, mask=(offs_m[None, :, None] < M) & (offs_k[None, None, :] < K - k * BK), other=0.0)
        b = tile.load(b_ptrs, mask=(offs_k[None, :, None] < K - k * BK) & (offs_n[None, None, :] < N), other=0.0)
        acc = tile.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    c_ptrs = c_ptr + offs_b[:, None, None] * stride_cb + offs_m[None, :, None] * stride_cm + offs_n[None, None, :] * stride_cn
    tile.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[None, :, None] < M) & (offs_n[None, None, :] < N))


def bmm(a, b, BB=2, BM=32, BN=64, BK=16, **options):
    B, M, K = a.shape
    N = b.shape[2]
    c = torch.empty(B, M, N, dtype=a.dtype, device=a.device)
    bmm_kernel[(B // BB, tile.cdiv(M, BM))](
        a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BB=BB, BM=BM, BN=BN, BK=BK, **options,
    )
    return c


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_batched_dot_cpu(dtype):
    torch.manual_seed(0)
    a = torch.randn(4, 45, 50, dtype=dtype)
    b = torch.randn(4, 60, 50, dtype=dtype).transpose(1, 2)  # (a strided view: B is N-major)
    tol = 1e-2 if dtype == torch.float16 else 1e-4
    torch.testing.assert_close(bmm(a, b).float(), torch.bmm(a.float(), b.float()), rtol=tol, atol=tol)


@tile.kernel
def batched_no_acc(x, y, out, B: tile.constexpr, M: tile.constexpr, K: tile.constexpr, N: tile.constexpr):
    i = tile.arange(0, B)[:, None, None]
    a = tile.load(x + i * M * K + tile.arange(0, M)[None, :, None] * K + tile.arange(0, K)[None, None, :])
    b = tile.load(y + i * K * N + tile.arange(0, K)[None, :, None] * N + tile.arange(0, N)[None, None, :])
    tile.store(out + i * M * N + tile.arange(0, M)[None, :, None] * N + tile.arange(0, N)[None, None, :], tile.dot(a, b))


def test_batched_dot_without_acc():
    a, b, out = torch.randn(4, 16, 32), torch.randn(4, 32, 16), torch.empty(4, 16, 16)
    batched_no_acc[(1,)](a, b, out, B=4, M=16, K=32, N=16)
    torch.testing.assert_close(out, torch.bmm(a, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target,instruction", [("sm_90a", "mma"), ("sm_80", "mma.sync")])
def test_batched_dot_compiles_onto_tensor_cores(gpu_target, target, instruction):
    gpu_target(target)
    a, b = (torch.empty(4, 128, 64, dtype=torch.float16, device="meta") for _ in range(2))
    c = torch.empty(4, 128, 64, dtype=torch.float16, device="meta")
    launcher = bmm_kernel.compile(a, b, c, 128, 64, 64, *a.stride(), *b.stride(), *c.stride(),
                                  BB=2, BM=32, BN=64, BK=32, num_warps=4)
    assert instruction in launcher.asm["ptx"]
    assert launcher.metadata["ptxas"]["spill_stores"] == 0


def test_batched_dot_bad_shapes(tmp_path):
    src = tmp_path / "bad_bmm.py"
    src.write_text(
        "import tile\n\n\n@tile.kernel\ndef k(x, out):\n"
        "    a = tile.load(x + tile.arange(0, 16)[:, None, None] + tile.arange(0, 16)[None, :, None] + tile.arange(0, 16)[None, None, :])\n"
        "    b = tile.load(x + tile.arange(0, 16)[:, None] + tile.arange(0, 16)[None, :])\n"
        "    tile.store(out + tile.arange(0, 16), tile.sum(tile.sum(tile.dot(a, b), axis=2), axis=1))\n")
    import importlib.util

    spec = importlib.util.spec_from_file_location("bad_bmm", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(tile.CompilationError, match=r"batched dot needs \(B, M, K\) and \(B, K, N\)") as e:
        mod.k[(1,)](torch.randn(64), torch.empty(16))
    assert e.value.line == 8


def test_too_much_shared_memory_points_at_a_line(gpu_target):
    """Past the static shared memory a kernel without rings has, the error names the line of
    the op whose buffer is the largest, not the kernel's `def`."""
    gpu_target("sm_90a")
    e = lambda *s: torch.empty(s, dtype=torch.float16, device="meta")  # noqa: E731
    with pytest.raises(tile.CompilationError, match="tile too large") as err:
        batched_no_acc.compile(e(4, 16, 512), e(4, 512, 16), e(4, 16, 16), B=4, M=16, K=512, N=16)
    assert "tile.load" in err.value.source_line and "def " not in err.value.source_line, err.value.source_line
