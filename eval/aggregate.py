"""From per-task labels and selections to the benchmark table (with bootstrap CIs).

Rows per selector: selected accuracy, the share of the pass@1 -> oracle gap it closes,
accuracy on swing tasks (mixed labels: the only tasks where selection matters), failures
and cost (judge calls, tokens in all and per task); over all rows, the cost frontier and
selective verification's savings (``pairrl.eval.cost``). Intervals are percentile bootstraps over tasks, resampled jointly so that a
selector's accuracy and the pass@1/oracle it is compared against share the same tasks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pairrl.eval.cost import cost_summary
from pairrl.eval.metrics import bootstrap_ci, gap_closed
from pairrl.eval.selectors import Cost, Selection

__all__ = ["summarise"]


def summarise(
    labels: Mapping[str, Sequence[bool]],
    selections: Mapping[str, Mapping[str, Selection]],
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """The benchmark's numbers.

    labels: task_id -> candidate labels (in candidate order), for tasks with >= 1 candidate.
    selections: selector -> task_id -> Selection; every selector must cover every task.
    """
    task_ids = sorted(labels)
    pass1 = np.array([sum(labels[t]) / len(labels[t]) for t in task_ids], dtype=float)
    oracle = np.array([float(any(labels[t])) for t in task_ids], dtype=float)
    swing = np.array([0 < sum(labels[t]) < len(labels[t]) for t in task_ids], dtype=bool)
    ks = sorted({len(labels[t]) for t in task_ids})
    summary: dict[str, Any] = {
        "num_tasks": len(task_ids),
        "k": ks[0] if len(ks) == 1 else ks,
        "num_candidates": int(sum(len(labels[t]) for t in task_ids)),
        "swing_tasks": int(swing.sum()),
        "pass@1": _with_ci(_mean(pass1), bootstrap_ci([pass1], _mean, n_boot, seed)),
        "oracle": _with_ci(_mean(oracle), bootstrap_ci([oracle], _mean, n_boot, seed)),
        "selectors": {},
    }
    baseline = _Baseline(task_ids, pass1, oracle, swing)
    for name, per_task in selections.items():
        summary["selectors"][name] = _selector_row(name, per_task, baseline, n_boot, seed)
    summary["cost"] = cost_summary(summary["selectors"])
    return summary


@dataclass(frozen=True)
class _Baseline:
    """Per task (in ``task_ids`` order): pass@1, oracle (any candidate passes) and whether it
    is a swing task (mixed labels)."""

    task_ids: list[str]
    pass1: np.ndarray
    oracle: np.ndarray
    swing: np.ndarray


def _selector_row(
    name: str, per_task: Mapping[str, Selection], baseline: _Baseline, n_boot: int, seed: int
) -> dict[str, Any]:
    """One selector's row of the table; ValueError when it misses a task."""
    task_ids, swing = baseline.task_ids, baseline.swing
    missing = [t for t in task_ids if t not in per_task]
    if missing:
        raise ValueError(f"selector {name!r} has no selection for tasks {missing[:5]}")
    scores = np.array([per_task[t].score for t in task_ids], dtype=float)
    cost = Cost()
    for t in task_ids:
        cost.add(per_task[t].cost)
    failures = [t for t in task_ids if per_task[t].failure is not None]
    acc = _mean(scores)
    gap = (
        gap_closed(acc, _mean(baseline.pass1), _mean(baseline.oracle)) if acc is not None else None
    )
    return {
        "accuracy": _with_ci(acc, bootstrap_ci([scores], _mean, n_boot, seed)),
        "gap_closed": _with_ci(
            gap, bootstrap_ci([scores, baseline.pass1, baseline.oracle], _gap, n_boot, seed)
        ),
        "swing_accuracy": _with_ci(
            _mean(scores[swing]), bootstrap_ci([scores[swing]], _mean, n_boot, seed)
        ),
        "failed_tasks": len(failures),
        "fallback_tasks": sum(1 for t in task_ids if per_task[t].detail.get("fallback")),
        # agreement: where the example inputs came from (prompt, tests, none), per task
        "input_sources": dict(
            Counter(
                per_task[t].detail["input_source"]
                for t in task_ids
                if "input_source" in per_task[t].detail
            )
        ),
        "failure_examples": {t: per_task[t].failure for t in failures[:5]},
        "cost": _cost_row(cost, len(task_ids)),
    }


def _cost_row(cost: Cost, num_tasks: int) -> dict[str, Any]:
    tokens = cost.prompt_tokens + cost.completion_tokens
    return {
        "judge_calls": cost.judge_calls,
        "failed_calls": cost.failed_calls,
        "unmeasured_calls": cost.unmeasured_calls,
        "prompt_tokens": cost.prompt_tokens,
        "completion_tokens": cost.completion_tokens,
        "judge_tokens": tokens,
        "tokens_per_task": tokens / num_tasks if num_tasks else 0.0,
        "wall_s": round(cost.wall_s, 3),
    }


def _mean(x: np.ndarray) -> float | None:
    return float(x.mean()) if len(x) else None


def _gap(scores: np.ndarray, pass1: np.ndarray, oracle: np.ndarray) -> float | None:
    return gap_closed(float(scores.mean()), float(pass1.mean()), float(oracle.mean()))


def _with_ci(value: float | None, ci: tuple[float | None, float | None]) -> dict[str, Any]:
    return {"value": value, "ci95": list(ci)}
