"""What a benchmark run produced (or a replay re-derived): ``EvalRun``, and the entries it
needs that are absent or failed (``Issue``), which the integrity gate counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pairrl.eval.candidates import Candidate
from pairrl.eval.config import EvalConfig
from pairrl.eval.selectors import Selection

__all__ = ["EvalRun", "Issue", "Mode", "StageOutcome"]

Mode = Literal["compute", "replay"]


@dataclass(frozen=True)
class Issue:
    """An entry the run needs that is absent or failed, with the reason."""

    stage: str
    task_id: str
    item: str
    kind: Literal["missing", "failed"]
    reason: str


@dataclass
class StageOutcome:
    """What a stage beside the run's own (RSA, thinking) adds to it: records for
    records.jsonl, issues and the entries it expects per gate stage."""

    records: list[dict[str, Any]] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    expected: dict[str, int] = field(default_factory=dict)


@dataclass
class EvalRun:
    """Everything a run produced (or a replay re-derived)."""

    config: EvalConfig
    mode: Mode
    task_ids: list[str]
    candidates: dict[str, list[Candidate]]
    labels: dict[str, list[dict[str, Any] | None]]
    selections: dict[str, dict[str, Selection]]
    judge_records: list[dict[str, Any]] = field(default_factory=list)
    judge_quality: dict[str, Any] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)
    expected: dict[str, int] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    wall_s: dict[str, float] = field(default_factory=dict)
    # What the run's remote calls cost (``CallBudget.summary``) and what its preflight
    # found; empty in a replay, which makes no call.
    remote: dict[str, Any] = field(default_factory=dict)
    preflight: dict[str, Any] = field(default_factory=dict)

    def bool_labels(self) -> dict[str, list[bool]]:
        """Labels as booleans (a missing label counts as not passed; the gate flags it)."""
        return {t: [bool(x and x["passed"]) for x in v] for t, v in self.labels.items()}
