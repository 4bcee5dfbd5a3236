"""The thinking stage of the pipeline (``pairrl.eval.thinking``): sample k candidates per
task with the thinking budget through the samples cache, label them, and measure them
beside the run's own candidates.

Each task's thinking candidates are one entry of the samples cache, keyed as the run's
own samples plus the budget, so a rerun reuses them, merging shards' caches takes them
and the gate replays them. A failed completion is a candidate with ``error`` set, never
executed. Failures and absent entries are issues of the stages ``thinking samples`` and
``thinking labels``, counted by the gate as the run's own samples and labels are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairrl.eval.cache import StageCache
from pairrl.eval.candidates import Candidate, group_by_task
from pairrl.eval.labels import label_candidates, unmeasured_issues
from pairrl.eval.rsa_stage import population_metrics
from pairrl.eval.run_state import EvalRun, StageOutcome

__all__ = ["ThinkingOutcome", "run_thinking"]

Reporter = Callable[[str, int], Callable[[int], None]]


@dataclass
class ThinkingOutcome(StageOutcome):
    """What the thinking stage added to a run: its records, issues, expected entries per
    stage, and the generation metrics without and with thinking."""

    without: dict[str, Any] = field(default_factory=dict)
    with_thinking: dict[str, Any] = field(default_factory=dict)


def run_thinking(
    run: EvalRun,
    tasks: dict[str, Any],
    executor: Any,
    cache_dir: Path,
    limit_key: Any,
    progress: Reporter,
) -> ThinkingOutcome:
    """The thinking candidates of every task of ``run``, labelled and measured."""
    from pairrl.eval.sampling import sample_candidates

    cfg, out = run.config, ThinkingOutcome()
    budget = cfg.judge.thinking_budget
    ordered = [tasks[t] for t in run.task_ids]
    sampled, out.issues = sample_candidates(
        cfg, ordered, cache_dir, run.mode, progress, think_tokens=budget
    )
    pop = group_by_task(sampled)
    flat = [c for t in run.task_ids for c in pop[t]]
    found = label_candidates(
        tasks,
        flat,
        executor,
        StageCache(cache_dir, "labels"),
        limit_key,
        cfg.label_chunk,
        progress("thinking labels", len(flat)),
    )
    labels = {t: [found[(t, c.candidate_id)] for c in pop[t]] for t in run.task_ids}
    out.expected = {"thinking samples": len(flat), "thinking labels": len(flat)}
    out.issues += unmeasured_issues("thinking labels", pop, labels)
    out.records = _candidate_records(pop, labels)
    out.without = population_metrics(0, tasks, run.candidates, run.labels)
    out.with_thinking = population_metrics(0, tasks, pop, labels)
    for metrics in (out.without, out.with_thinking):
        metrics.pop("round")
    sampled = [c for c in flat if c.error is None]
    out.with_thinking["thought"] = sum(bool(c.meta.get("thought")) for c in sampled)
    out.with_thinking["sampled"] = len(sampled)
    return out


def _candidate_records(
    pop: dict[str, list[Candidate]], labels: dict[str, list[dict[str, Any] | None]]
) -> list[dict[str, Any]]:
    return [
        {
            "kind": "thinking_candidate",
            "task_id": tid,
            "candidate_id": cand.candidate_id,
            "code": cand.code,
            "sample_error": cand.error,
            "label": lab,
        }
        for tid, cands in pop.items()
        for cand, lab in zip(cands, labels[tid], strict=True)
    ]
