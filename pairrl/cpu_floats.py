"""Denormal floats flushed to zero while a one-thread CPU training runs.

A policy that has become confident, scored at a temperature below 1 (the main job's judge:
0.4), has next-token probabilities below float32's smallest normal number (1.2e-38) at most
positions; the log-softmax backward then computes with denormal numbers, which x86 CPUs
handle in microcode, many times slower than normal ones. In the main job this made every
step whose rows all scored the same (no gradient, a confident judge) take 2.2 s of update
instead of 0.6 s (docs/experiments.md). Flushed to zero, those values are 0 instead of
below 1.2e-38. ``benchmarks/denormals.py`` measures the difference side by side.

The mode belongs to each thread, and torch's intra-op threads keep the mode they were
started with: with several threads, some would flush and others not, and which rows land
on which thread can follow timing, so a seed's numbers could too. So the mode is set only
when training runs on one thread (the main job's thread plan gives each training one),
and only for the training: the benchmark runs after it compute as a separate
``pairrl eval`` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["denormals_flushed"]


@contextmanager
def denormals_flushed() -> Iterator[bool]:
    """Flush denormal floats to zero inside when torch runs on one thread (and the CPU can);
    yields whether it does. The mode is off again on exit."""
    import numpy as np
    import torch

    for dtype in (np.float16, np.float32, np.float64):
        # numpy measures (and caches) each type's limits when first asked; measured with
        # denormals flushed, it warns that the smallest subnormal is zero
        str(np.finfo(dtype))
    flushed = torch.get_num_threads() == 1 and bool(torch.set_flush_denormal(True))
    try:
        yield flushed
    finally:
        if flushed:
            torch.set_flush_denormal(False)
