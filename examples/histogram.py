"""Histogram: counts[b] = how many x have x % NB == b, with `tile.atomic_add`, and each
element's rank among those of its bin, from the old values the atomics return.

Each program adds 1 to the bin of each of its BLOCK elements; the hardware serializes
the additions to one bin, and each returns the count before it, so the elements of a bin
get the ranks 0, 1, ..., count - 1 in some order. A block smaller than the program's
threads (64 elements in 4 warps, 128 threads) leaves threads holding copies of an
element: only one of them adds it, and the copies read its old value back from it. (They
once kept 0, and every copy stored its rank: under compute-sanitizer, which reorders the
threads, 69% of the ranks came out 0.) The check below holds for any order the atomics
land in: the ranks of each bin are 0 .. count - 1, each once.
"""

import torch

import tile


@tile.kernel
def histogram_kernel(x, counts, ranks, n, NB: tile.constexpr, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    inside = offs < n
    v = tile.load(x + offs, mask=inside, other=0)
    rank = tile.atomic_add(counts + v % NB, 1, mask=inside)
    tile.store(ranks + offs, rank, mask=inside)


def histogram(x: torch.Tensor, bins: int, BLOCK: int = 64, **options) -> tuple[torch.Tensor, torch.Tensor]:
    """x (n,) int32 >= 0 -> (counts (bins,), each element's rank within its bin), int32."""
    if x.dtype != torch.int32:
        raise TypeError(f"histogram: x must be torch.int32, got {x.dtype}")
    counts = torch.zeros(bins, dtype=torch.int32, device=x.device)
    ranks = torch.empty_like(x)
    histogram_kernel[(tile.cdiv(x.numel(), BLOCK),)](x, counts, ranks, x.numel(), NB=bins, BLOCK=BLOCK, **options)
    return counts, ranks


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    for n, bins, block in ((100_000, 64, 64), (5000, 7, 1024)):
        x = torch.randint(0, 1 << 20, (n,), dtype=torch.int32, device=device)
        counts, ranks = histogram(x, bins, BLOCK=block, num_warps=4)
        bin_of = (x % bins).long()
        torch.testing.assert_close(counts, torch.bincount(bin_of, minlength=bins).int(), rtol=0, atol=0)
        # the ranks of each bin's elements: 0 .. count - 1, each once
        order = torch.argsort(bin_of * n + ranks.long())
        first = torch.cumsum(counts, 0).long() - counts.long()
        want = torch.arange(n, device=device) - first[bin_of[order]]
        torch.testing.assert_close(ranks[order].long(), want, rtol=0, atol=0)
    print(f"histogram: 100000 values in 64 bins (64-element blocks in 4 warps), 5000 in 7 bins on {device} match torch")


if __name__ == "__main__":
    main()
