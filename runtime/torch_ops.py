"""`tile.torch`: tile kernels inside real PyTorch programs.

    @tile.torch.op("mylib::add", mutates_args=())
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        add_kernel[(tile.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
        return out

`op` is `torch.library.custom_op` (same arguments: the name, `mutates_args`,
`device_types`, `schema`) over a Python wrapper that allocates outputs and
launches tile kernels. torch.compile and AOTAutograd see an opaque op (no graph
break) whose output shapes come from its fake implementation: `fake=` if given,
else the wrapper itself run on FakeTensors, where tile launches do nothing (the
general launch path returns at once for fake tensors), so only its allocations
count. The wrapper must then not read tensor values on the host (`.item()`).
`backward=` (with `setup_context=`) is `register_autograd`'s.

`autograd(forward, backward)` makes a `torch.autograd.Function` of two functions
(`forward(ctx, *args)`, `backward(ctx, *grads)`) and returns its `apply`: the
eager way to give tile kernels a gradient; for torch.compile, launch the kernels
in `op`s and give the op's `backward=` (itself calling ops).

Imports torch, never MLIR.
"""

from __future__ import annotations

import functools
import warnings

import torch


def op(name: str, fn=None, /, *, mutates_args=(), device_types=None, schema: str | None = None, fake=None,
       backward=None, setup_context=None):
    """Register `fn` as the custom op `name` ("namespace::op"), as `torch.library.custom_op`
    does, with a fake implementation (`fake`, default `fn` on fake tensors) and, given
    `backward`, its autograd formula. Usable as `@op(name, ...)` or `op(name, fn, ...)`."""

    def register(fn):
        custom = torch.library.custom_op(name, mutates_args=mutates_args, device_types=device_types, schema=schema)(fn)
        custom.register_fake(fake if fake is not None else _on_fake_tensors(fn))
        if backward is not None:
            custom.register_autograd(backward, setup_context=setup_context)
        return custom

    return register if fn is None else register(fn)


def autograd(forward, backward, name: str | None = None):
    """`apply` of a `torch.autograd.Function` whose forward and backward are these functions
    (`forward(ctx, *args)` saving what backward needs with `ctx.save_for_backward`;
    `backward(ctx, *grad_outputs)` returning one gradient, or None, per argument)."""
    cls = type(name or getattr(forward, "__name__", "TileFunction"), (torch.autograd.Function,),
               {"forward": staticmethod(forward), "backward": staticmethod(backward),
                "__doc__": getattr(forward, "__doc__", None), "__module__": getattr(forward, "__module__", __name__)})
    return cls.apply


def _on_fake_tensors(fn):
    """`fn` as a fake implementation: the launches' binder reads each tensor's `data_ptr()`
    (0 for a fake tensor, then the launch returns), which torch warns of."""

    @functools.wraps(fn)
    def fake(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Accessing the data pointer of FakeTensor")
            return fn(*args, **kwargs)

    return fake
