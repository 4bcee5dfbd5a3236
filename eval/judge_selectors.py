"""The judge selectors: pointwise (A/B logits, with or without thinking; the 1-10 rating)
and tournaments (``pairrl.eval.tournament_selectors``), then selective verification and
the judge-quality controls (``pairrl.eval.judge_controls``).

A pointwise selector judges each of a task's candidates once and picks the best score:
P(correct) for ``pointwise_ab`` / ``pointwise_think``, the rating for ``pointwise_rating``
(read as ``judge.readout`` says: the parsed ``<rating>`` tag, or its expectation over the
rating tokens). Ties are broken as the tournaments break them
(``pairrl.rollout.judges.pointwise_ranking``: then the lowest index).

All judge calls go through `CachedJudge`, so the gate's replay re-derives every one of
them from the cache; each requested judgement counts towards its stage's expected calls,
and each missing or failed one becomes an `Issue` with its reason. Judge calls are
batched across tasks (pointwise: all at once; tournaments: one batch per round).
Candidates whose sampling failed are never shown to the judge.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairrl.eval.cache import StageCache
from pairrl.eval.candidates import Candidate
from pairrl.eval.config import EvalConfig
from pairrl.eval.judge_cache import CachedJudge
from pairrl.eval.judge_controls import POINTWISE_SELECTORS, quality_controls, selective_rows
from pairrl.eval.kit import benchmark_kit
from pairrl.eval.run_state import EvalRun, Issue
from pairrl.eval.selectors import Selection
from pairrl.eval.tournament_selectors import (
    TOURNAMENT_SELECTORS,
    TaskLedger,
    cost_of,
    run_tournaments,
)
from pairrl.rollout.judges import pointwise_ranking
from pairrl.rollout.prompts import THINK_CLOSE

__all__ = ["TOURNAMENT_SELECTORS", "JudgeOutcome", "judge_solution", "run_judge_selectors"]


@dataclass
class JudgeOutcome:
    """Selections, records, quality metrics, issues and expected call counts."""

    selections: dict[str, dict[str, Selection]] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    quality: dict[str, dict[str, Any]] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)
    expected: dict[str, int] = field(default_factory=dict)

    def merge(self, ledgers: dict[str, TaskLedger]) -> None:
        """Take in each task's accounting, in task order."""
        for ledger in ledgers.values():
            for stage, count in ledger.expected.items():
                self.expected[stage] = self.expected.get(stage, 0) + count
            self.issues.extend(ledger.issues)
            self.records.extend(ledger.records)
            ledger.expected.clear()
            ledger.issues.clear()
            ledger.records.clear()


def judge_solution(cand: Candidate, task: Any = None) -> str:
    """What the judge sees: the executed program in a python fence (the raw completion
    when it held no code, so the judge sees that too); a math task's whole completion."""
    from pairrl.rewards import is_answer_task
    from pairrl.rollout.prompts import solution_for_judge

    if is_answer_task(task):
        text = cand.completion
        return solution_for_judge(text, "math") if text else "(empty completion)"
    if cand.code.strip():
        return f"```python\n{cand.code.rstrip()}\n```"
    return solution_for_judge(cand.text) if cand.text else "(empty completion)"


def build_judge(
    cfg: EvalConfig, cache_dir: Path, mode: str, tasks: Sequence[Any] | None = None
) -> CachedJudge:
    """The cached judge; the judge model defaults to the generator's model or endpoint;
    its prompts are the kit for ``tasks`` (``pairrl.eval.kit.benchmark_kit``)."""
    from pairrl.eval.models import make_sampler, model_identity, resolve_engine
    from pairrl.rollout.samplers import SamplingParams

    j, c = cfg.judge, cfg.candidates
    engine = resolve_engine(j.engine, default=c.engine)
    dtype = j.dtype or c.dtype
    model = j.model or (None if j.endpoint else (c.model if c.source == "model" else None))
    endpoint = j.endpoint or (c.endpoint if c.source == "endpoint" and not j.model else None)
    served = j.served_model if j.endpoint else c.served_model
    if not model and not endpoint:
        raise ValueError(
            "judge selectors need judge.model or judge.endpoint (or a generator model/endpoint)"
        )
    if mode == "compute":
        from pairrl.model_paths import check_model_path

        check_model_path("judge.model", model)
    sampler = (
        make_sampler(model, endpoint, served, j.http, j.batch_size, engine=engine, dtype=dtype)
        if mode == "compute"
        else None
    )
    sampling = SamplingParams(
        temperature=j.temperature, top_p=j.top_p, max_tokens=j.max_tokens, seed=j.seed
    )
    return CachedJudge(
        identity=model_identity(model, endpoint, served, engine=engine, dtype=dtype),
        sampler=sampler,
        kit=benchmark_kit(cfg, tasks),
        sampling=sampling,
        readout=j.readout,
        think_tokens=j.thinking_budget,
        pair_cache=StageCache(cache_dir, "pairwise"),
        point_cache=StageCache(cache_dir, "pointwise"),
        batch_size=j.batch_size,
        min_rating_mass=j.min_rating_mass,
    )


def run_judge_selectors(
    cfg: EvalConfig,
    names: Sequence[str],
    tasks: dict[str, Any],
    run: EvalRun,
    cache_dir: Path,
    mode: str,
    progress: Callable[[str, int], Callable[[int], None]],
) -> JudgeOutcome:
    """Run every judge selector in `names` over the run's tasks (see module docstring)."""
    judge = build_judge(cfg, cache_dir, mode, [tasks[t] for t in run.task_ids])
    outcome = JudgeOutcome()
    solutions = {t: [judge_solution(c, tasks[t]) for c in run.candidates[t]] for t in run.task_ids}
    ledgers = {t: TaskLedger(t) for t in run.task_ids}
    try:
        for name in names:
            advance = progress(name, len(run.task_ids))
            if name in POINTWISE_SELECTORS:
                outcome.selections[name] = _pointwise(name, judge, tasks, run, solutions, ledgers)
                advance(len(run.task_ids))
            else:
                outcome.selections[name] = run_tournaments(
                    cfg, name, judge, tasks, run, solutions, ledgers, advance
                )
            outcome.merge(ledgers)
        if cfg.selective.enabled:
            outcome.selections.update(selective_rows(cfg, run, outcome.selections))
        outcome.quality = quality_controls(
            cfg, judge, tasks, run, solutions, outcome.records, ledgers, set(names)
        )
        outcome.merge(ledgers)
    finally:
        close = getattr(judge.sampler, "close", None)
        if callable(close):
            close()
    return outcome


def _pointwise(
    name: str,
    judge: CachedJudge,
    tasks: dict[str, Any],
    run: EvalRun,
    solutions: dict[str, list[str]],
    ledgers: dict[str, TaskLedger],
) -> dict[str, Selection]:
    """Every task's existing candidates rated in one batch; the best P(correct) wins."""
    labels = run.bool_labels()
    asks = [
        (tid, i)
        for tid in run.task_ids
        for i, c in enumerate(run.candidates[tid])
        if c.error is None
    ]
    mode = POINTWISE_SELECTORS[name]
    verdicts = judge.pointwise(mode, [(tasks[t], solutions[t][i]) for t, i in asks])
    value_field = "rating" if mode == "rating" else "p_correct"
    by_task: dict[str, list[tuple[int, Any]]] = {t: [] for t in run.task_ids}
    for (tid, i), v in zip(asks, verdicts, strict=True):
        by_task[tid].append((i, v))
        ledgers[tid].account(name, f"candidate {i}", v)
        record = {
            "kind": "pointwise",
            "selector": name,
            "task_id": tid,
            "candidate": i,
            value_field: v.values[0] if v.ok and v.values else None,
            "failure": v.failure,
            "label": labels[tid][i],
            "key": v.key,
        }
        if mode == "ab_think":  # whether it thought: closed thinking (budget or itself)
            record["thought"] = THINK_CLOSE in v.text
        ledgers[tid].records.append(record)
    return {
        tid: _pointwise_pick(name, tid, rows, labels[tid], len(run.candidates[tid]))
        for tid, rows in by_task.items()
    }


def _pointwise_pick(
    name: str, tid: str, rows: list[tuple[int, Any]], labels: list[bool], k: int
) -> Selection:
    """The candidate with the best score among the successful judgements, ties broken by
    the tournaments' rule (``pointwise_ranking``: the lowest index among equal scores); no winner when every judgement failed. The cost
    counts every judgement asked, failed ones included (the ledger reports those)."""
    verdicts = [v for _, v in rows]
    scores: list[float | None] = [None] * k
    for i, v in rows:
        scores[i] = v.values[0] if v.ok and v.values else None
    if all(s is None for s in scores):
        return Selection(
            name, tid, None, 0.0, failure="every pointwise judgement failed", cost=cost_of(verdicts)
        )
    chosen = pointwise_ranking(scores)[0]
    return Selection(
        name, tid, chosen, float(labels[chosen]), cost=cost_of(verdicts), detail={"scores": scores}
    )
