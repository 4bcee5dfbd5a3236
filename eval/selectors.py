"""Selections and the selectors that need no judge (random, first, oracle).

A `Selection` is one selector's decision on one task: the chosen candidate index (or
None), the expected correctness of that decision (`score`), and, when it could not
decide, a `failure` with the reason. Failures score 0 and are reported; they are never
turned into a neutral value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "NO_JUDGE_SELECTORS",
    "Cost",
    "Selection",
    "select_first",
    "select_oracle",
    "select_random",
]

NO_JUDGE_SELECTORS: tuple[str, ...] = ("random", "first", "agreement", "oracle")


@dataclass
class Cost:
    """What a selector spent on one task (``unmeasured_calls``: calls whose tokens were not
    counted, e.g. over HTTP without the server's usage; their tokens are not in the sums)."""

    judge_calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    unmeasured_calls: int = 0

    def add(self, other: Cost) -> None:
        """Accumulate `other` into self."""
        self.judge_calls += other.judge_calls
        self.failed_calls += other.failed_calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.wall_s += other.wall_s
        self.unmeasured_calls += other.unmeasured_calls


@dataclass
class Selection:
    """One selector's decision on one task."""

    selector: str
    task_id: str
    chosen: int | None
    score: float
    failure: str | None = None
    cost: Cost = field(default_factory=Cost)
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON row for records.jsonl."""
        row = asdict(self)
        row["kind"] = "selection"
        return row


def select_random(task_id: str, labels: Sequence[bool]) -> Selection:
    """Uniform random choice, scored by its exact expectation: the share of correct
    candidates (this *is* pass@1 for the task)."""
    if not labels:
        return Selection("random", task_id, None, 0.0, failure="no candidates")
    return Selection("random", task_id, None, sum(labels) / len(labels))


def select_first(task_id: str, labels: Sequence[bool]) -> Selection:
    """The first sample, as a user with k = 1 would get."""
    if not labels:
        return Selection("first", task_id, None, 0.0, failure="no candidates")
    return Selection("first", task_id, 0, float(labels[0]))


def select_oracle(task_id: str, labels: Sequence[bool]) -> Selection:
    """The earliest correct candidate when there is one (the pass@k ceiling)."""
    if not labels:
        return Selection("oracle", task_id, None, 0.0, failure="no candidates")
    for index, label in enumerate(labels):
        if label:
            return Selection("oracle", task_id, index, 1.0)
    return Selection("oracle", task_id, 0, 0.0)
