"""Runtime: specialization, disk cache, launchers (CPU and CUDA). Imports no compiler code."""
