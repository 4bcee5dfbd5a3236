"""Paired 95% intervals for what the run's mode added over GRPO on the shared pool.

Both models judge the same pool, so their difference is measured on the same held-out
problems: the problems are resampled together for both (``pairrl.eval.metrics.
bootstrap_ci``), for the judge's balanced accuracy on the fixed pairs and for Swiss. On 200
problems these intervals are several points wide, which is what a gain of a few points
must be read against.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pairrl.eval.gate import read_reported_selections
from pairrl.eval.metrics import bootstrap_ci
from pairrl.rollout.judge_quality import balanced_accuracy_from_counts, comparison_class_counts

__all__ = ["PoolRecords", "gain_intervals", "read_pool_records", "run_gain_intervals"]

BOOTSTRAP = 1000


@dataclass(frozen=True)
class PoolRecords:
    """One model's shared-pool run, per held-out problem: Swiss's score and the fixed pairs."""

    swiss: dict[str, float]
    fixed: dict[str, list[dict[str, Any]]]

    def class_counts(self, tasks: list[str]) -> np.ndarray:
        """Per task, the fixed pairs' (true positives, positives, true negatives, negatives):
        a (len(tasks), 4) array whose rows, summed over any draw of tasks, give that draw's
        balanced accuracy (a task drawn twice counts twice)."""
        rows = [comparison_class_counts(self.fixed.get(task, [])) for task in tasks]
        return np.array(rows, dtype=np.int64).reshape(len(tasks), 4)

    def balanced_accuracy(self, tasks: list[str]) -> float | None:
        """The fixed pairs' balanced accuracy over ``tasks`` (a task drawn twice counts twice)."""
        return _summed_balanced_accuracy(self.class_counts(tasks))


def _summed_balanced_accuracy(counts: np.ndarray) -> float | None:
    """The balanced accuracy of per-task class counts (rows of ``class_counts``) summed."""
    return balanced_accuracy_from_counts(*(int(c) for c in counts.sum(0)))


def read_pool_records(path: str | Path, swiss: str) -> PoolRecords:
    """The records of a shared-pool benchmark run (``RUN/eval/<model>-shared``)."""
    records = Path(path, "records.jsonl")
    picks = read_reported_selections(records).get(swiss, {})
    fixed: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in records.read_text().splitlines():
        row = json.loads(line)
        if row.get("kind") == "fixed_pair":
            fixed[row["task_id"]].append(row)
    return PoolRecords({task: float(p["score"]) for task, p in picks.items()}, dict(fixed))


def gain_intervals(
    own: PoolRecords, other: PoolRecords, n_boot: int = BOOTSTRAP, seed: int = 0
) -> dict[str, list[float] | None]:
    """95% intervals, in points, of own minus other: balanced accuracy and Swiss.

    Worked example: Swiss scores 1, 1, 1, 1 against 0, 0, 0, 0 differ by 100 points in
    every resample, so the interval is [100.0, 100.0]; equal records give [0.0, 0.0].

    >>> one = lambda v: PoolRecords({t: v for t in "abcd"}, {})
    >>> gain_intervals(one(1.0), one(0.0))["shared_pool_swiss_vs_grpo"]
    [100.0, 100.0]
    >>> gain_intervals(one(1.0), one(1.0))["shared_pool_swiss_vs_grpo"]
    [0.0, 0.0]
    """
    tasks = sorted(set(own.swiss) & set(other.swiss))
    if not tasks:
        return {"judge_balanced_accuracy_vs_grpo": None, "shared_pool_swiss_vs_grpo": None}
    a = np.array([own.swiss[t] for t in tasks])
    b = np.array([other.swiss[t] for t in tasks])
    swiss = bootstrap_ci([a, b], lambda x, y: float(np.mean(x - y)), n_boot, seed)

    own_counts, other_counts = own.class_counts(tasks), other.class_counts(tasks)

    def ba_gain(mine: np.ndarray, theirs: np.ndarray) -> float | None:
        a, b = _summed_balanced_accuracy(mine), _summed_balanced_accuracy(theirs)
        return None if a is None or b is None else a - b

    ba = bootstrap_ci([own_counts, other_counts], ba_gain, n_boot, seed)
    # (+ 0.0: no "-0.0" for a bound at zero)
    points = lambda ci: None if ci[0] is None else [round(100 * v, 1) + 0.0 for v in ci]  # noqa: E731
    return {
        "judge_balanced_accuracy_vs_grpo": points(ba),
        "shared_pool_swiss_vs_grpo": points(swiss),
    }


def run_gain_intervals(eval_dir: str | Path, mode: str, swiss: str) -> dict[str, Any]:
    """:func:`gain_intervals` of the main job's ``mode`` over GRPO, from its benchmark runs
    (``RUN/eval``)."""
    own = read_pool_records(Path(eval_dir) / f"{mode}-shared", swiss)
    return gain_intervals(own, read_pool_records(Path(eval_dir) / "grpo-shared", swiss))
