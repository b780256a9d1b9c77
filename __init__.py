"""tile: a tile-level GPU kernel DSL compiler built on MLIR.

    @tile.kernel
    def add(x, y, out, n, BLOCK: tile.constexpr):
        offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
        tile.store(out + offs, tile.load(x + offs, mask=offs < n) + tile.load(y + offs, mask=offs < n), mask=offs < n)

    add[(tile.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)

Importing `tile` loads neither MLIR nor lark: a host with only torch and a
cache of compiled kernels can launch them.
"""

# Skipped only when a tool loads this file on its own, outside the package: pytest does, for
# the repo root of a checkout whose folder name is not a Python identifier (say, tile-main).
if __package__:
    from .codegen.pass_pipeline import Pipeline, pipeline_edits
    from .frontend.dtypes import (bfloat16, dtype, float8e4m3, float8e4nv, float8e5, float8e5m2, float16, float32, float64, int1, int8,
                                  int16, int32, int64, pointer_type, uint8, uint16, uint32, uint64)
    from .frontend.errors import (CompilationError, DeviceAssertionError, DeviceUnavailableError, LaunchError, SpillWarning,
                                  TileError, WarpSpecializeWarning)
    from .frontend.language import *  # noqa: F401,F403  (the kernel language)
    from .frontend.language import constexpr
    from .frontend.tensor_descriptor import TensorDescriptor
    import sys as _sys

    from .frontend import extra  # Triton's tl.extra.libdevice: importable as tile.extra(.cuda).libdevice too
    for _name in ("extra", "extra.libdevice", "extra.cuda", "extra.cuda.libdevice"):
        _sys.modules[f"{__name__}.{_name}"] = _sys.modules[f"{__name__}.frontend.{_name}"]
    from .frontend import math_language as math  # Triton's tl.math
    from .frontend.math_language import div_rn, fdiv, sqrt_rn, umulhi  # (tl.div_rn is tl.math.div_rn)
    from .frontend.type_names import const, float8e4b8, float8e4b15, float8e5b16, tuple, void  # noqa: A004
    from .frontend.type_names import block_type, constexpr_type, pi32_t, str_to_ty, tensor
    from .frontend.type_names import missing as _missing
    from .runtime.autotune import Autotuner, Config, Heuristics, autotune, heuristics
    from .runtime.kernel import Kernel, func, jit, kernel

    def _lazy(alias: str, target: str):
        """`tile.<alias>`, importable as such, whose module (it imports torch) loads on first use."""
        import importlib.util

        spec = importlib.util.find_spec(target)
        spec.loader = importlib.util.LazyLoader(spec.loader)
        module = importlib.util.module_from_spec(spec)
        _sys.modules[target] = _sys.modules[f"{__name__}.{alias}"] = module
        spec.loader.exec_module(module)
        return module

    torch = _lazy("torch", f"{__name__}.runtime.torch_ops")  # tile.torch.op, tile.torch.autograd
    testing = _lazy("testing", f"{__name__}.runtime.testing")  # tile.testing.do_bench, roofline

    from .runtime.profiling import profile  # tile.profile(kernel, grid, *args, bytes=, flops=, ncu=), .compare

    from .frontend.triton_modules import install as _install_triton_modules
    _install_triton_modules(globals())  # tile.core, tile.standard, tile.random: Triton's spellings

    def __getattr__(name: str):
        """Triton's names that tile lacks: an AttributeError saying so (a CompilationError in a kernel)."""
        raise _missing(__name__, name)

__all__ = [
    "kernel", "jit", "func", "Kernel", "autotune", "Autotuner", "Config", "heuristics", "Heuristics", "constexpr", "dtype", "float32", "float16", "bfloat16", "float64", "int32", "int64",
    "int8", "int16", "int1", "uint8", "uint16", "uint32", "uint64", "float8e4m3", "float8e5m2", "float8e4nv", "float8e5", "pointer_type", "TileError", "CompilationError", "LaunchError", "DeviceUnavailableError", "DeviceAssertionError",
    "TensorDescriptor", "Pipeline", "pipeline_edits", "SpillWarning", "WarpSpecializeWarning",
]
