"""The benchmark pipeline: candidates -> labels -> selectors -> summary.

One function, `run_pipeline`, runs in two modes:

- `compute`: fill every stage, reusing whatever the cache already holds (resume).
- `replay`: touch no model and no executor; rebuild everything from the cache alone and
  record every entry the run needs that is absent ("missing") or holds a failure
  ("failed"). The integrity gate is built on this mode: it re-derives each label and
  comparison from the config, checks it against the cache, and compares the replayed
  selections with the ones the run reported.

With ``rsa.enabled``, recursive self-aggregation's rounds are sampled and labelled after
the run's own labels, and its rows select on its last round after the judge selectors
(``pairrl.eval.rsa``, ``pairrl.eval.rsa_stage``), in both modes. With ``thinking.enabled``,
candidates sampled with a thinking budget are labelled and measured beside the run's own
(``pairrl.eval.thinking``, ``pairrl.eval.thinking_stage``); nothing selects among them.

A selection that rests on a label that could not be measured (its sampling or execution
failed, or it is not in the cache) is a failed task of its selector, with the reason:
the chosen candidate's label, or, for `random`'s expectation and an `oracle` that found no
pass, every label of the task.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pairrl.eval.aggregate import summarise
from pairrl.eval.agreement_stage import select_by_agreement
from pairrl.eval.cache import StageCache
from pairrl.eval.candidates import group_by_task
from pairrl.eval.config import JUDGE_SELECTORS, EvalConfig
from pairrl.eval.judge_selectors import run_judge_selectors
from pairrl.eval.labels import INFRA_FAILURES, label_candidates, unmeasured_reasons
from pairrl.eval.run_state import EvalRun, Issue, Mode
from pairrl.eval.selectors import select_first, select_oracle, select_random
from pairrl.eval.sources import load_candidates_and_tasks
from pairrl.eval.thinking import thinking_summary

__all__ = ["EvalRun", "Issue", "run_pipeline"]


Reporter = Callable[[str, int], Callable[[int], None]]


def _no_progress(_stage: str, _total: int) -> Callable[[int], None]:
    return lambda _n: None


def run_pipeline(
    cfg: EvalConfig, mode: Mode = "compute", progress: Reporter | None = None
) -> EvalRun:
    """Run (or replay) the benchmark described by `cfg`. See the module docstring."""
    progress = progress or _no_progress
    out_dir = Path(cfg.out_dir)
    cache_dir = Path(cfg.cache_dir) if cfg.cache_dir else out_dir / "cache"
    timings: dict[str, float] = {}
    issues: list[Issue] = []

    t0 = time.perf_counter()
    tasks, cand_list, sample_issues = load_candidates_and_tasks(cfg, cache_dir, mode, progress)
    issues.extend(sample_issues)
    timings["candidates"] = time.perf_counter() - t0
    candidates = group_by_task(cand_list)
    task_ids = [tid for tid in tasks if tid in candidates]

    t0 = time.perf_counter()
    executor = _LazyExecutor(cfg) if mode == "compute" else None
    try:
        flat = [c for tid in task_ids for c in candidates[tid]]
        labels = _label_stage(cfg, tasks, candidates, task_ids, executor, cache_dir, progress)
        issues.extend(_label_issues(candidates, labels))
        timings["labels"] = time.perf_counter() - t0

        run = EvalRun(cfg, mode, task_ids, {t: candidates[t] for t in task_ids}, labels, {})
        run.expected["labels"] = len(flat)
        if cfg.candidates.source != "pool":
            run.expected["samples"] = len(flat)
        bools = run.bool_labels()
        _run_no_judge(run, tasks, bools, executor, cache_dir, progress, issues, timings)
        rsa, thinking = _generator_stages(run, tasks, executor, cache_dir, progress, timings)
    finally:
        if executor is not None and hasattr(executor, "close"):
            executor.close()

    judge_names = [s for s in cfg.selectors if s in JUDGE_SELECTORS]
    if judge_names:
        t0 = time.perf_counter()
        outcome = run_judge_selectors(cfg, judge_names, tasks, run, cache_dir, mode, progress)
        run.selections.update(outcome.selections)
        run.judge_records = outcome.records
        run.judge_quality = outcome.quality
        issues.extend(outcome.issues)
        run.expected.update(outcome.expected)
        timings["judge"] = time.perf_counter() - t0
    if rsa is not None:
        t0 = time.perf_counter()
        _rsa_select(run, tasks, rsa, cache_dir, progress, issues)
        timings["rsa"] += time.perf_counter() - t0
    if thinking is not None:
        issues.extend(thinking.issues)
        run.expected.update(thinking.expected)
        run.judge_records.extend(thinking.records)

    run.issues = issues
    run.wall_s = timings
    ordered = {s: run.selections[s] for s in cfg.selectors if s in run.selections}
    ordered.update({s: v for s, v in run.selections.items() if s not in ordered})
    unmeasured = _unmeasured_labels(run)
    run.selections = {
        name: {t: _fail_if_unmeasured(sel, unmeasured[t]) for t, sel in per_task.items()}
        for name, per_task in ordered.items()
    }
    if rsa is not None:  # its rows pick among the last round: their labels, checked there
        run.selections.update(rsa[0].selections)
    if task_ids:
        run.summary = _summary(run, bools, unmeasured, rsa, thinking)
    return run


def _summary(
    run: EvalRun,
    bools: dict[str, list[bool]],
    unmeasured: dict[str, list[str | None]],
    rsa: tuple[Any, Any] | None,
    thinking: Any,
) -> dict[str, Any]:
    """summary.json's numbers: every selector's, then RSA's rounds and thinking's gain."""
    cfg = run.config
    flags = {t: [r is not None for r in reasons] for t, reasons in unmeasured.items()}
    summary = summarise(
        bools, run.selections, n_boot=cfg.bootstrap, seed=cfg.seed, unmeasured=flags
    )
    if rsa is not None:
        summary["rsa"] = rsa[0].summary
    if thinking is not None:
        summary["thinking"] = thinking_summary(
            cfg.judge.thinking_budget,
            thinking.without,
            thinking.with_thinking,
            run.judge_quality,
            run.judge_records,
        )
    return summary


def _generator_stages(
    run: EvalRun,
    tasks: dict[str, Any],
    executor: Any,
    cache_dir: Path,
    progress: Reporter,
    timings: dict[str, float],
) -> tuple[tuple[Any, Any] | None, Any]:
    """The stages that sample more candidates from the generator, each when enabled: RSA's
    rounds (``pairrl.eval.rsa_stage``: its outcome so far and the last round's candidates
    and labels) and the thinking candidates (``pairrl.eval.thinking_stage``)."""
    rsa = thinking = None
    limit_key = _limit_key(run.config)
    if run.config.rsa.enabled:
        from pairrl.eval.rsa_stage import run_rsa

        t0 = time.perf_counter()
        outcome, *last = run_rsa(run, tasks, executor, cache_dir, limit_key, progress)
        timings["rsa"] = time.perf_counter() - t0
        rsa = outcome, tuple(last)
    if run.config.thinking.enabled:
        from pairrl.eval.thinking_stage import run_thinking

        t0 = time.perf_counter()
        thinking = run_thinking(run, tasks, executor, cache_dir, limit_key, progress)
        timings["thinking"] = time.perf_counter() - t0
    return rsa, thinking


def _rsa_select(
    run: EvalRun,
    tasks: dict[str, Any],
    rsa: tuple[Any, Any],
    cache_dir: Path,
    progress: Reporter,
    issues: list[Issue],
) -> None:
    """RSA's rows on the last round; its records, issues and expected entries join the run's."""
    from pairrl.eval.rsa_stage import select_on_last

    outcome, last = rsa
    select_on_last(run, tasks, last, cache_dir, outcome, progress)
    issues.extend(outcome.issues)
    run.expected.update(outcome.expected)
    run.judge_records.extend(outcome.records)


def _unmeasured_labels(run: EvalRun) -> dict[str, list[str | None]]:
    """Per task, per candidate: why its label could not be measured, or None when it was."""
    return {tid: unmeasured_reasons(task_labels) for tid, task_labels in run.labels.items()}


def _fail_if_unmeasured(sel: Any, reasons: list[str | None]) -> Any:
    """``sel`` as a failed selection (same pick and score) when it rests on an unmeasured
    label: the chosen one, or all of them for a selection with no pick (random's
    expectation) and for an oracle that found no pass."""
    if sel.failure is not None:
        return sel
    if sel.chosen is None or (sel.selector == "oracle" and sel.score == 0.0):
        missing = [r for r in reasons if r is not None]
        if not missing:
            return sel
        why = f"{len(missing)} of {len(reasons)} candidates have no label (e.g. {missing[0]})"
    elif 0 <= sel.chosen < len(reasons) and reasons[sel.chosen] is not None:
        why = f"the chosen candidate {sel.chosen} has no label ({reasons[sel.chosen]})"
    else:
        return sel
    return dataclasses.replace(sel, failure=why)


def _label_stage(
    cfg: EvalConfig,
    tasks: dict[str, Any],
    candidates: dict[str, list[Any]],
    task_ids: list[str],
    executor: Any,
    cache_dir: Path,
    progress: Reporter,
) -> dict[str, list[dict[str, Any] | None]]:
    """Each candidate's label, in candidate order per task (None: not in the cache)."""
    flat = [c for tid in task_ids for c in candidates[tid]]
    labelled = label_candidates(
        tasks,
        flat,
        executor,
        StageCache(cache_dir, "labels"),
        _limit_key(cfg),
        cfg.label_chunk,
        progress("label", len(flat)),
    )
    return {tid: [labelled[(tid, c.candidate_id)] for c in candidates[tid]] for tid in task_ids}


def _limit_key(cfg: EvalConfig) -> Any:
    """What the time limit of a label depends on (part of its cache key)."""
    ex = cfg.executor
    if ex.time_limit == "fixed":
        return ex.timeout_s
    return ["reference", ex.limit_factor, ex.limit_floor_s, ex.timeout_s]


def _label_issues(
    candidates: dict[str, list[Any]], labels: dict[str, list[dict[str, Any] | None]]
) -> list[Issue]:
    """A label absent from the cache, or an infrastructure failure, is an issue."""
    issues = []
    for tid, task_labels in labels.items():
        for cand, lab in zip(candidates[tid], task_labels, strict=True):
            if lab is None:
                issues.append(Issue("labels", tid, cand.candidate_id, "missing", "no cached label"))
            elif lab["status"] in INFRA_FAILURES:
                reason = str(lab["first_failure"])
                issues.append(Issue("labels", tid, cand.candidate_id, "failed", reason))
    return issues


def _run_no_judge(
    run: EvalRun,
    tasks: dict[str, Any],
    bools: dict[str, list[bool]],
    executor: Any,
    cache_dir: Path,
    progress: Reporter,
    issues: list[Issue],
    timings: dict[str, float],
) -> None:
    cfg = run.config
    simple = {"random": select_random, "first": select_first, "oracle": select_oracle}
    for name in cfg.selectors:
        if name in simple:
            run.selections[name] = {t: simple[name](t, bools[t]) for t in run.task_ids}
    if "majority" in cfg.selectors:
        from pairrl.eval.majority import select_majority

        run.selections["majority"] = {
            t: select_majority(t, tasks[t], run.candidates[t], bools[t]) for t in run.task_ids
        }
    if "agreement" in cfg.selectors:
        t0 = time.perf_counter()
        sels, missing, failed, needed = select_by_agreement(
            tasks,
            run.candidates,
            bools,
            executor,
            StageCache(cache_dir, "outputs"),
            cfg.agreement.inputs,
            cfg.agreement.max_inputs,
            cfg.executor.timeout_s,
            progress("agreement", len(run.task_ids)),
        )
        run.selections["agreement"] = sels
        run.expected["outputs"] = needed
        issues.extend(Issue("outputs", t, item, "missing", why) for t, item, why in missing)
        issues.extend(Issue("outputs", t, item, "failed", why) for t, item, why in failed)
        timings["agreement"] = time.perf_counter() - t0


class _LazyExecutor:
    """Starts the executor on first use, so a fully cached (resumed) run starts none."""

    def __init__(self, cfg: EvalConfig) -> None:
        self._cfg = cfg
        self._executor: Any = None

    def _get(self) -> Any:
        if self._executor is None:
            self._executor = self._cfg.executor.build()
        return self._executor

    @property
    def workers(self) -> int:
        """Parallel workers (without starting the executor)."""
        return self._cfg.executor.workers or os.cpu_count() or 1

    def run(self, jobs: Any) -> Any:
        """Executor.run; answer (math) tasks are checked by math-verify, never executed."""
        from pairrl.rewards import label_jobs

        return label_jobs(jobs, lambda code_jobs: self._get().run(code_jobs))

    def call_outputs(self, *args: Any, **kwargs: Any) -> Any:
        """Executor.call_outputs."""
        return self._get().call_outputs(*args, **kwargs)

    def close(self) -> None:
        """Close the executor if it was started."""
        if self._executor is not None:
            self._executor.close()
