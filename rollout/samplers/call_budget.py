"""One deadline for all of a run's remote calls, and the time that went to failures.

Per-request timeouts bound one call, not a run: with ``read_timeout_s`` 900 and a retry, a
server that accepts connections but never answers holds every batch for half an hour, and
a run of many batches for days. Inside ``with remote_call_budget(deadline_s) as budget:``
every :class:`~pairrl.rollout.samplers.http_transport.HttpTransport` batch (of any
sampler, started in that context) shares ``budget``: once ``deadline_s`` seconds have
passed since it opened, calls in flight are abandoned and later ones are not sent; each
comes back at once as a ``SamplerError`` of kind ``deadline`` naming the deadline, which
the benchmark counts as a failed call (and a rerun retries).

The budget also measures where the time went: requests, retries, timeouts, the wall time
of the batches, and the wall time during which some request was waiting on a failure (an
attempt that timed out or failed, or a retry's backoff). Concurrent waits overlap, so that
figure is the union of those intervals, never their sum.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CallBudget",
    "active_call_budget",
    "describe_remote",
    "merged_remote",
    "remote_call_budget",
]

_ACTIVE: ContextVar[CallBudget | None] = ContextVar("pairrl_remote_call_budget", default=None)


@dataclass
class CallBudget:
    """The deadline and the counts of one run's remote calls (see the module docstring)."""

    deadline_s: float | None
    started: float = field(default_factory=time.monotonic)
    requests: int = 0
    failed_requests: int = 0
    retries: int = 0
    timeouts: int = 0
    stopped_by_deadline: int = 0
    _batches: list[tuple[float, float]] = field(default_factory=list, repr=False)
    _waits: list[tuple[float, float]] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def remaining(self) -> float | None:
        """Seconds left before the deadline (0 once passed); None without a deadline."""
        if self.deadline_s is None:
            return None
        return max(0.0, self.deadline_s - (time.monotonic() - self.started))

    def expired(self) -> bool:
        """Whether the deadline has passed."""
        left = self.remaining()
        return left is not None and left <= 0.0

    def deadline_reason(self, url: str) -> str:
        """Why a call to ``url`` was not sent or was abandoned."""
        return (
            f"{url}: the run's deadline for remote calls passed (remote.deadline_s="
            f"{self.deadline_s:g}); not sent or abandoned, a rerun retries it"
        )

    def note_batch(self, start: float, end: float) -> None:
        """One batch of concurrent requests ran from ``start`` to ``end`` (monotonic)."""
        with self._lock:
            self._batches.append((start, end))

    def note_wait(self, start: float, end: float, timed_out: bool = False) -> None:
        """A request waited on a failure (a failed attempt or a backoff) in that interval."""
        with self._lock:
            self._waits.append((start, end))
            self.timeouts += int(timed_out)

    def note_request(self, ok: bool, retries: int, by_deadline: bool = False) -> None:
        """One request ended, after ``retries`` retries."""
        with self._lock:
            self.requests += 1
            self.failed_requests += int(not ok)
            self.retries += retries
            self.stopped_by_deadline += int(by_deadline)

    def summary(self) -> dict[str, Any]:
        """The counts and times as plain numbers (summary.json's ``remote``)."""
        with self._lock:
            return {
                "deadline_s": self.deadline_s,
                "deadline_reached": self.stopped_by_deadline > 0,
                "requests": self.requests,
                "failed_requests": self.failed_requests,
                "retries": self.retries,
                "timeouts": self.timeouts,
                "stopped_by_deadline": self.stopped_by_deadline,
                "wall_s": round(_union_length(self._batches), 3),
                "waiting_on_failures_s": round(_union_length(self._waits), 3),
            }


def _union_length(intervals: list[tuple[float, float]]) -> float:
    """Total length of the union of ``intervals``."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end <= reach:
            continue
        total += end - max(start, reach)
        reach = end
    return total


@contextmanager
def remote_call_budget(deadline_s: float | None) -> Iterator[CallBudget]:
    """Open a budget for the remote calls made inside the block (None: no deadline, only
    the measurements)."""
    if deadline_s is not None and deadline_s <= 0:
        raise ValueError(f"deadline_s must be > 0 (or None), got {deadline_s}")
    budget = CallBudget(deadline_s)
    token = _ACTIVE.set(budget)
    try:
        yield budget
    finally:
        _ACTIVE.reset(token)


def active_call_budget() -> CallBudget | None:
    """The budget of the enclosing ``remote_call_budget`` block, if any."""
    return _ACTIVE.get()


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


_SUMMED = (
    "requests",
    "failed_requests",
    "retries",
    "timeouts",
    "stopped_by_deadline",
    "wall_s",
    "waiting_on_failures_s",
)


def merged_remote(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Several shards' ``remote`` figures as one: counts and times summed (each shard's
    calls are its own; its times add as if the shards had run one after another), the
    deadline reached when any shard reached it, ``shards`` the number summed. Shards that
    made no remote call (empty figures) add nothing; empty when none made one."""
    made = [part for part in parts if part]
    if not made:
        return {}
    merged: dict[str, Any] = {key: sum(part[key] for part in made) for key in _SUMMED}
    for key in ("wall_s", "waiting_on_failures_s"):
        merged[key] = round(merged[key], 3)
    merged["deadline_s"] = made[0]["deadline_s"]
    merged["deadline_reached"] = any(part["deadline_reached"] for part in made)
    merged["shards"] = len(made)
    return merged


def describe_remote(remote: dict[str, Any] | None) -> str | None:
    """One line for the report from ``CallBudget.summary()``; None when no remote call
    was made."""
    if not remote or not remote.get("requests"):
        return None
    deadline = remote["deadline_s"]
    if deadline is None:
        reached = "no deadline"
    elif remote["deadline_reached"]:
        reached = (
            f"deadline {_duration(deadline)} reached: {remote['stopped_by_deadline']} calls "
            "stopped (failed; a rerun retries them)"
        )
    else:
        reached = f"deadline {_duration(deadline)} not reached"
    return (
        f"Remote calls: {_count(remote['requests'], 'request')} "
        f"({remote['failed_requests']:,} failed), {_count(remote['retries'], 'retry')}, "
        f"{_count(remote['timeouts'], 'timeout')}; "
        f"{_duration(remote['waiting_on_failures_s'])} of {_duration(remote['wall_s'])} "
        f"spent waiting on failed attempts and retry backoff; {reached}"
        + (f"; summed over {remote['shards']} shards." if remote.get("shards") else ".")
    )


def _count(n: int, noun: str) -> str:
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{n:,} {noun if n == 1 else plural}"
