"""Triton tutorial 02, fused softmax, as tile code.

After python/tutorials/02-fused-softmax.py of triton-lang/triton (MIT license, in LICENSE here; Copyright
2018-2020 Philippe Tillet, 2020-2022 OpenAI): a persistent grid, each program taking every
`num_programs`-th row in a `range` pipelined `num_stages` deep. The kernel is Triton code
with `tl.` spelled `tile.` and `@triton.jit` spelled `@tile.jit`. Differs from the tutorial:
the host sizes the grid without `softmax_kernel.warmup(...)`, `n_regs` and the device
properties (tile has no such API; a GPU gets 4 programs per SM, the CPU 4 programs in all),
main() checks at small sizes, and the plots and triton.testing benchmarks are left out.
"""

import torch

import tile


@tile.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols, BLOCK_SIZE: tile.constexpr,
                   num_stages: tile.constexpr):
    row_start = tile.program_id(0)
    row_step = tile.num_programs(0)
    for row_idx in tile.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tile.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tile.load(input_ptrs, mask=mask, other=-float('inf'))
        row_minus_max = row - tile.max(row, axis=0)
        numerator = tile.exp(row_minus_max)
        denominator = tile.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tile.store(output_ptrs, softmax_output, mask=mask)


def next_power_of_2(n):
    return 1 << (n - 1).bit_length()


def softmax(x):
    n_rows, n_cols = x.shape
    BLOCK_SIZE = next_power_of_2(n_cols)
    num_warps = 8
    num_stages = 4 if x.is_cuda else 2
    y = torch.empty_like(x)
    if x.is_cuda:
        num_programs = 4 * torch.cuda.get_device_properties(x.device).multi_processor_count
    else:
        num_programs = 4
    num_programs = min(num_programs, n_rows)
    softmax_kernel[(num_programs, 1, 1)](y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE=BLOCK_SIZE,
                                         num_stages=num_stages, num_warps=num_warps)
    return y


def benchmark_launches():
    """The tutorial benchmark's launches at M=4096 and N = 1024 and 12672 (its largest), as meta tensors, on 132 SMs."""
    launches = []
    for n_cols in (1024, 12672):
        x, y = (torch.empty(4096, n_cols, device="meta") for _ in range(2))
        launches.append((softmax_kernel, (y, x, n_cols, n_cols, 4096, n_cols),
                         dict(BLOCK_SIZE=next_power_of_2(n_cols), num_stages=4, num_warps=8)))
    return launches


def main():
    torch.manual_seed(0)
    for shape in ((183, 781), (7, 128), (33, 3)):
        x = torch.randn(*shape)
        torch.testing.assert_close(softmax(x), torch.softmax(x, axis=1))
    x = torch.randn(40, 300)[:, :257]
    torch.testing.assert_close(softmax(x), torch.softmax(x, axis=1))
    print("t02_fused_softmax: matches torch")


if __name__ == "__main__":
    main()
