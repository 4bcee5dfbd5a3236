"""Tournament selectors (all pairs, Swiss, random pairing, rated halving)
over every task, in lock-step: each round of every task's tournament is one judge batch.
Each selector is a schedule at a budget per candidate, by name in
``pairrl.rollout.schedule_registry.TOURNAMENT_SELECTORS``.

A candidate whose sampling failed takes no part: it is never shown to the judge (its
failure is already counted by the gate's sample stage), and the tournament runs on the
task's other candidates. Each task's records and accounting are collected on their own
and merged in task order, so the run's files do not depend on thread timing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pairrl.eval.cache import content_key
from pairrl.eval.config import EvalConfig
from pairrl.eval.judge_cache import CachedJudge, Verdict
from pairrl.eval.run_state import EvalRun, Issue
from pairrl.eval.selectors import Cost, Selection
from pairrl.rollout.lockstep import run_in_lockstep
from pairrl.rollout.schedule_registry import TOURNAMENT_SELECTORS, get_tournament_selector

__all__ = ["TOURNAMENT_SELECTORS", "TaskLedger", "cost_of", "run_tournaments"]


@dataclass
class TaskLedger:
    """One task's judge accounting: expected calls, issues, records (merged in task order)."""

    task_id: str
    expected: Counter[str] = field(default_factory=Counter)
    issues: list[Issue] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)

    def account(self, stage: str, item: str, verdict: Verdict) -> None:
        """Count one requested judgement and record it if missing or failed."""
        self.expected[stage] += 1
        if verdict.missing:
            self.issues.append(
                Issue(stage, self.task_id, item, "missing", "judgement absent from the cache")
            )
        elif verdict.failure is not None:
            self.issues.append(Issue(stage, self.task_id, item, "failed", verdict.failure))


def cost_of(verdicts: list[Verdict]) -> Cost:
    """What a list of judgements cost (calls, failures, tokens, seconds)."""
    return Cost(
        judge_calls=len(verdicts),
        failed_calls=sum(1 for v in verdicts if not v.ok),
        prompt_tokens=sum(v.prompt_tokens or 0 for v in verdicts),
        completion_tokens=sum(v.completion_tokens or 0 for v in verdicts),
        wall_s=sum(v.wall_s for v in verdicts),
        unmeasured_calls=sum(
            1
            for v in verdicts
            if not v.missing and (v.prompt_tokens is None or v.completion_tokens is None)
        ),
    )


def run_tournaments(
    cfg: EvalConfig,
    name: str,
    judge: CachedJudge,
    tasks: dict[str, Any],
    run: EvalRun,
    solutions: dict[str, list[str]],
    ledgers: dict[str, TaskLedger],
    advance: Callable[[int], None],
) -> dict[str, Selection]:
    """Selector ``name`` on every task, rounds batched across tasks; selections by task."""
    tids = run.task_ids
    labels = run.bool_labels()

    def batch(requests: list[tuple[int, Any]]) -> list[Verdict]:
        asks = [item for _, item in requests]
        return judge.pairwise([a[:3] for a in asks], [a[3] for a in asks])

    def work(p: int, ask: Callable[[list[Any]], list[Any]]) -> Selection:
        tid = tids[p]
        return _one_task(
            cfg, name, tid, tasks[tid], run, solutions[tid], labels[tid], ledgers[tid], ask
        )

    selections = run_in_lockstep(len(tids), work, batch, on_done=lambda _p: advance(1))
    return dict(zip(tids, selections, strict=True))


def _one_task(
    cfg: EvalConfig,
    name: str,
    tid: str,
    task: Any,
    run: EvalRun,
    sols: list[str],
    labels: list[bool],
    ledger: TaskLedger,
    ask: Callable[[list[Any]], list[Verdict]],
) -> Selection:
    selector = get_tournament_selector(name)
    # candidates that exist (sampled, or from a pool); the tournament indexes into these
    usable = [i for i, c in enumerate(run.candidates[tid]) if c.error is None]
    if not usable:
        return Selection(name, tid, None, 0.0, failure="no candidate was sampled")
    judge_pairs = _PairJudge(name, tid, task, sols, labels, ledger, ask, usable)
    seed = int(content_key(tid, cfg.judge.seed)[:8], 16)
    result = selector.run(len(usable), judge_pairs, seed=seed)
    cost = cost_of(judge_pairs.used)
    mu = {usable[i]: (None if m != m else m) for i, m in enumerate(result.mu)}
    detail = {"mu": [mu.get(i) for i in range(len(sols))], "rounds": result.rounds}
    if result.winner is None:
        return Selection(
            name, tid, None, 0.0, failure=result.no_winner_reason, cost=cost, detail=detail
        )
    chosen = usable[result.winner]
    return Selection(name, tid, chosen, float(labels[chosen]), cost=cost, detail=detail)


@dataclass
class _PairJudge:
    """One task's ``judge_pairs`` for a tournament over its ``usable`` candidates: asks the
    judge, accounts and records every verdict, and keeps the verdicts used (its cost)."""

    name: str
    tid: str
    task: Any
    sols: list[str]
    labels: list[bool]
    ledger: TaskLedger
    ask: Callable[[list[Any]], list[Verdict]]
    usable: list[int]
    used: list[Verdict] = field(default_factory=list)
    asked: Counter[tuple[int, int]] = field(default_factory=Counter)  # earlier asks per pair

    def __call__(self, pairs: list[tuple[int, int]]) -> list[tuple[float, float] | None]:
        """Ratings per pair (real, unrounded), or None for a failed comparison."""
        # ``pairs`` come in the order the judge is shown them (the tournament flips A/B
        # on a seeded coin), so records hold the shown order: a is Solution A.
        shown = [(self.usable[a], self.usable[b]) for a, b in pairs]
        occurrences = [self.asked[pair] for pair in shown]
        self.asked.update(shown)
        verdicts = self.ask(
            [
                (self.task, self.sols[a], self.sols[b], o)
                for (a, b), o in zip(shown, occurrences, strict=True)
            ]
        )
        out: list[tuple[float, float] | None] = []
        for (a, b), v, occurrence in zip(shown, verdicts, occurrences, strict=True):
            self.used.append(v)
            self.ledger.account(self.name, f"pair ({a}, {b})", v)
            self.ledger.records.append(self._record(a, b, v, occurrence))
            ok = v.ok and v.values is not None
            out.append((v.values[0], v.values[1]) if ok else None)
        return out

    def _record(self, a: int, b: int, v: Verdict, occurrence: int) -> dict[str, Any]:
        return {
            "kind": "comparison",
            "selector": self.name,
            "task_id": self.tid,
            "a": a,
            "b": b,
            "ratings": v.values if v.ok else None,
            "failure": v.failure,
            "labels": [self.labels[a], self.labels[b]],
            "key": v.key,
            "occurrence": occurrence,
        }
