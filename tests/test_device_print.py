"""`device_print`: every element with its program id and index, on the CPU target (the
lines read back from the process's stdout) and compiled for the GPU targets (`vprintf`)."""

import pytest
import torch

import tile


@tile.kernel
def print_kernel(x, n, BLOCK: tile.constexpr):
    offs = tile.arange(0, BLOCK)
    v = tile.load(x + offs, mask=offs < n, other=-1.0)
    tile.device_print("v", v)
    tile.device_print("n, mask", n + tile.program_id(0), (offs < 2).to(tile.int8))
    tile.device_print("m 100%", tile.reshape(v, (2, BLOCK // 2)).to(tile.float16))


def test_device_print_on_the_cpu(capfd):
    print_kernel[(2,)](torch.arange(4.0), 3, BLOCK=4)
    lines = capfd.readouterr().out.splitlines()
    for pid in (0, 1):
        assert [ln for ln in lines if ln.startswith(f"pid ({pid}, 0, 0)")] == [
            f"pid ({pid}, 0, 0) idx (0) v: 0.000000",
            f"pid ({pid}, 0, 0) idx (1) v: 1.000000",
            f"pid ({pid}, 0, 0) idx (2) v: 2.000000",
            f"pid ({pid}, 0, 0) idx (3) v: -1.000000",
            f"pid ({pid}, 0, 0) idx () n, mask (operand 0): {3 + pid}",
            *[f"pid ({pid}, 0, 0) idx ({i}) n, mask (operand 1): {int(i < 2)}" for i in range(4)],
            *[f"pid ({pid}, 0, 0) idx ({i // 2}, {i % 2}) m 100%: {v:.6f}" for i, v in enumerate([0, 1, 2, -1])],
        ]


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_device_print_compiles_for_the_gpu(target, monkeypatch):
    monkeypatch.setenv("TILE_TARGET", target)
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    print_kernel[(2,)](torch.empty(4, device="meta"), 3, BLOCK=4)


def test_device_print_needs_a_prefix():
    @tile.kernel
    def no_prefix(x):
        tile.device_print(tile.load(x + tile.arange(0, 4)))

    with pytest.raises(tile.CompilationError, match="device_print's first argument is its prefix"):
        no_prefix[(1,)](torch.zeros(4))
