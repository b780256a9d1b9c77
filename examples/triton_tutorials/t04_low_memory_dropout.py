"""Triton tutorial 04, low-memory dropout, as tile code.

After python/tutorials/04-low-memory-dropout.py of triton-lang/triton (MIT license, in LICENSE here; Copyright
2018-2020 Philippe Tillet, 2020-2022 OpenAI): dropout from a stored keep mask, then seeded
dropout that draws its mask with `rand(seed, offsets)` (Philox, the same numbers as Triton's).
The kernels are Triton code with `tl.` spelled `tile.` and `@triton.jit` spelled `@tile.jit`.
Differs from the tutorial: main() checks the outputs against torch (and the seeded mask for
being the same for one seed, different for another and near the rate p) instead of printing
tables with `tabulate`.
"""

import torch

import tile


@tile.jit
def _dropout(
    x_ptr,
    x_keep_ptr,
    output_ptr,
    n_elements,
    p,
    BLOCK_SIZE: tile.constexpr,
):
    pid = tile.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tile.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tile.load(x_ptr + offsets, mask=mask)
    x_keep = tile.load(x_keep_ptr + offsets, mask=mask)
    output = tile.where(x_keep, x / (1 - p), 0.0)
    tile.store(output_ptr + offsets, output, mask=mask)


def dropout(x, x_keep, p):
    output = torch.empty_like(x)
    assert x.is_contiguous()
    n_elements = x.numel()
    grid = lambda meta: (tile.cdiv(n_elements, meta['BLOCK_SIZE']), )
    _dropout[grid](x, x_keep, output, n_elements, p, BLOCK_SIZE=1024)
    return output


@tile.jit
def _seeded_dropout(
    x_ptr,
    output_ptr,
    n_elements,
    p,
    seed,
    BLOCK_SIZE: tile.constexpr,
):
    pid = tile.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tile.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tile.load(x_ptr + offsets, mask=mask)
    random = tile.rand(seed, offsets)
    x_keep = random > p
    output = tile.where(x_keep, x / (1 - p), 0.0)
    tile.store(output_ptr + offsets, output, mask=mask)


def seeded_dropout(x, p, seed):
    output = torch.empty_like(x)
    assert x.is_contiguous()
    n_elements = x.numel()
    grid = lambda meta: (tile.cdiv(n_elements, meta['BLOCK_SIZE']), )
    _seeded_dropout[grid](x, output, n_elements, p, seed, BLOCK_SIZE=1024)
    return output


def benchmark_launches():
    """Both kernels at 2**24 float32 elements (the tutorial has no benchmark), as meta tensors."""
    n = 2**24
    x, out = (torch.empty(n, device="meta") for _ in range(2))
    keep = torch.empty(n, dtype=torch.int32, device="meta")
    return [(_dropout, (x, keep, out, n, 0.5), dict(BLOCK_SIZE=1024)),
            (_seeded_dropout, (x, out, n, 0.5, 123), dict(BLOCK_SIZE=1024))]


def main():
    torch.manual_seed(0)
    p = 0.5
    for size in (10, 3000):
        x = torch.randn(size=(size, ))
        x_keep = (torch.rand(size=(size, )) > p).to(torch.int32)
        torch.testing.assert_close(dropout(x, x_keep=x_keep, p=p), torch.where(x_keep.bool(), x / (1 - p), 0.0))
    x = torch.randn(size=(5000, )) + 10  # no zeros, so that a zero in the output is a dropped element
    output = seeded_dropout(x, p=0.3, seed=123)
    output2 = seeded_dropout(x, p=0.3, seed=123)
    output3 = seeded_dropout(x, p=0.3, seed=512)
    kept = output != 0
    torch.testing.assert_close(output, torch.where(kept, x / (1 - 0.3), 0.0))
    assert torch.equal(output, output2) and not torch.equal(output, output3)
    assert abs(kept.float().mean().item() - 0.7) < 0.03
    print("t04_low_memory_dropout: matches torch")


if __name__ == "__main__":
    main()
