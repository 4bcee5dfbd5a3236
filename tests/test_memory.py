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


# Freed blocks between live ones, as a finished stage leaves them: glibc's trim threshold
# gives back only the heap's free top, so they stay resident; prints the resident MB after
# freeing them and after return_freed_memory().
STAGE = r"""
from pairrl.memory import return_freed_memory, reuse_freed_memory
assert reuse_freed_memory()
import torch

def resident_mb():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 2**20

pairs = [(torch.ones(2 << 20), torch.ones(16)) for _ in range(100)]  # 8 MiB, a live scrap
scraps = [small for _, small in pairs]
del pairs
freed = resident_mb()
assert return_freed_memory()
print(freed, resident_mb())
"""


def test_freed_memory_goes_back_to_the_system_between_stages() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PAIRRL_MALLOC_DEFAULTS"}
    out = subprocess.run(
        [sys.executable, "-c", STAGE], capture_output=True, text=True, check=True, env=env
    )
    freed, returned = map(float, out.stdout.split()[-2:])
    assert freed - returned > 600, (freed, returned)  # most of the 800 MiB freed
