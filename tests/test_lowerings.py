"""The registry of op lowerings (codegen/common/lowerings.py): every tile op has its lowering
on each target, found by the op's name, and two lowerings of one op on one target are refused."""

import pytest

from tile.codegen.common.lowerings import lowering, lowerings
from tile.dialects import tile_dialect  # noqa: F401  (registers the op definitions)
from tile.dialects.op_definition import REGISTRY

# What the CPU target has no lowering for, and why: the launch passes (tile-cpu-grid,
# tile-gpu-launch) give the program ids; tile-pipeline's shared-memory rings, TMA and async
# copies, and tile-warp-specialize's warp roles, exist only on a GPU (neither runs for the CPU).
NOT_ON_CPU = {"tile.program_id", "tile.num_programs", "tile.async_commit", "tile.async_copy", "tile.async_wait",
              "tile.dot_wait", "tile.local_alloc", "tile.local_dealloc", "tile.local_load", "tile.local_store",
              "tile.mbarrier_alloc", "tile.mbarrier_dealloc", "tile.mbarrier_wait", "tile.tma_load", "tile.tma_store",
              "tile.warp_role", "tile.set_max_registers", "tile.mbarrier_arrive"}


def _tile_ops() -> set[str]:
    return {name if name.startswith("tile.") else f"tile.{name}" for name in REGISTRY}


def test_every_tile_op_is_lowered_on_each_target():
    ops = _tile_ops()
    assert "tile.load" in ops and "tile.tma_load" in ops
    assert ops - set(lowerings("gpu")) == set()
    assert ops - set(lowerings("cpu")) == NOT_ON_CPU


def test_a_lowering_is_found_by_its_op_name():
    gpu, cpu = lowerings("gpu"), lowerings("cpu")
    assert gpu["tile.load"].__module__ == "tile.codegen.gpu.distributed_memory"
    assert cpu["tile.load"].__module__ == "tile.codegen.cpu.convert_tile_to_linalg"
    assert gpu["scf.for"].__module__ == "tile.codegen.gpu.convert_tile_to_gpu"  # (control flow too, on a GPU)
    assert gpu["tile.atomic_cas"] is gpu["tile.atomic_rmw"]


def test_a_second_lowering_of_an_op_is_refused():
    def other(t, op):
        pass

    with pytest.raises(ValueError, match="two gpu lowerings of tile.load"):
        lowering("tile.load", target="gpu")(other)
    with pytest.raises(ValueError, match="unknown lowering target 'tpu'"):
        lowering("tile.load", target="tpu")
    assert lowerings("gpu")["tile.load"] is not other
