"""How the benchmarks time a kernel on the GPU: the median of many CUDA-event-timed runs,
and the copies a memory-bound kernel's bandwidth is compared with."""

from __future__ import annotations

import statistics
import time

COPY_BYTES = 1 << 30
TIMED_SECONDS = 0.4  # per measurement, after warm-up: at ~1 ms a run, a median of ~400
MIN_REPS, MAX_REPS, WARMUP = 20, 2000, 5
# Matmul: 8192^3 is ~1.5 ms for cuBLAS: few warm-up runs, one probe, a short timed window and a
# low floor on the repetition count keep the matmul points well under a minute.
MATMUL_TIMING = {"seconds": 0.25, "min_reps": 3, "max_reps": 200, "warmup": 2, "probe": 1}
ROUNDS = 3  # each implementation's time: the best of 3 medians, taken in turn with the others'


def time_ms(fn, sync, seconds: float = TIMED_SECONDS, min_reps: int = MIN_REPS, max_reps: int = MAX_REPS,
            warmup: int = WARMUP, probe: int = 3) -> tuple[float, int]:
    """Median milliseconds of fn over many runs, each bracketed by CUDA events; the
    repetition count is sized from a short probe so each point takes ~`seconds`."""
    import torch

    for _ in range(warmup):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(probe):
        fn()
    sync()
    per_run = (time.perf_counter() - t0) / probe
    reps = int(min(max(seconds / max(per_run, 1e-6), min_reps), max_reps))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
    sync()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends)), reps


def same_size_copy(nbytes: int):
    """A device-to-device copy that reads nbytes / 2 and writes as many (a kernel's bytes moved)."""
    import torch

    src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def copy_ceiling_gbs() -> float:
    """GB/s of a 1 GiB device-to-device copy, counting bytes read plus bytes written."""
    import torch

    ms, _ = time_ms(same_size_copy(2 * COPY_BYTES), torch.cuda.synchronize)
    return 2 * COPY_BYTES / (ms * 1e-3) / 1e9
