"""Worker processes that end with the process that started them.

A job stopped by a signal to its main process only (``kill PID``, ``timeout``, a
scheduler that signals one process) ends that process; a worker it started through
``multiprocessing`` (an engine that samples in a child so that its memory is freed
afterwards, the second lane of a side-by-side run) would be re-parented and go on
computing for a job that has ended. :func:`die_with_parent`, the first thing such a
worker runs (a pool's ``initializer``), asks Linux to send it SIGKILL when its parent
ends (``PR_SET_PDEATHSIG``); elsewhere it does nothing. :func:`start_worker` adds a clean
end on SIGTERM, for a pool its parent terminates when a stop cuts its work short.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

__all__ = ["die_with_parent", "start_worker"]

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent_pid: int) -> None:
    """SIGKILL this process when its parent ends; end now if ``parent_pid`` has already
    ended (it may end between the fork and this call)."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        return  # not allowed here: the worker lives as before
    if os.getppid() != parent_pid:
        os._exit(1)


_CLEANUP_S = 10  # how long a terminated worker's exit handlers may take


def _exit_143(signum: int, frame: object) -> None:
    # once: a second SIGTERM (the job's, after the pool's own) must not cut the cleanup
    # short, and a cleanup that hangs ends by SIGALRM's default action
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(_CLEANUP_S)
    raise SystemExit(128 + signum)


def start_worker(parent_pid: int) -> None:
    """A pool worker's initializer: it ends with ``parent_pid`` (:func:`die_with_parent`),
    and SIGTERM (``Pool.terminate``, a stop to every process of the job) ends it as
    ``sys.exit`` does, so that its exit handlers run: the semaphores it registered (its
    engine's, its queues') are released, not reported as leaked by the parent's tracker."""
    die_with_parent(parent_pid)
    signal.signal(signal.SIGTERM, _exit_143)
