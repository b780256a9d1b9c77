"""tile-canonicalize in the default pipeline (dead pure tile ops erased, same-shape reshapes and
broadcasts folded: IRDL gives tile ops no traits, so canonicalize and cse keep them), and the
tile ops' verifiers after every pass stage (a pass that breaks a tile op fails at the kernel's line)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from mlir import ir

import tile
from tile.passes.registry import register_pass
from tile.passes.walk import collect


@tile.kernel
def scale_kernel(x, out, n, stride, BLOCK: tile.constexpr):
    pid = tile.program_id(0)
    offs = pid * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    v = tile.load(x + offs * stride, mask=mask, other=0.0)
    unused = tile.full((BLOCK,), 2.0, tile.float32) + pid  # noqa: F841  (dead: erased)
    rows = tile.reshape(v, (BLOCK // 16, 16))
    same = tile.reshape(rows, (BLOCK,))  # a reshape of a reshape, to the first one's shape: folded away
    tile.store(out + offs, same * 3.0, mask=mask,)


def _args(n=1000):
    base = torch.randn(2 * n)
    return base[::2], torch.empty(n), n, 2


def test_runs_on_cpu_against_torch():
    x, out, n, stride = _args()
    scale_kernel[(tile.cdiv(n, 256),)](x, out, n, stride, BLOCK=256)
    torch.testing.assert_close(out, x * 3.0)


def _tile_ops(text: str, name: str) -> int:
    return text.count(f'"tile.{name}"')


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_gpu_compile_drops_dead_and_identity_ops(gpu_target, target, monkeypatch):
    monkeypatch.setenv("TILE_TARGET", target)
    launcher = scale_kernel.compile(*_args(), BLOCK=256)
    before, after = launcher.asm["tile"], launcher.asm["tile-opt"]
    assert _tile_ops(before, "reshape") == 2
    assert _tile_ops(after, "reshape") == 0
    # The dead `full(...) + pid`'s splats are gone: what is left are the offsets', the mask's and other's.
    assert _tile_ops(after, "splat") < _tile_ops(before, "splat")
    assert "mul.f32" in launcher.asm["ptx"] or "mul.rn.f32" in launcher.asm["ptx"]


@register_pass("test-break-arange")
@dataclass
class BreakArange:
    """Makes every tile.arange 48 long: well-formed for IRDL, wrong for its verifier."""

    def run(self, module):
        for op in collect(module, {"tile.arange"}):
            start = ir.IntegerAttr(op.attributes["start"]).value
            op.attributes["end"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), start + 48)


def test_verifier_runs_after_a_pass_that_breaks_a_tile_op():
    x, out, n, stride = _args(64)
    with pytest.raises(tile.CompilationError) as e:
        scale_kernel.compile(x, out, n, stride, BLOCK=64, passes=["test-break-arange"])
    assert "arange length 48 (end - start) must be a positive power of two" in str(e.value)
    # At the kernel's own line, the arange's.
    assert e.value.filename == __file__ and "tile.arange(0, BLOCK)" in e.value.source_line


DEAD = """
func.func @f(%x: memref<?xf32, strided<[?], offset: ?>>, %o: tensor<4xi32>, %m: tensor<4xi1>, %z: tensor<4xf32>) {
  %a = "tile.load"(%x, %o, %m, %z) : (memref<?xf32, strided<[?], offset: ?>>, tensor<4xi32>, tensor<4xi1>, tensor<4xf32>) -> tensor<4xf32>
  %b = "tile.load"(%x, %o, %m, %z) {volatile} : (memref<?xf32, strided<[?], offset: ?>>, tensor<4xi32>, tensor<4xi1>, tensor<4xf32>) -> tensor<4xf32>
  %g = scf.execute_region -> tensor<4xf32> {
    %c = "tile.load"(%x, %o, %m, %z) : (memref<?xf32, strided<[?], offset: ?>>, tensor<4xi32>, tensor<4xi1>, tensor<4xf32>) -> tensor<4xf32>
    %d = arith.addf %c, %c : tensor<4xf32>
    scf.yield %d : tensor<4xf32>
  }
  %h = scf.execute_region -> tensor<4xf32> {
    "tile.store"(%x, %o, %z, %m) : (memref<?xf32, strided<[?], offset: ?>>, tensor<4xi32>, tensor<4xf32>, tensor<4xi1>) -> ()
    scf.yield %z : tensor<4xf32>
  }
  %s = "tile.splat"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return
}
"""


def test_erase_dead_ops_is_mlirs_dce_for_tile_ops():
    """What the passes that leave dead ops behind call: unused pure ops, loads and read-only
    fusion groups go; a volatile load and a group that stores stay."""
    from tile.dialects.tile_dialect import make_context
    from tile.passes.tile_canonicalize import erase_dead_ops

    with make_context():
        module = ir.Module.parse(DEAD)
        func = module.body.operations[0]
        erase_dead_ops(func.regions[0].blocks[0].operations[0])  # (any op: its function is the root)
        text = str(module)
    assert text.count('"tile.load"') == 1 and "volatile" in text  # %a (its splat gone too), %c's group
    assert text.count("scf.execute_region") == 1 and '"tile.store"' in text and "tile.splat" not in text
