"""glibc's memory reuse (``pairrl.memory``): both thresholds set, and far fewer page faults
for the allocation pattern of CPU training steps, whose tensors change size every step."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc", reason="the mmap and trim thresholds are glibc's"
)

# Steps whose batch width changes every step, as a warm start's or an RL step's does: each
# step's activations are freed and allocated again at another size. Prints the page faults
# the steps took, after the first step's (which every allocator pays).
STEPS = r"""
import resource, sys
if sys.argv[1] == "reuse":
    from pairrl.memory import reuse_freed_memory
    assert reuse_freed_memory()
import torch

weight = torch.randn(256, 256)

def step(index):
    rows = 2048 + (index * 997) % 6144
    hidden = [torch.randn(rows, 256)]
    for _ in range(4):
        hidden.append(torch.tanh(hidden[-1] @ weight))

for index in range(8):  # every size once
    step(index)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for index in range(60):
    step(index)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    env = {k: v for k, v in os.environ.items() if k != "PAIRRL_MALLOC_DEFAULTS"}
    out = subprocess.run(
        [sys.executable, "-c", STEPS, mode], capture_output=True, text=True, check=True, env=env
    )
    return int(out.stdout.split()[-1])


def test_both_thresholds_are_set() -> None:
    from pairrl.memory import reuse_freed_memory

    assert reuse_freed_memory() is True


def test_steps_of_changing_size_fault_far_less() -> None:
    default, reuse = _faults("default"), _faults("reuse")
    # glibc's adaptive thresholds map, unmap and trim again every step (hundreds of faults
    # per step here); with the fixed ones the freed memory is reused for the next step
    assert reuse * 4 < default, (default, reuse)


def test_glibc_defaults_are_kept_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    from pairrl.memory import reuse_freed_memory

    monkeypatch.setenv("PAIRRL_MALLOC_DEFAULTS", "1")
    assert reuse_freed_memory() is False
