"""PTX -> cubin with the ptxas shipped in the triton wheel (CUDA 12.9).

ptxas runs with -v; its resource report (registers, stack frame, spills) is
kept, so that builds can be checked for local memory without a GPU.

Occupancy: a kernel without tensor-core instructions is memory-bound in
practice, and how many bytes an SM keeps in flight grows with the blocks it
holds. When ptxas's register count leaves room for one block fewer than a
slightly lower count would, the PTX is assembled again under that cap, and the
result kept only if nothing spills. The cap is a `.maxnreg` directive on the
kernel: ptxas ignores `-maxrregcount` for an entry that has `.maxntid`, which
every kernel here has.

Spills: left to itself, ptxas gave some kernels that cannot fit their registers
(a 256x128 f32 accumulator on 4 warps, sm_80) 32 or 64 registers and spilled
several times more than it does with all it may use (32 registers and 7576 bytes
of spill stores against 255 and 1140). A kernel that spills is assembled again
with `.maxnreg` at the most a thread may have, and the build that spills less is kept.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile

from ...frontend.errors import CompilationError


def ptxas_path() -> str:
    import triton

    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")


REGISTERS_PER_SM, THREADS_PER_SM, BLOCKS_PER_SM, REGISTERS_PER_THREAD = 65536, 2048, 32, 255


def _ptxas(ptx: str, target: str, extra: list[str]) -> tuple[bytes, str]:
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run([ptxas_path(), f"-arch={target}", "-O3", "-v", *extra, src, "-o", out], capture_output=True, text=True)
        if r.returncode != 0:
            raise CompilationError(f"ptxas failed for {target}:\n{r.stderr.strip()}")
        with open(out, "rb") as f:
            return f.read(), r.stderr


def blocks_per_sm(registers: int, threads: int) -> int:
    """Resident blocks an SM allows by registers (allocated per warp, 8 per thread at a time) and threads."""
    per_thread = -(-max(registers, 1) // 8) * 8
    return min(REGISTERS_PER_SM // (threads * per_thread), THREADS_PER_SM // threads, BLOCKS_PER_SM)


def occupancy_cap(registers: int, threads: int) -> int | None:
    """The register cap that fits one more block per SM, if there is one worth trying."""
    blocks = blocks_per_sm(registers, threads)
    if blocks >= min(THREADS_PER_SM // threads, BLOCKS_PER_SM):
        return None
    cap = REGISTERS_PER_SM // ((blocks + 1) * threads) // 8 * 8
    return cap if cap >= 24 and cap >= registers * 3 // 4 else None  # far below: it would only spill


def with_register_cap(ptx: str, cap: int) -> str:
    """The PTX with `.maxnreg cap` after the kernel's `.maxntid`."""
    return re.sub(r"^(\.maxntid [^\n]*)$", lambda m: f"{m.group(1)}\n.maxnreg {cap}", ptx, count=1, flags=re.M)


_SETMAXNREG = r"(setmaxnreg\.{}\.sync\.aligned\.u32\s+)(\d+);"


def one_block_registers(ptx: str) -> str | None:
    """A warp-specialized kernel's PTX (`tile-warp-specialize`) with the register split for one
    block an SM (`register_plan(blocks=1)`: 240 for the consumers, the producer 40 or, beside
    two consumer warpgroups or more, 24), or None if it has that many already or is none."""
    from ...passes.tile_warp_specialize import PRODUCER_WARPS, register_plan

    inc = re.search(_SETMAXNREG.format("inc"), ptx)
    threads = re.search(r"\.maxntid (\d+)", ptx)
    if inc is None or threads is None or ".maxnreg" not in ptx:
        return None
    consumer_warps = int(threads.group(1)) // 32 - PRODUCER_WARPS
    launch, consumer, producer = register_plan(consumer_warps, 40 if consumer_warps == 4 else 24, blocks=1)
    if consumer <= int(inc.group(2)):
        return None
    ptx = re.sub(_SETMAXNREG.format("inc"), lambda m: f"{m.group(1)}{consumer};", ptx)
    ptx = re.sub(_SETMAXNREG.format("dec"), lambda m: f"{m.group(1)}{producer};", ptx)
    return re.sub(r"^\.maxnreg \d+$", f".maxnreg {launch}", ptx, flags=re.M)


def _warp_specialized(cubin: bytes, log: str, ptx: str, target: str) -> tuple[bytes, str]:
    """A warp-specialized kernel's build: where its consumers spill, the split of one block an
    SM if that spills less. Its registers at launch must be the `.maxnreg` its split assumes:
    with fewer, what the producer's `setmaxnreg.dec` frees would not cover the consumers'
    `setmaxnreg.inc`, which would wait forever."""
    roomier = one_block_registers(ptx) if _spill_bytes(log) else None
    if roomier is not None:
        roomy, roomy_log = _ptxas(roomier, target, [])
        if _spill_bytes(roomy_log) < _spill_bytes(log):
            note = "\ntile: the warp-specialized split of one block an SM (240 for the consumers), as they spilled\n"
            cubin, log, ptx = roomy, roomy_log + note, roomier
    used, want = re.search(r"Used (\d+) registers", log), re.search(r"^\.maxnreg (\d+)$", ptx, flags=re.M)
    if used is None or want is None or used.group(1) != want.group(1):
        raise CompilationError(f"ptxas gave a warp-specialized kernel {used and used.group(1)} registers a thread, not "
                               f"the {want and want.group(1)} its setmaxnreg split assumes (setmaxnreg.inc could wait "
                               "forever): an internal error of tile-warp-specialize")
    return cubin, log


def _spill_bytes(log: str) -> int:
    return sum(int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", log))


@functools.lru_cache(maxsize=64)
def assemble(ptx: str, target: str) -> tuple[bytes, str]:
    """(cubin, ptxas -v report) for one PTX text."""
    cubin, log = _ptxas(ptx, target, [])
    threads = re.search(r"\.maxntid (\d+)", ptx)
    used = re.search(r"Used (\d+) registers", log)
    if threads is None or used is None:
        return cubin, log
    if "setmaxnreg" in ptx:  # warp-specialized: its register split is its own (`.maxnreg`), no cap applies
        return _warp_specialized(cubin, log, ptx, target)
    most = min(REGISTERS_PER_THREAD, REGISTERS_PER_SM // int(threads.group(1)) // 8 * 8)
    if _spill_bytes(log) and int(used.group(1)) < most and ".maxnreg" not in ptx:
        roomy, roomy_log = _ptxas(with_register_cap(ptx, most), target, [])
        if _spill_bytes(roomy_log) < _spill_bytes(log):
            return roomy, roomy_log + f"\ntile: register cap {most}, as ptxas spilled at {used.group(1)} registers\n"
    if re.search(r"\b(mma|wgmma)\.", ptx):
        return cubin, log
    cap = occupancy_cap(int(used.group(1)), int(threads.group(1)))
    if cap is None:
        return cubin, log
    capped, capped_log = _ptxas(with_register_cap(ptx, cap), target, [])
    if re.search(r"[1-9]\d* bytes (spill|stack)", capped_log):
        return cubin, log
    return capped, capped_log + f"\ntile: register cap {cap} for {blocks_per_sm(cap, int(threads.group(1)))} blocks per SM\n"


def ptx_to_cubin(ptx: str, target: str) -> bytes:
    return assemble(ptx, target)[0]
