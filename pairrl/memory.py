"""Freed memory kept for reuse on glibc, so that CPU training does not fault the same pages in
every step.

PyTorch on CPU allocates its activations, gradients and KV caches with ``malloc`` and frees
them every step. With glibc's defaults a block above the mmap threshold is mapped fresh on
every allocation and unmapped on free, and freed memory at the top of the heap goes back to
the kernel, so the next step touches brand-new pages and takes a page fault for each
(kernel time, and cold caches). A fixed mmap threshold of 32 MiB (glibc's largest) with a
trim threshold of 256 MiB keeps that memory in the process for the next step instead: the
main job's RL stage and benchmark runs took 4.1 million page faults instead of 14.6 million
and 18 s of kernel time instead of 39 s, with the same results (docs/experiments.md). Both
must be set together: setting either one alone turns off glibc's adaptive threshold and
faults more than the defaults. The floats do not change: only where freed blocks go does.

``PAIRRL_MALLOC_DEFAULTS=1`` in the environment keeps glibc's defaults (to compare:
``benchmarks/memory_reuse.py``, or where freed memory must go back to the system).

What is kept for reuse stays in the process after the stage that freed it: a stage that
allocates in other sizes (a benchmark run after training, one model's benchmark run after
another's) adds its own peak on top. ``return_freed_memory`` gives it back to the system
between such stages.
"""

from __future__ import annotations

import ctypes
import os
import platform

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "return_freed_memory", "reuse_freed_memory"]

MMAP_THRESHOLD = 32 << 20  # glibc refuses a larger one (half its 64 MiB heap)
TRIM_THRESHOLD = 256 << 20  # 1 GiB gave no fewer faults in the main job's warm start
_M_TRIM_THRESHOLD = -1  # mallopt parameter numbers, from glibc's malloc.h
_M_MMAP_THRESHOLD = -3


def reuse_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds for this process (see the module docstring).

    Returns whether both were set: False where the C library is not glibc (macOS, musl),
    which keeps its own behaviour, or with ``PAIRRL_MALLOC_DEFAULTS=1``. Idempotent; it
    affects allocations made after the call.
    """
    if os.environ.get("PAIRRL_MALLOC_DEFAULTS") == "1" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # the mmap threshold first: a trim threshold alone would leave it at 128 KiB, fixed
    return mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and (
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    )


def return_freed_memory() -> bool:
    """Collect unreachable objects, then give the freed memory of every glibc arena back to
    the system (``malloc_trim(0)``): between stages, not inside a step (the next step would
    fault it in again). Returns whether glibc trimmed; False elsewhere (no such call)."""
    import gc

    gc.collect()
    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    trim(0)
    return True
