"""Denormal floats flushed to zero on CPU, for every pairrl process that trains or evaluates.

A policy that has become confident, scored at a temperature below 1 (the main job's judge:
0.4), has next-token probabilities below float32's smallest normal number (1.2e-38) at most
positions; the log-softmax backward then computes with denormal numbers, which x86 CPUs
handle in microcode, many times slower than normal ones. In the main job this made every
step whose rows all scored the same (no gradient, a confident judge) take 2.2 s of update
instead of 0.6 s (docs/experiments.md). Flushed to zero, those values are 0 instead of
below 1.2e-38: no result that a float32 can tell from another changes, except in the last
bits of sums that would have included them. ``benchmarks/denormals.py`` measures the
difference side by side.

The mode belongs to each thread; threads started later (torch's intra-op pool) inherit
it, so it is set before the first tensor operation: by ``pairrl train``, ``pairrl eval``
and the main job's second process.
"""

from __future__ import annotations

__all__ = ["flush_denormals"]


def flush_denormals() -> bool:
    """Flush denormal floats to zero on this thread and those it starts; False where the
    CPU cannot (then nothing changes)."""
    import torch

    return bool(torch.set_flush_denormal(True))
