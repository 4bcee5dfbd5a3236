"""Time limits follow the candidate's own clock, not the machine's load (docs/time_limits.md).

EvalPlus's rule gives each input max(floor, 4 x the reference's time). The reference is
timed on this machine when the task is first judged; a candidate judged later, while the
CPU is shared with other work (other workers, other jobs: a machine made slower by a
scale factor), must still be timed as if it had the CPU to itself, or a correct program
fails where EvalPlus passes it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

import pytest

from pairrl.rewards import ExecJob, Executor, IOTests, Task

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


def spinner(factor: float) -> str:
    """``work(seconds)`` that uses ``factor x seconds`` of CPU and returns ``seconds``."""
    return (
        "import time\n"
        "def work(seconds):\n"
        f"    end = time.process_time() + {factor} * seconds\n"
        "    while time.process_time() < end:\n"
        "        pass\n"
        "    return seconds\n"
    )


SPIN_TASK = Task("t/spin", "", "work", IOTests(inputs=((0.2,),)), canonical_solution=spinner(1.0))


def _pin_threads(cpus: set[int]) -> None:
    for tid in os.listdir("/proc/self/task"):
        with suppress(ProcessLookupError):  # a thread that has just ended
            os.sched_setaffinity(int(tid), cpus)


@contextmanager
def one_cpu() -> Iterator[Callable[[int], None]]:
    """Pin this process's threads (so the sandboxes started from them) to one CPU; the
    function given starts busy loops there, each in a session of its own (the scheduler
    shares a CPU between sessions first, and each candidate has a session of its own):
    with ``n`` of them that CPU runs a candidate about ``n + 1`` times slower."""
    before = os.sched_getaffinity(0)
    busy: list[subprocess.Popen] = []

    def load(n: int) -> None:
        loop = [sys.executable, "-c", "while True: pass"]
        busy.extend(subprocess.Popen(loop, start_new_session=True) for _ in range(n))
        time.sleep(0.2)

    _pin_threads({max(before)})
    try:
        yield load
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
        _pin_threads(before)


def test_reference_limit_holds_on_a_loaded_cpu() -> None:
    """The reference (0.2 s of CPU) is timed on an idle CPU: limit ~0.8 s. Then the CPU
    is shared with 4 busy loops: a candidate needing 0.25 s takes ~1.5 s of wall time and
    must still pass (it timed out while the limit bounded the parent's wall time); one
    needing 1.0 s, past the limit, still times out."""
    ok_code, slow_code = spinner(1.25), spinner(5.0)
    with one_cpu() as load, Executor(workers=2, time_limit="reference", limit_floor_s=0.1) as ex:
        (reference,) = ex.expected_outputs(SPIN_TASK)
        assert reference.ok and 0.15 < reference.wall_s < 0.5
        assert ex._input_limits([reference]) == [pytest.approx(4 * reference.wall_s)]
        load(4)
        ok, slow = ex.run(
            [ExecJob(SPIN_TASK, ok_code, "ok"), ExecJob(SPIN_TASK, slow_code, "slow")]
        )
    assert (ok.status, slow.status) == ("pass", "timeout"), ok.first_failure
    assert ok.wall_s > 2 * 0.25  # the load was real: wall time well past its own time


def test_call_time_is_the_candidates_own() -> None:
    """``call_outputs`` reports each call's own time (a sleep counts, as in EvalPlus's
    wall-clock limit), and its limit stops a call that runs past it."""
    sleeper = "import time\ndef work(seconds):\n    time.sleep(seconds)\n    return seconds\n"
    with Executor(workers=1) as ex:
        spun, slept, stopped = ex.call_outputs(
            spinner(1.0), "work", [(0.1,)], timeout_s=1.0
        ) + ex.call_outputs(sleeper, "work", [(0.2,), (2.0,)], timeout_s=1.0)
    assert spun.ok and 0.09 < spun.wall_s < 0.3
    assert slept.ok and 0.19 < slept.wall_s < 0.4
    assert stopped.failure is not None and stopped.failure.startswith("timeout")
    assert 0.99 < stopped.wall_s < 1.5
