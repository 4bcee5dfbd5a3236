"""One candidate's life in a worker: load, calls marshalled as plain data, end.

The trusted driver calls :meth:`CandidateSession.call` from test code through proxies.
Whatever the candidate does (exit, hang, crash, return a strange object) ends as a
sticky :class:`CandidateAborted` (a ``BaseException``, so test code's ``except
Exception`` cannot swallow it) or as an ordinary exception the tests may expect.
"""

from __future__ import annotations

import builtins
import math
import secrets
import signal
import time
from typing import Any

from pairrl.rewards.plain_data import decode, encode
from pairrl.rewards.sandbox import ProtocolViolation, SandboxWorker

# A call with ``call_limit_s`` is stopped by the worker after that much of the candidate's
# own time (wall less waiting for a CPU); the parent's wall deadline is then only a backstop
# (a wedged worker, a machine loaded far past its cores).
BACKSTOP_FACTOR = 5.0
BACKSTOP_EXTRA_S = 2.0


class CandidateAborted(BaseException):
    """The candidate's run is over (timeout, death, limit, non-plain value); never a pass."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class CandidateRaised(Exception):
    """A candidate exception with no builtin counterpart to re-raise in the driver."""


class InfrastructureError(RuntimeError):
    """The sandbox, not the candidate, failed; retried once, then ``sandbox_error``."""


# Exceptions the candidate raised that end the run whatever the tests do with them.
_STICKY_EXCEPTIONS = {
    "SystemExit": ("runtime_error", "candidate raised SystemExit during a call"),
    "KeyboardInterrupt": ("runtime_error", "candidate raised KeyboardInterrupt"),
    "GeneratorExit": ("runtime_error", "candidate raised GeneratorExit"),
    "MemoryError": ("memory_limit", "candidate ran out of memory (address-space limit)"),
}


def describe_death(report: dict[str, Any]) -> tuple[str, str]:
    """Map how the candidate's process ended to a status and a reason."""
    if report.get("how") == "signal":
        sig = int(report.get("sig", 0))
        if sig in (signal.SIGXCPU, signal.SIGKILL):
            return "timeout", f"killed by signal {sig} (CPU limit)"
        if sig == signal.SIGXFSZ:
            return "output_limit", "exceeded the file size limit"
        return "runtime_error", f"killed by signal {sig}"
    if report.get("how") == "exit":
        return "runtime_error", f"candidate process exited with code {report.get('code')}"
    if report.get("how") == "closed_channel":
        return "runtime_error", "candidate closed its result channel"
    return "runtime_error", "candidate process vanished"


class CandidateSession:
    """Drives one candidate in one worker against a wall deadline, or, for each call while
    ``call_limit_s`` is set, against that limit on the candidate's own clock (measured and
    enforced by the worker; ``last_call_s`` is the last call's reading)."""

    def __init__(self, worker: SandboxWorker, code: str, timeout_s: float) -> None:
        self.worker = worker
        self.code = code
        self.timeout_s = timeout_s
        self.cpu_s = math.ceil(timeout_s) + 1
        self.deadline = time.monotonic() + timeout_s
        self.call_limit_s: float | None = None
        self.last_call_s: float | None = None
        self.sticky: CandidateAborted | None = None
        self.raised_ids: set[int] = set()
        self.seq = 0
        self.active = False
        self.loading = False
        self.end_report: dict[str, Any] = {}

    def abort(self, status: str, reason: str) -> CandidateAborted:
        if self.sticky is None:
            self.sticky = CandidateAborted(status, reason)
        return self.sticky

    def _receive(self) -> dict[str, Any] | None:
        try:
            return self.worker.receive(self.deadline)
        except ProtocolViolation as exc:
            raise InfrastructureError(str(exc)) from exc

    def load(self, wait: bool = True) -> CandidateAborted | None:
        """Start the candidate's child and execute its module code; a failure is sticky.

        With ``wait=False`` the load's answer is read lazily, by the first call or by
        :meth:`settle`, which saves a round trip per candidate.
        """
        try:
            self._send_load()
        except ProtocolViolation as exc:
            raise InfrastructureError(str(exc)) from exc
        self.active = True
        self.loading = True
        return self.settle() if wait else None

    def settle(self) -> CandidateAborted | None:
        """Read the load's answer if still pending; returns the sticky failure, if any."""
        if not self.loading:
            return self.sticky
        self.loading = False
        reply = self._receive()
        if reply is None:
            return self.abort("timeout", f"module code ran past {self.timeout_s:g} s")
        kind = reply.get("k")
        if kind == "loaded":
            return None
        if kind == "load_error":
            etype, msg = str(reply.get("etype")), str(reply.get("msg"))
            if etype in ("SyntaxError", "IndentationError", "TabError"):
                return self.abort("syntax_error", f"{etype}: {msg}")
            if etype == "MemoryError":
                return self.abort("memory_limit", "MemoryError while loading")
            return self.abort("runtime_error", f"{etype} while loading: {msg}")
        if kind == "died":
            return self.abort(*describe_death(reply))
        if kind == "too_big":
            return self.abort("output_limit", "oversize message from the candidate")
        return self.abort("runtime_error", f"unexpected message while loading: {kind}")

    def _send_load(self) -> None:
        self._new_nonce()
        self.worker.send(
            {
                "op": "load",
                "nonce": self.worker.nonce,
                "code": self.code,
                "limits": self.worker.limits_frame(self.cpu_s),
            }
        )
        self._check_previous_end()

    def _new_nonce(self) -> None:
        self.worker.prev_nonce = self.worker.nonce
        self.worker.nonce = secrets.token_hex(16)

    def _check_previous_end(self) -> None:
        """A deferred end of the previous candidate must report a clean worker."""
        report = self.worker.collect_end()
        if report is not None and (report.get("dirty") or report.get("survivors")):
            raise ProtocolViolation(
                f"previous candidate left files {report.get('dirty')} or "
                f"{report.get('survivors')} processes"
            )

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call ``name`` in the candidate; return its plain-data value or raise."""
        if self.sticky is not None:
            raise self.sticky
        try:
            encoded_args, encoded_kwargs = encode(list(args)), encode(dict(kwargs))
        except (TypeError, ValueError) as exc:
            raise InfrastructureError(f"test passes a non-plain argument: {exc}") from exc
        self.seq += 1
        frame = {
            "op": "call",
            "seq": self.seq,
            "name": name,
            "args": encoded_args,
            "kwargs": encoded_kwargs,
            "max_reply_bytes": self.worker.limits.max_reply_bytes,
        }
        limit = self.call_limit_s
        if limit is not None:
            frame["limit_s"] = limit
            self.deadline = time.monotonic() + BACKSTOP_FACTOR * limit + BACKSTOP_EXTRA_S
        self.last_call_s = None
        try:
            self.worker.send(frame)
        except ProtocolViolation as exc:
            raise InfrastructureError(str(exc)) from exc
        if self.loading and self.settle() is not None:
            raise self.sticky  # type: ignore[misc]
        reply = self._receive()
        if reply is None:
            raise self.abort("timeout", f"ran past {limit or self.timeout_s:g} s (wall)")
        kind = reply.get("k")
        spent = reply.get("t")
        self.last_call_s = float(spent) if isinstance(spent, int | float) else None
        if kind == "timeout":
            raise self.abort("timeout", f"ran past {limit or self.timeout_s:g} s of its own time")
        if kind in ("ret", "exc", "bad_value") and reply.get("seq") != self.seq:
            raise self.abort("runtime_error", "reply out of sequence (forged channel)")
        if kind == "ret":
            try:
                return decode(reply.get("v"))
            except (ValueError, TypeError, KeyError, RecursionError) as exc:
                raise self.abort("wrong", f"undecodable return value: {exc}") from None
        if kind == "exc":
            raise self._candidate_exception(str(reply.get("etype")), str(reply.get("msg")))
        if kind == "bad_value":
            raise self.abort(
                "wrong", f"returned a value that is not plain data: {reply.get('msg')}"
            )
        if kind == "died":
            raise self.abort(*describe_death(reply))
        if kind == "too_big":
            raise self.abort("output_limit", f"return value over {reply.get('size')} bytes")
        raise self.abort("runtime_error", f"unexpected reply {kind!r}")

    def _candidate_exception(self, etype: str, msg: str) -> BaseException:
        if etype in _STICKY_EXCEPTIONS:
            status, reason = _STICKY_EXCEPTIONS[etype]
            return self.abort(status, f"{reason}: {msg}"[:300])
        cls = getattr(builtins, etype, None)
        exc: BaseException
        try:
            if isinstance(cls, type) and issubclass(cls, Exception):
                exc = cls(msg)
            else:
                exc = CandidateRaised(f"{etype}: {msg}")
        except Exception:
            exc = CandidateRaised(f"{etype}: {msg}")
        self.raised_ids.add(id(exc))
        return exc

    def end(self, wait: bool = True) -> dict[str, Any]:
        """Kill the candidate's processes; InfrastructureError when the worker does not confirm.

        ``wait=False`` defers the worker's report to the next candidate on this worker.
        """
        if not self.active:
            return {}
        self.active = False
        try:
            self.end_report = self.worker.end(wait=wait)
        except ProtocolViolation as exc:
            raise InfrastructureError(str(exc)) from exc
        return self.end_report

    def run_program(self, stdin: str) -> dict[str, Any]:
        """stdin/stdout task: run the whole program once; returns the worker's report."""
        self._new_nonce()
        try:
            self.worker.send(
                {
                    "op": "stdio",
                    "nonce": self.worker.nonce,
                    "code": self.code,
                    "stdin": stdin,
                    "limits": self.worker.limits_frame(self.cpu_s),
                }
            )
            self._check_previous_end()
        except ProtocolViolation as exc:
            raise InfrastructureError(str(exc)) from exc
        self.active = True
        reply = self._receive()
        if reply is None:
            return {"k": "timeout"}
        return reply
