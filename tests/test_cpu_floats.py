"""Denormal floats flushed to zero (``pairrl.cpu_floats``), in fresh processes: the mode is
per thread, and torch's intra-op threads started after it inherit it."""

from __future__ import annotations

import subprocess
import sys

import pytest

# 1e-30 * 1e-10 = 1e-40, below float32's smallest normal number (1.2e-38): a denormal
PROBE = """
import torch
from pairrl.cpu_floats import flush_denormals
flushed = {flush} and flush_denormals()
torch.set_num_threads(2)
small = torch.full((2_000_000,), 1e-30) * 1e-10  # large enough for two threads
print(flushed, int(small.count_nonzero()))
"""


def _probe(flush: bool) -> tuple[str, int]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(flush=flush)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    flushed, nonzero = proc.stdout.split()
    return flushed, int(nonzero)


def test_denormals_are_flushed_on_every_thread() -> None:
    flushed, nonzero = _probe(flush=True)
    if flushed == "False":
        pytest.skip("this CPU cannot flush denormals (no DAZ/FTZ)")
    assert nonzero == 0


def test_without_it_the_products_are_denormal() -> None:
    assert _probe(flush=False) == ("False", 2_000_000)
