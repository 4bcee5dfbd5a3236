"""Long-lived worker that runs inside the sandbox; sent as source to ``python -I -S -c``.

Standalone on purpose (imports only the standard library): it runs under the sandbox's
interpreter and sees none of the project. Its source is sent after the codec's
(``sandbox_codec``, the plain-data encoding and framing it shares with the parent), and
the one import line marked below is dropped then; together they stay small enough to audit.

Protocol on fds 0 (from the trusted parent) and 1 (to it): frames of a 4-byte big-endian
length and a JSON object. The parent sends ``load``/``call``/``end``/``stdio`` ops; every
frame the worker writes back carries the current job's nonce. The candidate runs in a
forked child that loses the parent channel before any candidate code runs (it talks to
the worker over a fresh pipe pair), so it can return values but never write a frame the
parent would take for the worker's. The parent decides pass or fail; nothing here judges,
except time: a call may carry ``limit_s``, which the worker enforces on the candidate's own
clock (wall time less the time it waited for a CPU), answering "timeout"; every reply to
a call carries that clock's reading as "t" (see docs/time_limits.md).
"""

import contextlib
import json
import os
import select
import signal
import struct
import sys
import time

# Dropped when the source is sent to the sandbox, where the codec's and the child's
# sources come first.
from pairrl.rewards.sandbox_child import (  # sandbox: inlined
    child_main,
)
from pairrl.rewards.sandbox_codec import (  # sandbox: inlined
    read_frame,
    write_frame,
)

CONTROL_IN = 0
CONTROL_OUT = 1


# ---------------------------------------------------------------- the worker loop
def wipe_folder(folder):
    """Delete everything the candidate left in ``folder``; return what could not be deleted."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    for name in names:
        top = folder + "/" + name
        try:
            if os.path.isdir(top) and not os.path.islink(top):
                # Open up every folder first (the candidate may have chmod-ed them shut),
                # then delete bottom-up.
                os.chmod(top, 0o700)
                for root, dirs, _ in os.walk(top):
                    for entry in dirs:
                        if not os.path.islink(root + "/" + entry):
                            os.chmod(root + "/" + entry, 0o700)
                for root, dirs, files in os.walk(top, topdown=False):
                    for entry in files + dirs:
                        path = root + "/" + entry
                        if os.path.isdir(path) and not os.path.islink(path):
                            os.rmdir(path)
                        else:
                            os.unlink(path)
                os.rmdir(top)
            else:
                os.unlink(top)
        except OSError:
            pass
    try:
        return [folder + "/" + name for name in os.listdir(folder)][:5]
    except OSError:
        return []


def count_own_processes():
    """Processes of our uid that still exist (ourselves included)."""
    uid, count = os.getuid(), 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError):
                count += os.stat("/proc/" + name).st_uid == uid
    return count


class Worker:
    def __init__(self, kill_all):
        self.kill_all = kill_all
        self.child = None
        self.nonce = None
        self.to_child = None
        self.from_child = None
        self.stdout_r = None
        self.stat_fd = None  # the child's /proc/<pid>/schedstat, read by child_clock

    def send(self, obj):
        obj["nonce"] = self.nonce
        write_frame(CONTROL_OUT, obj)

    def start(self, job):
        child_r, worker_w = os.pipe()  # worker -> child requests
        worker_r, child_w = os.pipe()  # child -> worker replies
        if job["op"] == "stdio":
            # stdin lives in an anonymous memory file: the child reads it at its own pace
            # and a program that never reads stdin cannot block the worker on a full pipe.
            in_r = os.memfd_create("stdin")
            os.write(in_r, job["stdin"].encode())
            os.lseek(in_r, 0, os.SEEK_SET)
            out_r, out_w = os.pipe()
            job["stdin_fd"], job["stdout_fd"] = in_r, out_w
        pid = os.fork()
        if pid == 0:
            try:
                os.close(CONTROL_IN)
                os.close(CONTROL_OUT)
                child_main(job, child_w, child_r)
            finally:
                os._exit(70)
        os.close(child_r)
        os.close(child_w)
        self.child, self.to_child, self.from_child = pid, worker_w, worker_r
        with contextlib.suppress(OSError):
            self.stat_fd = os.open(f"/proc/{pid}/schedstat", os.O_RDONLY)
        if job["op"] == "stdio":
            os.close(in_r)
            os.close(out_w)
            self.stdout_r = out_r

    def read_child(self, n):
        """Read exactly n bytes from the child; b"" at EOF, None when the parent speaks first.

        A child that announces a frame and never sends it cannot wedge the worker: the
        parent's end (at its deadline) interrupts the wait.
        """
        chunks = []
        while n:
            ready, _, _ = select.select([self.from_child, CONTROL_IN], [], [])
            if self.from_child not in ready:
                return None
            chunk = os.read(self.from_child, min(n, 1 << 20))
            if not chunk:
                return b""
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def relay_reply(self, max_bytes, extra):
        """Forward one framed reply from the child (with ``extra``'s keys, ours, not the
        child's), bounded in size; report a death otherwise.

        Returns False when the parent spoke first (its next frame, an end, is unread).
        """
        head = self.read_child(4)
        if head is None:
            return False
        if len(head) < 4:
            self.send({"k": "died", **self.reap_child()})
            return True
        size = struct.unpack(">I", head)[0]
        if size > max_bytes:
            self.send({"k": "too_big", "size": size})
            return True
        body = self.read_child(size)
        if body is None:
            return False
        if len(body) < size:
            self.send({"k": "died", **self.reap_child()})
            return True
        try:
            reply = json.loads(body)
        except ValueError:
            self.send({"k": "garbled"})
            return True
        if not isinstance(reply, dict):
            self.send({"k": "garbled"})
            return True
        reply.pop("nonce", None)
        reply.pop("t", None)
        reply.update(extra or {})
        self.send(reply)
        return True

    def read_stdout(self, max_bytes):
        """Read the stdio child's stdout up to max_bytes; None when the parent speaks first.

        Returns (data, truncated) or None: a message from the parent (an end at its
        deadline) interrupts the read, so a process holding stdout open cannot wedge us.
        """
        chunks, total = [], 0
        while True:
            ready, _, _ = select.select([self.stdout_r, CONTROL_IN], [], [])
            if self.stdout_r not in ready:
                return None
            chunk = os.read(self.stdout_r, 1 << 16)
            if not chunk:
                return b"".join(chunks), False
            total += len(chunk)
            if total > max_bytes:
                return b"".join(chunks)[:max_bytes], True
            chunks.append(chunk)

    def reap_child(self):
        """Describe how the candidate's own process ended (killing it if it lingers).

        Its channel closed, but a child that closed the pipe on purpose may still run:
        after a short grace it is killed rather than waited for.
        """
        if self.child is None:
            return {"how": "none"}
        status = None
        for _ in range(50):
            try:
                pid, status = os.waitpid(self.child, os.WNOHANG)
            except ChildProcessError:
                self.child = None
                return {"how": "unknown"}
            if pid:
                break
            time.sleep(0.004)
        else:
            with contextlib.suppress(OSError):
                os.kill(self.child, signal.SIGKILL)
            _, status = os.waitpid(self.child, 0)
            self.child = None
            return {"how": "closed_channel"}
        self.child = None
        if os.WIFSIGNALED(status):
            return {"how": "signal", "sig": os.WTERMSIG(status)}
        return {"how": "exit", "code": os.WEXITSTATUS(status)}

    def kill_everything(self):
        """Kill the candidate and all it started, reap every child, and check /tmp is clean."""
        for fd in (self.to_child, self.from_child, self.stdout_r, self.stat_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.to_child = self.from_child = self.stdout_r = self.stat_fd = None
        ended = {"how": "none"}
        if self.child is not None:
            with contextlib.suppress(OSError):
                os.killpg(self.child, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.kill(self.child, signal.SIGKILL)
            ended = self.reap_child()
        survivors = 0
        for attempt in range(200):
            if attempt:
                time.sleep(0.002)  # SIGKILLed processes take a moment to become reapable
            if self.kill_all:
                # As init of the PID namespace (or a dedicated uid): everyone but us.
                with contextlib.suppress(OSError):
                    os.kill(-1, signal.SIGKILL)
            while True:
                try:
                    pid, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    pid = -1
                if pid <= 0:
                    break
            survivors = count_own_processes() - 1
            if not self.kill_all or survivors <= 0:
                break
        dirty = []
        for folder in ("/tmp", "/dev/shm"):
            dirty += wipe_folder(folder)
        survivors = max(survivors, 0) if self.kill_all else -1
        return {"ended": ended, "survivors": survivors, "dirty": dirty[:5]}

    def child_clock(self):
        """The candidate's own clock: wall time less the time its main thread waited for a
        CPU (``/proc/<pid>/schedstat``), so that other processes' load does not count."""
        try:
            waited = int(os.pread(self.stat_fd, 128, 0).split()[1]) / 1e9
        except (OSError, ValueError, IndexError, TypeError):
            waited = 0.0
        return time.monotonic() - waited

    def timed_call(self, job, start, pending):
        """Wait for the reply to a call for at most ``limit_s`` of the child's own time
        (``child_clock`` since ``start``): past it the child is killed and the answer is a
        timeout. The reply carries that time as "t", taken when its first bytes arrive."""
        limit, spent = job.get("limit_s"), 0.0
        while True:
            wait = None if limit is None else limit - spent
            if select.select([self.from_child, CONTROL_IN], [], [], wait)[0]:
                break
            spent = self.child_clock() - start
            if spent >= limit:
                with contextlib.suppress(OSError):
                    os.kill(self.child, signal.SIGKILL)
                self.send({"k": "timeout", "t": spent})
                return
        self.await_child(job["max_reply_bytes"], pending, {"t": self.child_clock() - start})

    def await_child(self, max_bytes, pending, extra=None):
        """Relay the child's next frame; meanwhile an end kills it, other ops wait in line.

        The parent may send the first call right behind a load without waiting for the
        "loaded" frame: such ops are kept in ``pending`` and served in order afterwards.
        """
        while not self.relay_reply(max_bytes, extra):
            nxt = read_frame(CONTROL_IN)
            if nxt is None or nxt["op"] == "end":
                self.send({"k": "ended", **self.kill_everything()})
                if nxt is None:
                    raise SystemExit(0)
                return
            pending.append(nxt)

    def serve(self):
        pending = []
        while True:
            job = pending.pop(0) if pending else read_frame(CONTROL_IN)
            if job is None:
                self.kill_everything()
                return
            op = job["op"]
            if op in ("load", "stdio"):
                self.nonce = job["nonce"]
                self.start(job)
                if op == "stdio":
                    self.finish_stdio(job)
                else:
                    self.await_child(job["limits"]["max_reply_bytes"], pending)
            elif op == "call":
                if self.to_child is None:
                    self.send({"k": "no_child"})
                    continue
                start = self.child_clock()
                try:
                    write_frame(
                        self.to_child,
                        {
                            "seq": job["seq"],
                            "name": job["name"],
                            "args": job["args"],
                            "kwargs": job["kwargs"],
                        },
                    )
                except OSError:
                    self.send({"k": "died", **self.reap_child()})
                    continue
                self.timed_call(job, start, pending)
            elif op == "end":
                self.send({"k": "ended", **self.kill_everything()})
            elif op == "ping":
                self.nonce = job["nonce"]
                self.send({"k": "pong", "pid": os.getpid(), "uid": os.getuid()})

    def finish_stdio(self, job):
        """Collect capped stdout, then the child's own report (or its death)."""
        collected = self.read_stdout(job["limits"]["max_stdout_bytes"])
        if collected is None:
            return  # the parent's end is next on the control channel
        out, truncated = collected
        if truncated:
            self.send({"k": "output_limit"})
            return
        ready, _, _ = select.select([self.from_child, CONTROL_IN], [], [])
        if self.from_child not in ready:
            return
        report = {"k": "died"}
        try:
            head = self.read_child(4)
            if head is None:
                return  # the parent's end is next
            size = struct.unpack(">I", head)[0] if len(head) == 4 else None
            body = None if size is None or size > 4096 else self.read_child(size)
            if body is None and size is not None and size <= 4096:
                return
            report = json.loads(body) if body else {"k": "died"}
        except (OSError, ValueError, struct.error):
            pass
        if not isinstance(report, dict) or report.get("k") not in ("exited", "load_error"):
            report = {"k": "died"}
        if report["k"] == "died":
            report.update(self.reap_child())
        report["stdout"] = out.decode("utf-8", "replace")
        self.send(report)


if __name__ == "__main__":
    try:
        import ctypes

        # PR_SET_DUMPABLE = 4: children (same uid) cannot ptrace the worker or read its
        # /proc/<pid>/mem and fds, so a candidate cannot tamper with the next one's run.
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
    except Exception:
        pass
    if os.path.isdir("/opt/site"):  # -S skipped site: the host's packages, read-only
        sys.path.append("/opt/site")
    Worker(kill_all=sys.argv[1:2] == ["kill_all"]).serve()
