"""From per-task labels and selections to the benchmark table (with bootstrap CIs).

Rows per selector: selected accuracy, the share of the pass@1 -> oracle gap it closes,
accuracy on swing tasks (mixed labels: the only tasks where selection matters), failures
and cost (judge calls, tokens in all and per task, and the verification rate: the share
of tasks on which it called the judge at all); over all rows, the cost frontier and
selective verification's savings (``pairrl.eval.cost``). ``difficulty_split`` gives each
selector's accuracy on easy, medium and hard tasks (by the pool's pass rate);
``run_breakdowns`` adds it, the full cost and the selective-verification sweep, which read
the run's config and candidates, beside the summary. Intervals are percentile bootstraps
over tasks, resampled jointly so that a selector's accuracy and the pass@1/oracle it is
compared against share the same tasks.

A number measured on no task is None (shown as n/a), never 0: a selector whose every task
failed, and pass@1 or oracle when no task's labels could be measured (every candidate's
sampling or execution failed). A failed task of a selector that measured others scores 0
and is counted in its ``failed_tasks``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pairrl.eval.cost import cost_summary, full_cost, generation_tokens, selective_sweep
from pairrl.eval.labels import INFRA_FAILURES
from pairrl.eval.metrics import DIFFICULTY_BUCKETS, bootstrap_ci, difficulty_bucket, gap_closed
from pairrl.eval.run_state import EvalRun
from pairrl.eval.selectors import Cost, Selection

__all__ = ["difficulty_split", "run_breakdowns", "summarise"]


def summarise(
    labels: Mapping[str, Sequence[bool]],
    selections: Mapping[str, Mapping[str, Selection]],
    n_boot: int = 2000,
    seed: int = 0,
    unmeasured: Mapping[str, Sequence[bool]] | None = None,
) -> dict[str, Any]:
    """The benchmark's numbers.

    labels: task_id -> candidate labels (in candidate order), for tasks with >= 1 candidate.
    selections: selector -> task_id -> Selection; every selector must cover every task.
    unmeasured: task_id -> per candidate, True where its label could not be measured
    (default: every label was); such a label is counted as not passed.
    """
    task_ids = sorted(labels)
    unknown = {t: list((unmeasured or {}).get(t) or [False] * len(labels[t])) for t in task_ids}
    pass1 = np.array([sum(labels[t]) / len(labels[t]) for t in task_ids], dtype=float)
    oracle = np.array([float(any(labels[t])) for t in task_ids], dtype=float)
    swing = np.array([0 < sum(labels[t]) < len(labels[t]) for t in task_ids], dtype=bool)
    ks = sorted({len(labels[t]) for t in task_ids})
    # pass@1 needs every label of a task; oracle one measured pass, or every label
    pass1_known = [not any(unknown[t]) for t in task_ids]
    oracle_known = [
        known or any(ok and not u for ok, u in zip(labels[t], unknown[t], strict=True))
        for t, known in zip(task_ids, pass1_known, strict=True)
    ]
    summary: dict[str, Any] = {
        "num_tasks": len(task_ids),
        "k": ks[0] if len(ks) == 1 else ks,
        "num_candidates": int(sum(len(labels[t]) for t in task_ids)),
        "swing_tasks": int(swing.sum()),
        "pass@1": _measured_mean(pass1, any(pass1_known), n_boot, seed),
        "oracle": _measured_mean(oracle, any(oracle_known), n_boot, seed),
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
    judged = sum(1 for t in task_ids if per_task[t].cost.judge_calls > 0)
    measured = len(failures) < len(task_ids)
    swing_measured = any(
        per_task[t].failure is None for t, s in zip(task_ids, swing, strict=True) if s
    )
    return {
        "accuracy": _measured_mean(scores, measured, n_boot, seed),
        "gap_closed": _gap_with_ci(scores, baseline, n_boot, seed)
        if measured
        else _with_ci(None, (None, None)),
        "swing_accuracy": _measured_mean(scores[swing], swing_measured, n_boot, seed),
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
        "cost": _cost_row(cost, len(task_ids), judged),
    }


def _cost_row(cost: Cost, num_tasks: int, judged: int) -> dict[str, Any]:
    tokens = cost.prompt_tokens + cost.completion_tokens
    return {
        "verified_tasks": judged,
        "verification_rate": judged / num_tasks if num_tasks else None,
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


def _gap_with_ci(scores: np.ndarray, baseline: _Baseline, n_boot: int, seed: int) -> dict[str, Any]:
    """The share of the pass@1 -> oracle gap closed, with its paired interval."""
    gap = _gap(scores, baseline.pass1, baseline.oracle) if len(scores) else None
    columns = [scores, baseline.pass1, baseline.oracle]
    return _with_ci(gap, bootstrap_ci(columns, _gap, n_boot, seed))


def _gap(scores: np.ndarray, pass1: np.ndarray, oracle: np.ndarray) -> float | None:
    return gap_closed(float(scores.mean()), float(pass1.mean()), float(oracle.mean()))


def _with_ci(value: float | None, ci: tuple[float | None, float | None]) -> dict[str, Any]:
    return {"value": value, "ci95": list(ci)}


def _measured_mean(values: np.ndarray, measured: bool, n_boot: int, seed: int) -> dict[str, Any]:
    """The mean with its interval; None (n/a) when no task of ``values`` was measured."""
    if not measured:
        return _with_ci(None, (None, None))
    return _with_ci(_mean(values), bootstrap_ci([values], _mean, n_boot, seed))


def difficulty_split(
    labels: Mapping[str, Sequence[bool]],
    selections: Mapping[str, Mapping[str, Selection]],
    thresholds: tuple[float, float],
    unmeasured: Mapping[str, Sequence[bool]] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Each selector's accuracy on easy, medium and hard tasks, with the number of tasks.

    A task's difficulty is its pass rate, the share of its k candidates that pass,
    bucketed by ``thresholds = (easy_at, hard_at)`` (``metrics.difficulty_bucket``). A
    task with a label that could not be measured (``unmeasured``, as in ``summarise``) has
    no known pass rate and is in no bucket (counted as ``unmeasured``). Accuracy in a bucket
    is n/a when it holds no task, or only tasks the selector failed.
    """
    easy_at, hard_at = thresholds
    buckets: dict[str, list[str]] = {b: [] for b in DIFFICULTY_BUCKETS}
    unknown = 0
    for tid, task_labels in sorted(labels.items()):
        if not task_labels or any((unmeasured or {}).get(tid) or ()):
            unknown += 1
            continue
        rate = sum(task_labels) / len(task_labels)
        buckets[difficulty_bucket(rate, easy_at, hard_at)].append(tid)
    per_selector = {
        name: {b: _bucket_accuracy(per_task, tids, n_boot, seed) for b, tids in buckets.items()}
        for name, per_task in selections.items()
    }
    return {
        "easy_at": easy_at,
        "hard_at": hard_at,
        "tasks": {**{b: len(tids) for b, tids in buckets.items()}, "unmeasured": unknown},
        "selectors": per_selector,
    }


def _bucket_accuracy(
    per_task: Mapping[str, Selection], task_ids: list[str], n_boot: int, seed: int
) -> dict[str, Any]:
    """One selector's accuracy (with its interval) over one bucket's tasks."""
    scores = np.array([per_task[t].score for t in task_ids], dtype=float)
    failed = sum(1 for t in task_ids if per_task[t].failure is not None)
    return {
        "accuracy": _measured_mean(scores, failed < len(task_ids), n_boot, seed),
        "tasks": len(task_ids),
        "failed_tasks": failed,
    }


def run_breakdowns(run: EvalRun) -> dict[str, Any]:
    """The summary sections that read the run's config and candidates: ``difficulty``
    (``difficulty_split``), ``full_cost`` and ``selective_sweep`` (``pairrl.eval.cost``);
    empty when the run has no selector rows."""
    if "selectors" not in run.summary:
        return {}
    cfg = run.config
    unmeasured = {
        t: [lab is None or lab["status"] in INFRA_FAILURES for lab in labs]
        for t, labs in run.labels.items()
    }
    thresholds = (cfg.difficulty.easy_at, cfg.difficulty.hard_at)
    full = full_cost(run.summary["selectors"], generation_tokens(run.candidates), cfg.cost)
    return {
        "difficulty": difficulty_split(
            run.bool_labels(), run.selections, thresholds, unmeasured, cfg.bootstrap, cfg.seed
        ),
        "full_cost": full,
        "selective_sweep": selective_sweep(run, full["baseline_cost"]),
    }
