"""A pool worker started with ``die_with_parent`` ends when its parent is killed; one
started without it goes on (the orphan this guards against)."""

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
