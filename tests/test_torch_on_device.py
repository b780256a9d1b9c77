"""benchmarks/torch_on_device.py's CPU-side parts: the launches it records and the copies of
their arguments it captures (views of one storage stay views of one copy)."""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import torch_on_device  # noqa: E402


def test_clone_storages_keeps_views_and_aliasing():
    base = torch.arange(40, dtype=torch.float32)
    a, b = base[3:13].view(2, 5), base[::4]  # two views of one storage, offset and strided
    other = torch.arange(6, dtype=torch.int32)
    (ca, cb, co, n), storages = torch_on_device.clone_storages([a, b, other, 7])
    assert n == 7 and len(storages) == 2
    for got, want in ((ca, a), (cb, b), (co, other)):
        assert got.stride() == want.stride() and got.storage_offset() == want.storage_offset()
        assert torch.equal(got, want) and got.untyped_storage().data_ptr() != want.untyped_storage().data_ptr()
    assert ca.untyped_storage().data_ptr() == cb.untyped_storage().data_ptr()
    ca[0, 1] = -1.0  # base[4], which b does not see; base[12] it does
    ca[1, 4] = -2.0
    assert base[4] == 4 and cb[3] == -2.0
    gen = torch.Generator().manual_seed(0)
    torch_on_device.refill([ca, co], gen)
    assert torch.equal(co, other) and not torch.equal(ca, a)


def test_recorder_keeps_each_launch():
    from vector_add import add

    with torch_on_device.Recorder() as rec:
        x = torch.randn(300)
        torch.testing.assert_close(add(x, x, BLOCK=128), 2 * x)
    ((kernel, grid, args, kwargs),) = rec.launches
    assert kernel.name == "add_kernel" and args[0] is x and args[3] == 300 and kwargs == {"BLOCK": 128}
    assert "recorded" not in type(kernel).__getitem__.__qualname__  # (put back)
