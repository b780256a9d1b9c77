"""Triton tutorial 11, programmatic dependent launch (PDL), as tile code.

After python/tutorials/11-programmatic-dependent-launch.py of triton-lang/triton (MIT
license, in LICENSE here; Copyright 2018-2020 Philippe Tillet, 2020-2022 OpenAI): the vector
add of tutorial 01 with `gdc_wait` (wait for the previous grid's writes) and
`gdc_launch_dependents` (let the next grid start) under a constexpr flag, launched with
`launch_pdl=`. The kernel is Triton code with `tl.` spelled `tile.` and `@triton.jit`
spelled `@tile.jit`. Differs from the tutorial: main() checks both launches (with and
without PDL) on the CPU too, where grid dependence control has nothing to wait for, and the
CUDA-graph benchmark is left out.
"""

import torch

import tile


@tile.jit
def add_kernel(x_ptr,  #
               y_ptr,  #
               output_ptr,  #
               n_elements,  #
               BLOCK_SIZE: tile.constexpr,  #
               USE_GDC: tile.constexpr,  #
               ):
    pid = tile.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tile.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    if USE_GDC:
        # every program of the previous grid has finished, its writes visible
        tile.extra.cuda.gdc_wait()

    x = tile.load(x_ptr + offsets, mask=mask)
    y = tile.load(y_ptr + offsets, mask=mask)
    if USE_GDC:
        # the next grid (launched with PDL) may start; no memory ordering implied
        tile.extra.cuda.gdc_launch_dependents()
    output = x + y
    tile.store(output_ptr + offsets, output, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor, launch_pdl: bool = True):
    output = torch.empty_like(x)
    assert x.device == y.device and output.device == x.device
    n_elements = output.numel()
    grid = lambda meta: (tile.cdiv(n_elements, meta['BLOCK_SIZE']), )
    add_kernel[grid](
        x, y, output, n_elements, BLOCK_SIZE=1024,
        USE_GDC=launch_pdl,
        launch_pdl=launch_pdl,
    )
    return output


def benchmark_launches():
    """The tutorial benchmark's largest size (2**27 float32 elements), with PDL, as meta tensors."""
    n = 2**27
    x, y, out = (torch.empty(n, device="meta") for _ in range(3))
    return [(add_kernel, (x, y, out, n), dict(BLOCK_SIZE=1024, USE_GDC=True, launch_pdl=True))]


def main():
    torch.manual_seed(0)
    for n_elements in (1024, 3001):
        x = torch.rand(n_elements, dtype=torch.float32)
        y = torch.rand(n_elements, dtype=torch.float32)
        for launch_pdl in (True, False):
            torch.testing.assert_close(add(x, y, launch_pdl), x + y, rtol=0, atol=0)
    print("t11_programmatic_dependent_launch: matches torch")


if __name__ == "__main__":
    main()
