"""tile.torch: tile kernels as torch custom ops (torch.compile sees them whole, no graph
break; their fake implementation is the wrapper run on fake tensors, where launches do
nothing), with autograd (`op(backward=)`, `tile.torch.autograd`); on the CPU target."""

import warnings

import pytest
import torch

import tile
from layer_norm_backward import layer_norm_backward, layer_norm_backward_kernel, layer_norm_fn, layer_norm_op


@tile.kernel
def _axpy_kernel(x, y, out, alpha, n, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    tile.store(out + offs, alpha * tile.load(x + offs, mask=mask) + tile.load(y + offs, mask=mask), mask=mask)


@tile.torch.op("tile_tests::axpy", mutates_args=())
def axpy(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    _axpy_kernel[(tile.cdiv(n, 128),)](x, y, out, alpha, n, BLOCK=128)
    return out


@tile.torch.op("tile_tests::scale_", mutates_args=("x",))
def scale_(x: torch.Tensor, alpha: float) -> None:
    n = x.numel()
    _axpy_kernel[(tile.cdiv(n, 128),)](x, torch.zeros_like(x), x, alpha, n, BLOCK=128)


def _model(x, y):
    return torch.relu(axpy(x, y, 2.0)) * 3 + 1


def test_op_runs_and_passes_opcheck():
    x, y = torch.randn(1000), torch.randn(1000)  # (not a multiple of the block)
    torch.testing.assert_close(axpy(x, y, 2.0), 2 * x + y)
    torch.testing.assert_close(torch.ops.tile_tests.axpy(x, y, -0.5), -0.5 * x + y)
    torch.library.opcheck(axpy, (x, y, 2.0))  # schema, fake (the wrapper on fake tensors), dispatch


def test_compile_fullgraph_has_no_graph_break():
    x, y = torch.randn(300), torch.randn(300)
    explain = torch._dynamo.explain(_model)(x, y)
    assert explain.graph_break_count == 0 and explain.graph_count == 1
    graphs = []

    def counting(gm, inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    compiled = torch.compile(_model, backend=counting, fullgraph=True)
    torch.testing.assert_close(compiled(x, y), torch.relu(2 * x + y) * 3 + 1)
    assert len(graphs) == 1
    assert any(n.target is torch.ops.tile_tests.axpy.default for n in graphs[0].graph.nodes)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compile_runs_the_kernel(backend):
    torch._dynamo.reset()
    x, y = torch.randn(77, 5), torch.randn(77, 5)
    compiled = torch.compile(_model, backend=backend, fullgraph=True)
    torch.testing.assert_close(compiled(x, y), torch.relu(2 * x + y) * 3 + 1)
    x2 = torch.randn(77, 5)  # new values, same graph
    torch.testing.assert_close(compiled(x2, y), torch.relu(2 * x2 + y) * 3 + 1)


def test_compiled_mutating_op():
    torch._dynamo.reset()

    def f(x):
        scale_(x, 3.0)
        return x + 1

    x = torch.randn(200)
    want = x * 3 + 1
    torch.testing.assert_close(torch.compile(f, backend="aot_eager", fullgraph=True)(x), want)
    torch.testing.assert_close(x, want - 1)  # (the mutation reached the caller's tensor)


def test_fake_tensors_launch_nothing_and_bind_nothing():
    """A launch on fake tensors (the default fake implementation's) returns at once, whether the
    binder has a launch function for real tensors of that key or not; none is kept for them."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    x, y = torch.randn(256), torch.randn(256)
    axpy(x, y, 1.0)  # a real launch first: the binder has a key for these
    bound = dict(_axpy_kernel._bound)
    with FakeTensorMode() as mode, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fx, fy = mode.from_tensor(x), mode.from_tensor(y)
        out = axpy(fx, fy, 1.0)
        assert type(out).__name__ == "FakeTensor" and out.shape == x.shape
        _axpy_kernel[(2,)](fx, fy, fx, 1.0, 256, BLOCK=128)
        _axpy_kernel._generic((2,))(fx, fy, fx, 1.0, 256, BLOCK=128)
    assert _axpy_kernel._bound == bound


def _reference_grads(x, w, b, dy):
    return torch.autograd.grad((torch.nn.functional.layer_norm(x, (x.shape[1],), w, b, 1e-5) * dy).sum(), (x, w, b))


@pytest.mark.parametrize("f", [layer_norm_fn, layer_norm_op], ids=["autograd", "op"])
def test_layer_norm_gradients_match_torch(f):
    torch.manual_seed(1)
    x = torch.randn(64, 48)[::2, 3:44]  # (strided rows, 41 columns: not a power of two)
    x.requires_grad_(True)
    w, b = torch.randn(41, requires_grad=True), torch.randn(41, requires_grad=True)
    dy = torch.randn(32, 41)
    got = torch.autograd.grad((f(x, w, b, 1e-5) * dy).sum(), (x, w, b))
    for g, r in zip(got, _reference_grads(x, w, b, dy)):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-4)


def test_layer_norm_backward_of_a_broadcast_gradient():
    x, w = torch.randn(5, 20), torch.randn(20)
    dx, dw, db = layer_norm_backward(x, w, torch.ones(1, 1).expand(5, 20))  # (strides 0, 0: a .sum()'s gradient)
    want = _reference_grads(x.requires_grad_(), w.requires_grad_(), torch.zeros(20, requires_grad=True), torch.ones(5, 20))
    for g, r in zip((dx, dw, db), want):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-4)


class _Net(torch.nn.Module):
    def __init__(self, norm):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(12, 24), torch.nn.Linear(24, 1)
        self.w, self.b = torch.nn.Parameter(torch.ones(24)), torch.nn.Parameter(torch.zeros(24))
        self.norm = norm

    def forward(self, x):
        return self.fc2(torch.relu(self.norm(self.fc1(x), self.w, self.b, 1e-5)))


@pytest.mark.parametrize("compile_it", [False, True], ids=["eager", "compiled"])
def test_training_matches_torch(compile_it):
    """A tiny model trained a few SGD steps with the tile layer norm (helper in eager, the op under
    torch.compile with aot_eager) keeps torch's gradients and loss at every step; the loss falls."""
    torch.manual_seed(0)
    torch._dynamo.reset()
    ours = _Net(layer_norm_op if compile_it else layer_norm_fn)
    ref = _Net(lambda x, w, b, eps: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps))
    ref.load_state_dict(ours.state_dict())
    run = torch.compile(ours, backend="aot_eager", fullgraph=True) if compile_it else ours
    opt, ref_opt = torch.optim.SGD(ours.parameters(), lr=0.05), torch.optim.SGD(ref.parameters(), lr=0.05)
    x, target = torch.randn(40, 12), torch.randn(40, 1)
    losses = []
    for _ in range(6):
        for model, o, fwd in ((ours, opt, run), (ref, ref_opt, ref)):
            o.zero_grad()
            loss = torch.nn.functional.mse_loss(fwd(x), target)
            loss.backward()
            o.step()
            losses.append(loss.item())
        for p, q in zip(ours.parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    ours_l, ref_l = losses[::2], losses[1::2]
    assert ours_l == pytest.approx(ref_l, rel=1e-4)
    assert ours_l[-1] < ours_l[0] * 0.9


def test_backward_kernel_compiles_for_the_gpu(gpu_target):
    """sm_90a and sm_80: the backward's three row reductions are warp shuffles in the PTX."""
    x, w, dy = (torch.empty(s, device="meta") for s in ((8, 100), (100,), (8, 100)))
    args = (x, w, dy, torch.empty_like(x), torch.empty(8, 100, device="meta"), torch.empty(8, 100, device="meta"),
            100, 100, 100, 100, 1e-5)
    for target in ("sm_90a", "sm_80"):
        gpu_target(target)
        ptx = layer_norm_backward_kernel.compile(*args, BLOCK=128, target=target).asm["ptx"]
        assert f".target {target}" in ptx and "shfl.sync.bfly" in ptx


def test_compiled_layer_norm_and_attention_block_matches_eager():
    """torch.compile(fullgraph=True) of a block with the tile layer norm and attention ops: no graph
    break, output and gradients as torch's ops give them (the GPU half: benchmarks/torch_on_device.py)."""
    from flash_attention_bwd import check_compiled

    check_compiled("cpu")
