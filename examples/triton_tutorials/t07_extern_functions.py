"""Triton tutorial 07, libdevice functions, as tile code.

After python/tutorials/07-extern-functions.py of triton-lang/triton (MIT license, in LICENSE here; Copyright
2018-2020 Philippe Tillet, 2020-2022 OpenAI): `libdevice.asin` on a tensor. The kernel is
Triton code with `tl.` spelled `tile.`, `@triton.jit` spelled `@tile.jit` and
`triton.language.extra` spelled `tile.extra` (libdevice's __nv_asinf on a GPU, libm's asinf on
the CPU). Differs from the tutorial: the launch with a custom libdevice path
(`extern_libs=`) is left out (tile links the libdevice of the triton wheel), and main()
checks at small sizes instead of printing.
"""

import torch

import tile
from tile.extra import libdevice


@tile.jit
def asin_kernel(
    x_ptr,
    y_ptr,
    n_elements,
    BLOCK_SIZE: tile.constexpr,
):
    pid = tile.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tile.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tile.load(x_ptr + offsets, mask=mask)
    x = libdevice.asin(x)
    tile.store(y_ptr + offsets, x, mask=mask)


def benchmark_launches():
    """The tutorial's launch (98432 float32 elements, BLOCK_SIZE=1024), as meta tensors."""
    n = 98432
    x, y = (torch.empty(n, device="meta") for _ in range(2))
    return [(asin_kernel, (x, y, n), dict(BLOCK_SIZE=1024))]


def main():
    torch.manual_seed(0)
    for size in (98432, 77):
        x = torch.rand(size) * 2 - 1
        output = torch.zeros(size)
        n_elements = output.numel()
        grid = lambda meta: (tile.cdiv(n_elements, meta['BLOCK_SIZE']), )
        asin_kernel[grid](x, output, n_elements, BLOCK_SIZE=1024)
        torch.testing.assert_close(output, torch.asin(x))
    print("t07_extern_functions: matches torch")


if __name__ == "__main__":
    main()
