"""Triton tutorial 01, vector addition, as tile code.

After python/tutorials/01-vector-add.py of triton-lang/triton (MIT license, in LICENSE here; Copyright
2018-2020 Philippe Tillet, 2020-2022 OpenAI). The kernel is Triton code with `tl.` spelled
`tile.` and `@triton.jit` spelled `@tile.jit` (tests/test_triton_tutorials.py reverses the
rename and runs the file under Triton's interpreter). Differs from the tutorial: the host
code runs on the CPU when there is no GPU, main() checks at a small size instead of printing,
and the plots and triton.testing benchmarks are left out (benchmark_launches() gives the
benchmark's launch for a compile-only build instead).
"""

import torch

import tile


@tile.jit
def add_kernel(
    x_ptr,
    y_ptr,
    output_ptr,
    n_elements,
    BLOCK_SIZE: tile.constexpr,
):
    pid = tile.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tile.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tile.load(x_ptr + offsets, mask=mask)
    y = tile.load(y_ptr + offsets, mask=mask)
    output = x + y
    tile.store(output_ptr + offsets, output, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor):
    output = torch.empty_like(x)
    n_elements = output.numel()
    grid = lambda meta: (tile.cdiv(n_elements, meta["BLOCK_SIZE"]), )
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


def benchmark_launches():
    """The tutorial benchmark's largest launch (2**27 float32 elements), as meta tensors."""
    n = 2**27
    x, y, out = (torch.empty(n, device="meta") for _ in range(3))
    return [(add_kernel, (x, y, out, n), dict(BLOCK_SIZE=1024))]


def main():
    torch.manual_seed(0)
    for size in (98432, 1000, 7):
        x = torch.rand(size)
        y = torch.rand(size)
        torch.testing.assert_close(add(x, y), x + y, rtol=0, atol=0)
    print("t01_vector_add: matches torch")


if __name__ == "__main__":
    main()
