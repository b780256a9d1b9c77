"""Triton's function spellings of operators and descriptor methods: `tl.add/sub/mul(x, y,
sanitize_overflow=)`, `tl.load_tensor_descriptor(desc, offsets)` and
`tl.store_tensor_descriptor(desc, offsets, value)`, on the CPU against torch and for sm_90a."""

import pytest
import torch

import tile


@tile.kernel
def arith_kernel(x, y, out, n, BLOCK: tile.constexpr):
    offs = tile.arange(0, BLOCK)
    a = tile.load(x + offs, mask=offs < n, other=0)
    b = tile.load(y + offs, mask=offs < n, other=0)
    tile.store(out + offs, tile.mul(tile.add(a, b), tile.sub(a, 2), sanitize_overflow=False), mask=offs < n)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
def test_add_sub_mul(dtype):
    x, y = (torch.randint(-50, 50, (50,)).to(dtype) for _ in range(2))
    out = torch.empty_like(x)
    arith_kernel[(1,)](x, y, out, 50, BLOCK=64)
    assert torch.equal(out, (x + y) * (x - 2))


@tile.kernel
def descriptor_copy_kernel(x, out, M, N, BM: tile.constexpr, BN: tile.constexpr):
    desc = tile.make_tensor_descriptor(x, [M, N], [N, 1], [BM, BN])
    out_desc = tile.make_tensor_descriptor(out, [M, N], [N, 1], [BM, BN])
    v = tile.load_tensor_descriptor(desc, [tile.program_id(0) * BM, 0])
    tile.store_tensor_descriptor(out_desc, [tile.program_id(0) * BM, 0], v * 2)


@tile.kernel
def descriptor_method_kernel(x, out, M, N, BM: tile.constexpr, BN: tile.constexpr):
    desc = tile.make_tensor_descriptor(x, [M, N], [N, 1], [BM, BN])
    out_desc = tile.make_tensor_descriptor(out, [M, N], [N, 1], [BM, BN])
    out_desc.store([tile.program_id(0) * BM, 0], desc.load([tile.program_id(0) * BM, 0]) * 2)


def test_descriptor_functions_cpu_and_sm90a(gpu_target):
    """The functions are the methods: the same PTX."""
    x = torch.randn(40, 32)  # (40 rows: the last block half out of bounds)
    out = torch.empty_like(x)
    descriptor_copy_kernel[(tile.cdiv(40, 16),)](x, out, 40, 32, BM=16, BN=32)
    assert torch.equal(out, 2 * x)
    gpu_target("sm_90a")
    m = torch.empty(256, 64, device="meta")
    functions, methods = (k.compile(m, torch.empty_like(m), 256, 64, BM=64, BN=64).asm["ptx"]
                          for k in (descriptor_copy_kernel, descriptor_method_kernel))
    assert "ld.global.v4.b32" in functions  # (16-byte loads along the block's rows)
    assert functions.replace("descriptor_copy_kernel", "k") == methods.replace("descriptor_method_kernel", "k")


def test_descriptor_functions_need_a_descriptor():
    @tile.kernel
    def bad(x):
        tile.load_tensor_descriptor(x, [0, 0])

    with pytest.raises(tile.CompilationError, match="load_tensor_descriptor needs a tensor descriptor"):
        bad[(1,)](torch.randn(4, 4))
