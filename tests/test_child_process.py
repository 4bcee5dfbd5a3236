"""A pool worker started with ``die_with_parent`` ends when its parent is killed; one
started without it goes on (the orphan this guards against); one started with
``start_worker`` and terminated leaves no semaphore for Python's tracker to report."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PARENT = """
import multiprocessing, os, sys, time
from pairrl.child_process import die_with_parent

def work(path):
    with open(path, "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(120)

if __name__ == "__main__":
    guarded = sys.argv[2] == "guarded"
    spawn = multiprocessing.get_context("spawn")
    init, args = (die_with_parent, (os.getpid(),)) if guarded else (None, ())
    pool = spawn.Pool(1, initializer=init, initargs=args)
    pool.apply_async(work, (sys.argv[1],))
    time.sleep(120)
"""


def _alive(pid: int) -> bool:
    """Running or sleeping, not gone and not a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("guarded", [True, False], ids=["die_with_parent", "unguarded"])
def test_a_worker_ends_with_its_killed_parent(tmp_path: Path, guarded: bool) -> None:
    script, pid_file = tmp_path / "parent.py", tmp_path / "worker.pid"
    script.write_text(PARENT)
    mode = "guarded" if guarded else "unguarded"
    parent = subprocess.Popen([sys.executable, str(script), str(pid_file), mode])
    deadline = time.monotonic() + 120
    while not (pid_file.is_file() and pid_file.read_text()):
        assert time.monotonic() < deadline and parent.poll() is None, "the worker never started"
        time.sleep(0.1)
    worker = int(pid_file.read_text())
    parent.send_signal(signal.SIGTERM)  # the job's main process only, as `kill PID` does
    parent.wait(timeout=30)
    try:
        deadline = time.monotonic() + (10 if guarded else 2)
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _alive(worker) is not guarded
    finally:
        if _alive(worker):
            os.kill(worker, signal.SIGKILL)


TERMINATED = """
import multiprocessing, os, sys, time
from pairrl.child_process import die_with_parent, start_worker

def work(path):
    lock = multiprocessing.get_context("spawn").Lock()  # a semaphore the tracker knows of
    with open(path, "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(120)
    return lock

if __name__ == "__main__":
    init = start_worker if sys.argv[2] == "start_worker" else die_with_parent
    spawn = multiprocessing.get_context("spawn")
    with spawn.Pool(1, initializer=init, initargs=(os.getpid(),)) as pool:
        pool.apply_async(work, (sys.argv[1],))
        while not os.path.exists(sys.argv[1]):
            time.sleep(0.05)
        time.sleep(0.5)
    # the with block terminated the worker (SIGTERM), as a stop's cleanup does
"""


@pytest.mark.parametrize("initializer", ["start_worker", "die_with_parent"])
def test_a_terminated_worker_leaves_no_leaked_semaphore(tmp_path: Path, initializer: str) -> None:
    """``start_worker``: SIGTERM ends the worker as sys.exit does, so its semaphores are
    released; with ``die_with_parent`` alone (the control) Python's tracker reports them."""
    script, pid_file = tmp_path / "parent.py", tmp_path / "worker.pid"
    script.write_text(TERMINATED)
    run = subprocess.run([sys.executable, str(script), str(pid_file), initializer],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    leaked = "leaked semaphore" in run.stderr
    assert leaked is (initializer == "die_with_parent"), run.stderr[-2000:]
