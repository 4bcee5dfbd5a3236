"""Denormal floats flushed to zero while a one-thread training runs (``pairrl.cpu_floats``),
in fresh processes: the mode belongs to each thread, so it is set on one thread only."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import torch
from pairrl.cpu_floats import denormals_flushed
torch.set_num_threads({threads})
def denormal() -> int:  # 1e-30 * 1e-10 = 1e-40, below float32's smallest normal (1.2e-38)
    return int((torch.full((2_000_000,), 1e-30) * 1e-10).count_nonzero())
with denormals_flushed() as flushed:
    inside = denormal()
    import numpy as np  # the limits were measured before: no warning about subnormals
    np.finfo(np.float32).smallest_subnormal
print(flushed, inside, denormal())
"""


def _probe(threads: int) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-c", PROBE.format(threads=threads)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.split()


def test_on_one_thread_denormals_are_flushed_inside_only() -> None:
    # x86-64 has flush-to-zero since SSE2: every CPU the project runs on
    assert _probe(threads=1) == ["True", "0", "2000000"]


def test_on_two_threads_nothing_changes() -> None:
    """The second thread was started without the mode: flushing on the first only would
    make the numbers depend on which thread computed what."""
    assert _probe(threads=2) == ["False", "2000000", "2000000"]
