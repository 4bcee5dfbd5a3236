"""Label candidates by execution through the stage cache (resumable, chunked).

A label is the executor's verdict on one candidate: passed, status, tests run and passed,
first failure, wall seconds. It is cached under the content of the task's tests and the
candidate's code (plus the time limit), so reruns, shards and other pools that contain the
same program reuse it. Math tasks (``pairrl.rewards.answers``) are labelled by their final
``\\boxed{}`` answer, through the same executor contract (math-verify, nothing runs), and
cached under the candidate's whole text. Candidates whose sampling failed are never executed: their label
says so (`status="no_candidate"`) and the gate counts them as failures.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pairrl.eval.cache import StageCache, content_key
from pairrl.eval.candidates import Candidate
from pairrl.eval.run_state import Issue

__all__ = [
    "INFRA_FAILURES",
    "label_candidates",
    "label_key",
    "task_fingerprint",
    "unmeasured_issues",
    "unmeasured_reasons",
]

# Statuses that say nothing about the candidate: the gate counts them as failed labels.
INFRA_FAILURES: frozenset[str] = frozenset({"sandbox_error", "no_candidate"})

Progress = Callable[[int], None]


def task_fingerprint(task: Any) -> str:
    """sha256 of what decides a task's verdicts: part of label and output keys.

    rewards.Task exposes `tests_digest()` (tests, helpers, entry point); other task types
    fall back to their full content.
    """
    digest = getattr(task, "tests_digest", None)
    if callable(digest):
        return content_key("task", digest())
    data = dataclasses.asdict(task) if dataclasses.is_dataclass(task) else dict(vars(task))
    return content_key(json.loads(json.dumps(data, default=str, sort_keys=True)))


def label_key(task_fp: str, code: str, timeout_s: Any) -> str:
    """Cache key of one candidate's label."""
    return content_key("label", task_fp, code, timeout_s)


def label_candidates(
    tasks: Mapping[str, Any],
    candidates: Sequence[Candidate],
    executor: Any | None,
    cache: StageCache,
    timeout_s: Any,
    chunk: int = 256,
    progress: Progress | None = None,
) -> dict[tuple[str, str], dict[str, Any] | None]:
    """Labels for every candidate, keyed by (task_id, candidate_id).

    Cached labels are reused; the rest are executed in chunks of `chunk` and written to
    the cache after each chunk. With `executor=None` (the gate's cache-only replay)
    nothing runs and absent labels come back as None.
    """
    fps = {tid: task_fingerprint(task) for tid, task in tasks.items()}
    out: dict[tuple[str, str], dict[str, Any] | None] = {}
    todo: list[tuple[str, Candidate]] = []
    for cand in candidates:
        ident = (cand.task_id, cand.candidate_id)
        if cand.error is not None:
            out[ident] = _no_candidate(cand)
            continue
        key = label_key(fps[cand.task_id], _material(tasks[cand.task_id], cand), timeout_s)
        cached = cache.get(key)
        if cached is not None:
            out[ident] = cached
            if progress:
                progress(1)
        elif executor is None:
            out[ident] = None
        else:
            todo.append((key, cand))
    if executor is None or not todo:
        return out
    from pairrl.rewards import ExecJob

    for start in range(0, len(todo), chunk):
        batch = todo[start : start + chunk]
        jobs = [
            ExecJob(tasks[c.task_id], c.code or None, c.candidate_id, text=c.completion)
            for _, c in batch
        ]
        results = executor.run(jobs)
        if len(results) != len(jobs):
            raise RuntimeError(f"executor returned {len(results)} results for {len(jobs)} jobs")
        entries = []
        for (key, cand), res in zip(batch, results, strict=True):
            value = _result_to_label(res)
            entries.append((key, value))
            out[(cand.task_id, cand.candidate_id)] = value
        cache.put_many(entries)
        if progress:
            progress(len(batch))
    return out


def _material(task: Any, cand: Candidate) -> str:
    """What decides the verdict: the program, or a math candidate's whole text."""
    from pairrl.rewards import is_answer_task

    return cand.completion if is_answer_task(task) else cand.code


def _result_to_label(res: Any) -> dict[str, Any]:
    return {
        "passed": bool(res.passed),
        "status": str(res.status),
        "n_tests": int(res.n_tests),
        "n_passed": int(res.n_passed),
        "first_failure": res.first_failure,
        "wall_s": float(res.wall_s),
    }


def _no_candidate(cand: Candidate) -> dict[str, Any]:
    return {
        "passed": False,
        "status": "no_candidate",
        "n_tests": 0,
        "n_passed": 0,
        "first_failure": f"sampling failed: {cand.error}",
        "wall_s": 0.0,
    }


def unmeasured_reasons(labels: list[dict[str, Any] | None]) -> list[str | None]:
    """Per candidate of a task: why its label could not be measured (not in the cache, or
    an infrastructure failure), or None when it was."""
    return [
        "no cached label"
        if lab is None
        else str(lab["first_failure"])
        if lab["status"] in INFRA_FAILURES
        else None
        for lab in labels
    ]


def unmeasured_issues(
    stage: str, candidates: Mapping[str, Sequence[Any]], labels: Mapping[str, list[Any]]
) -> list[Issue]:
    """The issues of ``stage``: one per candidate whose label could not be measured, missing
    when it is not in the cache, failed for an infrastructure failure."""
    issues = []
    for tid, task_labels in labels.items():
        for cand, reason in zip(candidates[tid], unmeasured_reasons(task_labels), strict=True):
            if reason is not None:
                kind = "missing" if reason == "no cached label" else "failed"
                issues.append(Issue(stage, tid, cand.candidate_id, kind, reason))
    return issues
