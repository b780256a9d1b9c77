"""Vector add: the first seed kernel, in the Triton form (offsets plus a mask)."""

import torch

import tile


@tile.kernel
def add_kernel(x, y, out, n, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    a = tile.load(x + offs, mask=mask)
    b = tile.load(y + offs, mask=mask)
    tile.store(out + offs, a + b, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor, BLOCK: int = 1024) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(tile.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    return out


def main(device: str = "cpu", n: int = 98_432) -> None:
    x = torch.rand(n, device=device)
    y = torch.rand(n, device=device)
    torch.testing.assert_close(add(x, y), x + y)
    print(f"vector_add: {n} elements on {device} match torch")


if __name__ == "__main__":
    main()
