"""Builds one specialization of a kernel: frontend, then every stage, then the
launch ABI read back from the compiled function's signature.

The ABI is never counted by hand: the parameter list of the final
`llvm.func` is parsed and checked against what the kernel's arguments expand
to (a memref is allocated ptr, aligned ptr, offset, sizes..., strides...).
"""

from __future__ import annotations

import inspect
import re
import time

from mlir import ir

from ..dialects import make_context
from ..dialects.layout import BLOCK_SHARED, Mma
from ..frontend.emitter import emit_kernel
from ..frontend.names import namespace
from ..frontend.errors import CompilationError, def_line
from ..frontend.parser import parse_function
from ..passes.walk import collect
from .compiler import run_stages
from .gpu.distributed_dot import k_step

def expected_abi(signature) -> list[dict]:
    """What each runtime argument expands to, in order, at the LLVM level."""
    abi = []
    for i, (_, kind, detail) in enumerate(s for s in signature if s[1] != "constexpr"):
        if kind == "tensor":
            dt, rank = detail[:2]
            abi += [{"arg": i, "part": "ptr", "type": "ptr"}, {"arg": i, "part": "ptr", "type": "ptr"},
                    {"arg": i, "part": "offset", "type": "i64"}]
            abi += [{"arg": i, "part": "size", "dim": d, "type": "i64"} for d in range(rank)]
            abi += [{"arg": i, "part": "stride", "dim": d, "type": "i64"} for d in range(rank)]
        else:
            abi.append({"arg": i, "part": "value", "type": detail.mlir})
    return abi


def tma_abi(tile_opt_stage: str, signature, ctx) -> list[dict]:
    """The tensor-map pointers `tile-pipeline` appended to the kernel's arguments (its
    `tile.tma` attribute), one ABI entry each: which tensor, the arguments or constants
    that give its bounds and row stride ("arg:N" / "const:V"), the box and swizzle."""
    if "tile.tma" not in tile_opt_stage:
        return []
    details = [d for _, kind, d in signature if kind != "constexpr"]
    out = []
    with ctx, ir.Location.unknown():
        # (the module held in a name: a temporary one is destroyed with its operations while `fn` still
        # points into them, which crashed the process now and then)
        module = ir.Module.parse(tile_opt_stage)
        fn = next(op for op in module.body.operations if "tile.tma" in op.attributes)
        for e in map(ir.DictAttr, ir.ArrayAttr(fn.attributes["tile.tma"])):
            refs = {k: ir.StringAttr(e[k]).value.split(":") for k in ("rows", "cols", "stride")}
            arg = ir.IntegerAttr(e["tensor"]).value
            dt = details[arg][0]
            out.append({"arg": arg, "part": "tma", "type": "ptr", "dtype": dt.mlir, "elem_bytes": max(1, dt.bits // 8),
                        **{k: [kind, int(v)] for k, (kind, v) in refs.items()},
                        "box": [ir.IntegerAttr(b).value for b in ir.ArrayAttr(e["box"])],
                        "swizzle": ir.IntegerAttr(e["swizzle"]).value})
    return out


def compiled_param_types(llvm_dialect_text: str, name: str) -> list[str]:
    m = re.search(r"llvm\.func @" + re.escape(name) + r"\((.*?)\)\s*(->|attributes|\{)", llvm_dialect_text)
    if m is None:
        raise CompilationError(f"compiled module has no function @{name}")
    types = re.findall(r"%arg\d+: ([^,{]+?)(?: \{[^}]*\})?(?:,|$)", m.group(1))
    return [t.strip().replace("!llvm.ptr", "ptr").split("<")[0] for t in types]


def _dynamic_shared_bytes(gpu_stage: str) -> int:
    m = re.search(r"tile.shared_bytes = (\d+)", gpu_stage)
    return int(m.group(1)) if m and "gpu.dynamic_shared_memory" in gpu_stage else 0


def _producer_warps(tile_opt_stage: str) -> int:
    """The warps `tile-warp-specialize` added to the block for its producer (0 if none)."""
    m = re.search(r"tile.producer_warps = (\d+)", tile_opt_stage)
    return int(m.group(1)) if m else 0


def _ptxas_summary(log: str) -> dict:
    """Registers, stack frame and spill bytes of the kernel, from ptxas -v."""
    num = lambda pattern: int(m.group(1)) if (m := re.search(pattern, log)) else 0  # noqa: E731
    return {"registers": num(r"Used (\d+) registers"), "stack_frame": num(r"(\d+) bytes stack frame"),
            "spill_stores": num(r"(\d+) bytes spill stores"), "spill_loads": num(r"(\d+) bytes spill loads")}


def _tensor_core_dots(module, num_warps: int) -> bool:
    """True unless the kernel has a dot that mma.sync cannot do: f32 operands without
    tf32, K not a multiple of the instruction's (16 for 16-bit operands, 8 for tf32), or
    an accumulator too small for whole m16n8 fragments on every warp."""
    for dot in collect(module.operation, ["tile.dot"]):
        step = k_step(dot)
        if step is None or ir.RankedTensorType(dot.operands[0].type).shape[1] % step:
            return False
        if Mma.for_shape(list(ir.RankedTensorType(dot.results[0].type).shape), num_warps) is None:
            return False
    return True


def build(kernel, signature, target: str, options: dict, keep_dumps: bool, edits=()):
    began = time.perf_counter()
    if getattr(kernel, "_parsed", None) is None:
        kernel._parsed = parse_function(kernel.fn)
    parsed = time.perf_counter()
    ctx = make_context()
    with ctx, ir.Location.unknown():
        # device_assert: checked on the CPU target; on a GPU with TILE_DEBUG=1 or @tile.jit(debug=True)
        asserts = target == "cpu" or bool(options.get("debug"))
        # (f32 dots naming no precision: tf32 on a GPU, Triton's default there; exact on the CPU, as its interpreter)
        module = emit_kernel(kernel._parsed, namespace(kernel.fn), kernel.name, signature, asserts=asserts,
                             bounds=bool(options.get("debug")),  # (TILE_DEBUG=1: every access checked)
                             f32_precision="ieee" if target == "cpu" else "tf32")
        if target != "cpu" and not _tensor_core_dots(module, options["num_warps"]):
            options = {**options, "codegen": "linalg"}  # (exact f32 dots, small tiles) no tensor-core path
            for op, what in (("tile.print", "device_print"), ("tile.barrier", "debug_barrier"),
                             ("tile.assert_fail", "device_assert"),
                             ("tile.grid_dependency", "gdc_wait/gdc_launch_dependents")):
                if collect(module.operation, [op]):
                    raise CompilationError(f"{kernel.name}: {what} is not supported on a GPU in a kernel whose dot "
                                           "takes the linalg path (f32 operands without tf32, or tiles too small for mma)")
    emitted = time.perf_counter()
    compiled = run_stages(module, target, options, "tile", kernel.name, keep_dumps, ctx, edits)
    abi = expected_abi(signature) + tma_abi(compiled.stages.get("tile-opt", ""), signature, ctx)
    final = compiled.stages["llvm" if target == "cpu" else "nvvm"]
    have = compiled_param_types(final, kernel.name)
    want = [a["type"] for a in abi] + (["i32"] * 3 if target == "cpu" else [])
    if have != want:
        raise CompilationError(f"launch ABI mismatch for {kernel.name}: compiled {have}, expected {want}")
    compiled.metadata = {
        "name": kernel.name, "target": target, "abi": abi, "options": options,
        "num_threads": (options["num_warps"] + _producer_warps(compiled.stages.get("tile-opt", ""))) * 32,
        "shared_bytes": _dynamic_shared_bytes(compiled.stages.get("gpu", "")),
        "args": [[n, k, repr(d)] for n, k, d in signature if k != "constexpr"],
        "pipeline": compiled.pipeline,
        # wall seconds: parse (0 when this process parsed the kernel before), emit, then each stage
        "compile_seconds": {"parse": parsed - began, "emit": emitted - parsed, **compiled.seconds},
        # (tile-warp-specialize's reasons for the loops that asked and kept their code: the launcher warns)
        "warp_specialize_skipped": re.findall(r'tile.warp_specialize_skipped = "([^"]*)"', compiled.stages.get("tile-opt", "")),
    }
    need, limit = compiled.metadata["shared_bytes"], BLOCK_SHARED.get(target)
    if limit is not None and need > limit:
        lines, first, at = def_line(kernel.fn)
        raise CompilationError(f"tile too large: kernel {kernel.name} needs {need} bytes of shared memory, more than the "
                               f"{limit} a {target} block can have: use smaller tiles or fewer stages",
                               inspect.getsourcefile(kernel.fn), first + at, 1, lines[at])
    if target != "cpu":
        from .backend.cubin import assemble

        compiled.metadata["ptxas"] = _ptxas_summary(assemble(compiled.stages["ptx"], target)[1])
    artifact = compiled.stages["cubin"] if target != "cpu" else final.encode()
    return compiled, artifact
