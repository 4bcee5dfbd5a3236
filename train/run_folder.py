"""The run folder: checked before any work starts, and locked while a job writes it.

``pairrl train`` (``--dry-run`` included) refuses a run folder it could not write before
it loads a library or a model: a path that is a file, or one whose folder cannot be
created or written (:func:`check_run_folder`). While a job trains, its main process holds
an exclusive ``flock`` on ``RUN/.lock`` (:func:`lock_run_folder`): a second job started
into the same folder is refused, naming the first one's process, instead of interleaving
its steps with the first's. The kernel drops the lock when the process ends, however it
ends, so a job killed by SIGKILL leaves no stale lock on a local disk (on NFS a dead
node's lock lasts until its lease ends, about 90 s on NFSv4). A file system that has no
flock gives a warning and an unlocked run.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import sys
import tempfile
from pathlib import Path

from pairrl.errors import InputError

__all__ = ["LOCK_FILE", "RunLock", "check_run_folder", "lock_run_folder"]

LOCK_FILE = ".lock"
_NO_LOCKS = {errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOLCK}


def check_run_folder(run_dir: Path) -> None:
    """Raise :class:`InputError` unless files can be written in ``run_dir``: it is a folder
    or does not exist yet, and a file can be created there (tried, then removed) or, for a
    folder not there yet, in the nearest folder above it that exists. Nothing is created."""
    if run_dir.exists() and not run_dir.is_dir():
        raise InputError(f"--out {run_dir} is a file, not a folder: choose another --out")
    probe_in = run_dir
    while not probe_in.exists():
        if probe_in.parent == probe_in:
            break
        probe_in = probe_in.parent
    if not probe_in.is_dir():
        raise InputError(
            f"--out {run_dir}: {probe_in} is a file, so the run folder cannot be created "
            "there: choose another --out"
        )
    try:
        fd, probe = tempfile.mkstemp(prefix=".pairrl-write-check-", dir=probe_in)
    except OSError as err:
        raise InputError(
            f"--out {run_dir}: cannot write in {probe_in} ({err.strerror or err}): "
            "choose another --out"
        ) from None
    os.close(fd)
    os.unlink(probe)


class RunLock:
    """An exclusive lock on one run folder, held until :meth:`release` or the process ends."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path

    def release(self) -> None:
        """Unlock, then close the file."""
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                fcntl.flock(self.fd, fcntl.LOCK_UN)  # a forked child's copy unlocks too
                os.close(self.fd)
            self.fd = -1


def lock_run_folder(run_dir: Path) -> RunLock:
    """Lock ``run_dir`` for this process; raise :class:`InputError` naming the holder when
    another process holds it. The lock file records the holder (host and PID)."""
    path = run_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        if err.errno in _NO_LOCKS:  # a file system without flock (some Lustre, FUSE, CIFS)
            os.close(fd)
            print(
                f"[pairrl] warning: {run_dir} cannot be locked ({err.strerror}): nothing "
                "stops a second job from writing into it",
                file=sys.stderr,
            )
            return RunLock(-1, path)
        if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            os.close(fd)
            raise
        holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise InputError(
            f"--out {run_dir} is in use by another pairrl job ({holder}): wait for it to "
            "end, or choose another --out"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
    return RunLock(fd, path)
