"""Jobs and verdicts exchanged with the executor."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

from pairrl.rewards.tasks import Task

Status = Literal[
    "pass",
    "wrong",
    "timeout",
    "runtime_error",
    "syntax_error",
    "no_code",
    "no_answer",
    "memory_limit",
    "output_limit",
    "sandbox_error",
]
STATUSES: tuple[str, ...] = get_args(Status)


@dataclass(frozen=True)
class ExecJob:
    """One candidate for one task. ``code`` is a complete Python source, or None; ``text``
    is the raw completion, which an answer task (math) reads its final answer from."""

    task: Task
    code: str | None
    candidate_id: str
    text: str | None = None


@dataclass(frozen=True)
class ExecResult:
    """The trusted parent's verdict on one candidate."""

    task_id: str
    candidate_id: str
    passed: bool
    status: Status
    n_tests: int
    n_passed: int
    first_failure: str | None
    wall_s: float
    cached: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CallOutput:
    """One entry-point call's outcome: a plain-data ``value``, or ``failure`` with a reason."""

    value: Any = None
    failure: str | None = None
    # the call's time on the candidate's own clock (wall less waiting for a CPU), read by
    # the sandbox worker; the parent's wall time where the worker gave none
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.failure is None
