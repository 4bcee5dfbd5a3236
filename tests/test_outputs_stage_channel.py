"""Worker channels survive the threads that use them: the benchmark's outputs stage runs
each task's candidates on a short-lived thread pool, and a worker those threads started
must serve the next task (and a worker that died while idle is replaced before a job)."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from pairrl.eval.agreement_stage import select_by_agreement
from pairrl.eval.cache import StageCache
from pairrl.eval.candidates import Candidate
from pairrl.rewards import AssertTests, Executor, Task
from pairrl.rewards.sandbox import SandboxLimits, SandboxWorker

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

# Slow to load, so that two stage threads hold a worker each at the same time and the
# second one has to start a new worker on its own (short-lived) thread.
SLOW_DOUBLE = "import time\ntime.sleep(0.5)\ndef double(x):\n    return 2 * x\n"


def _double_task(task_id: str) -> Task:
    prompt = (
        "def double(x):\n    '''Twice x.\n"
        "    >>> double(2)\n    4\n    >>> double(5)\n    10\n    '''\n"
    )
    tests = AssertTests(
        cases=("def check(candidate):\n    assert candidate(3) == 6\n",), check_call=True
    )
    return Task(task_id, prompt, "double", tests)


def test_worker_outlives_the_thread_that_started_it() -> None:
    started: list[SandboxWorker] = []

    def start() -> None:
        worker = SandboxWorker("bwrap", 0, SandboxLimits())
        worker.start()
        started.append(worker)

    thread = threading.Thread(target=start)
    thread.start()
    thread.join()
    [worker] = started
    try:
        time.sleep(0.2)  # a parent-death signal would have landed by now
        assert worker.alive()
        pong = worker.request({"op": "ping"}, time.monotonic() + 10.0, new_nonce=True)
        assert pong["k"] == "pong"
    finally:
        worker.kill()


def test_outputs_stage_keeps_its_workers_from_task_to_task(tmp_path: Path) -> None:
    tasks = {t: _double_task(t) for t in ("t/first", "t/second")}
    # Distinct code per task: the stage's cache must not answer the second task.
    candidates = {
        t: [Candidate(t, str(i), SLOW_DOUBLE + f"# {t} {i}\n") for i in range(2)] for t in tasks
    }
    labels = {t: [True, True] for t in tasks}
    cache = StageCache(tmp_path, "outputs")
    with Executor(workers=2, timeout_s=3.0) as ex:
        first = {"t/first": candidates["t/first"]}
        select_by_agreement(tasks, first, labels, ex, cache, "prompt", 5, 3.0)
        workers = ex.worker_pids()
        assert len(workers) == 2  # the second was started by a stage thread, now gone
        second = {"t/second": candidates["t/second"]}
        sels, missing, failed, needed = select_by_agreement(
            tasks, second, labels, ex, cache, "prompt", 5, 3.0
        )
        assert (missing, failed, needed) == ([], [], 2)
        assert sels["t/second"].detail["cluster_size"] == 2
        assert ex.worker_pids() == workers  # none died, so none was replaced


def test_worker_that_died_while_idle_is_replaced_before_a_job() -> None:
    code = "def double(x):\n    return 2 * x\n"
    with Executor(workers=1, timeout_s=3.0) as ex:
        [victim] = ex.worker_pids()
        os.kill(victim, signal.SIGKILL)
        time.sleep(0.2)
        outputs = ex.call_outputs(code, "double", [[2], [5]])
        assert [o.value for o in outputs] == [4, 10]
        assert victim not in ex.worker_pids()
