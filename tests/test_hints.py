"""`multiple_of`, `max_contiguous`, `max_constancy` and `assume` (Triton's hints): accepted,
checked, and fed to axis info, so that a load the compiler cannot see through (`% n` with an
n not known to be a multiple of 16) is still a 16-byte vector on a GPU when the user says so."""

import pytest
import torch

import tile


@tile.kernel
def wrapped_copy_kernel(x, out, n, BLOCK: tile.constexpr, HINT: tile.constexpr):
    pid = tile.program_id(0)
    tile.assume(pid >= 0)
    offs = (pid * BLOCK + tile.arange(0, BLOCK)) % n
    if HINT:
        offs = tile.max_contiguous(tile.multiple_of(offs, BLOCK), BLOCK)
    tile.store(out + pid * BLOCK + tile.arange(0, BLOCK), tile.load(x + offs) * 2.0)


@pytest.mark.parametrize("hint", [False, True])
def test_hints_keep_the_result(hint):
    x = torch.randn(256)
    out = torch.empty(256)
    wrapped_copy_kernel[(2,)](x, out, 256, BLOCK=128, HINT=hint)
    torch.testing.assert_close(out, x * 2)


def test_hints_vectorize_the_load(gpu_target):
    gpu_target()
    x = torch.empty(1000, device="meta")
    out = torch.empty(1024, device="meta")

    def ptx(hint):
        return wrapped_copy_kernel.compile(x, out, 1000, BLOCK=128, HINT=hint, num_warps=1).asm["ptx"]

    assert "ld.global.v4" not in ptx(False)  # (1000 is not a multiple of 16: the runs may break anywhere)
    assert "ld.global.v4" in ptx(True)


@tile.kernel
def bad_hint_kernel(x, KIND: tile.constexpr):
    offs = tile.arange(0, 16)
    if KIND == 0:
        offs = tile.multiple_of(offs, 0)
    elif KIND == 1:
        offs = tile.max_contiguous(offs, (4, 4))
    else:
        tile.assume(offs)
    tile.store(x + offs, 1.0)


@pytest.mark.parametrize("kind, message", [(0, "multiple_of takes positive compile-time integers"),
                                           (1, "max_contiguous takes one value or one per dim"),
                                           (2, "assume takes a boolean condition")])
def test_bad_hints_are_errors_at_their_line(kind, message):
    with pytest.raises(tile.CompilationError, match=message) as e:
        bad_hint_kernel[(1,)](torch.empty(16), KIND=kind)
    assert "test_hints.py" in str(e.value)
