"""Tournament selectors (all pairs, Swiss, random pairing, the project's "better" schedule)
over every task, in lock-step: each round of every task's tournament is one judge batch.

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

__all__ = ["TOURNAMENT_SELECTORS", "TaskLedger", "cost_of", "run_tournaments"]

# name -> (tournament function in pairrl.rollout.tournament, budget in multiples of N or None).
# better_2n is the project's default schedule aimed at finding the best (sequential halving
# that reads the ratings through a rating model); halving_2n is plain sequential halving.
TOURNAMENT_SELECTORS: dict[str, tuple[str, int | None]] = {
    "all_pairs": ("all_pairs_tournament", None),
    "swiss_1n": ("swiss_tournament", 1),
    "swiss_2n": ("swiss_tournament", 2),
    "swiss_3n": ("swiss_tournament", 3),
    "random_pairing_2n": ("random_pairing_tournament", 2),
    "better_2n": ("rated_halving_tournament", 2),
    "halving_2n": ("sequential_halving_tournament", 2),
    "ladder_2n": ("ladder_tournament", 2),
}


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
    import pairrl.rollout.tournament as tournament

    func_name, multiple = TOURNAMENT_SELECTORS[name]
    # candidates that exist (sampled, or from a pool); the tournament indexes into these
    usable = [i for i, c in enumerate(run.candidates[tid]) if c.error is None]
    used: list[Verdict] = []
    asked: Counter[tuple[int, int]] = Counter()  # earlier asks of each shown (A, B) pair

    def judge_pairs(pairs: list[tuple[int, int]]) -> list[tuple[float, float] | None]:
        # ``pairs`` come in the order the judge is shown them (the tournament flips A/B
        # on a seeded coin), so records hold the shown order: a is Solution A.
        shown = [(usable[a], usable[b]) for a, b in pairs]
        occurrences = [asked[pair] for pair in shown]
        asked.update(shown)
        verdicts = ask(
            [(task, sols[a], sols[b], o) for (a, b), o in zip(shown, occurrences, strict=True)]
        )
        out: list[tuple[float, float] | None] = []
        for (a, b), v, occurrence in zip(shown, verdicts, occurrences, strict=True):
            used.append(v)
            ledger.account(name, f"pair ({a}, {b})", v)
            ledger.records.append(
                {
                    "kind": "comparison",
                    "selector": name,
                    "task_id": tid,
                    "a": a,
                    "b": b,
                    "ratings": v.values if v.ok else None,
                    "failure": v.failure,
                    "labels": [labels[a], labels[b]],
                    "key": v.key,
                    "occurrence": occurrence,
                }
            )
            ok = v.ok and v.values is not None
            out.append((v.values[0], v.values[1]) if ok else None)  # real ratings, unrounded
        return out

    if not usable:
        return Selection(name, tid, None, 0.0, failure="no candidate was sampled")
    func = getattr(tournament, func_name)
    seed = int(content_key(tid, cfg.judge.seed)[:8], 16)
    n = len(usable)
    budget = None if multiple is None else multiple * n
    result = func(n, judge_pairs, budget, seed=seed)
    cost = cost_of(used)
    mu = {usable[i]: (None if m != m else m) for i, m in enumerate(result.mu)}
    detail = {"mu": [mu.get(i) for i in range(len(sols))], "rounds": result.rounds}
    if result.winner is None:
        return Selection(
            name, tid, None, 0.0, failure=result.no_winner_reason, cost=cost, detail=detail
        )
    chosen = usable[result.winner]
    return Selection(name, tid, chosen, float(labels[chosen]), cost=cost, detail=detail)
