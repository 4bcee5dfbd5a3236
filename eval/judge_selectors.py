"""Judge selectors (pointwise A/B, pointwise with thinking, tournaments), selective
verification, and the judge-quality controls (foreign solutions, A/B swaps).

All judge calls go through `CachedJudge`, so the gate's replay re-derives every one of
them from the cache; each requested judgement counts towards its selector's expected
calls, and each missing or failed one becomes an `Issue` with its reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairrl.eval.cache import StageCache, content_key
from pairrl.eval.candidates import Candidate
from pairrl.eval.config import EvalConfig
from pairrl.eval.judge_cache import CachedJudge, Verdict
from pairrl.eval.problems import problem_text
from pairrl.eval.run_state import EvalRun, Issue
from pairrl.eval.selectors import Cost, Selection
from pairrl.rollout.judge_quality import pairwise_quality, pointwise_quality

__all__ = ["TOURNAMENT_SELECTORS", "JudgeOutcome", "judge_solution", "run_judge_selectors"]

POINTWISE_SELECTORS: dict[str, str] = {"pointwise_ab": "ab", "pointwise_think": "ab_think"}
# name -> (tournament function name in pairrl.rollout.tournament, budget in multiples of N or None).
# better_2n is the project's schedule aimed at finding the best (sequential halving).
TOURNAMENT_SELECTORS: dict[str, tuple[str, int | None]] = {
    "all_pairs": ("all_pairs_tournament", None),
    "swiss_1n": ("swiss_tournament", 1),
    "swiss_2n": ("swiss_tournament", 2),
    "swiss_3n": ("swiss_tournament", 3),
    "random_pairing_2n": ("random_pairing_tournament", 2),
    "better_2n": ("sequential_halving_tournament", 2),
}


@dataclass
class JudgeOutcome:
    """Selections, records, quality metrics, issues and expected call counts."""

    selections: dict[str, dict[str, Selection]] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    quality: dict[str, dict[str, Any]] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)
    expected: dict[str, int] = field(default_factory=dict)

    def account(self, stage: str, task_id: str, item: str, verdict: Verdict) -> None:
        """Count one requested judgement and record it if missing or failed."""
        self.expected[stage] = self.expected.get(stage, 0) + 1
        if verdict.missing:
            self.issues.append(
                Issue(stage, task_id, item, "missing", "judgement absent from the cache")
            )
        elif verdict.failure is not None:
            self.issues.append(Issue(stage, task_id, item, "failed", verdict.failure))


def judge_solution(cand: Candidate) -> str:
    """What the judge sees: the executed program in a python fence (the raw completion
    when it held no code, so the judge sees that too)."""
    if cand.code.strip():
        return f"```python\n{cand.code.rstrip()}\n```"
    from pairrl.rollout.prompts import solution_for_judge

    return solution_for_judge(cand.text) if cand.text else "(empty completion)"


def _cost(verdicts: Sequence[Verdict]) -> Cost:
    return Cost(
        judge_calls=len(verdicts),
        failed_calls=sum(1 for v in verdicts if not v.ok),
        prompt_tokens=sum(v.prompt_tokens or 0 for v in verdicts),
        completion_tokens=sum(v.completion_tokens or 0 for v in verdicts),
        wall_s=sum(v.wall_s for v in verdicts),
    )


def build_judge(cfg: EvalConfig, cache_dir: Path, mode: str) -> CachedJudge:
    """The cached judge; the judge model defaults to the generator's model or endpoint."""
    from pairrl.eval.models import make_sampler, model_identity
    from pairrl.rollout.samplers import SamplingParams

    j, c = cfg.judge, cfg.candidates
    model = j.model or (None if j.endpoint else (c.model if c.source == "model" else None))
    endpoint = j.endpoint or (c.endpoint if c.source == "endpoint" and not j.model else None)
    served = j.served_model if j.endpoint else c.served_model
    if not model and not endpoint:
        raise ValueError(
            "judge selectors need judge.model or judge.endpoint (or a generator model/endpoint)"
        )
    sampler = (
        make_sampler(model, endpoint, served, j.http, j.batch_size) if mode == "compute" else None
    )
    sampling = SamplingParams(
        temperature=j.temperature, top_p=j.top_p, max_tokens=j.max_tokens, seed=j.seed
    )
    return CachedJudge(
        identity=model_identity(model, endpoint, served),
        sampler=sampler,
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
    judge = build_judge(cfg, cache_dir, mode)
    labels = run.bool_labels()
    outcome = JudgeOutcome()
    solutions = {t: [judge_solution(c) for c in run.candidates[t]] for t in run.task_ids}
    try:
        for name in names:
            advance = progress(name, len(run.task_ids))
            per_task: dict[str, Selection] = {}
            for tid in run.task_ids:
                problem = problem_text(tasks[tid])
                if name in POINTWISE_SELECTORS:
                    per_task[tid] = _pointwise(
                        name, judge, tid, problem, solutions[tid], labels[tid], outcome
                    )
                else:
                    per_task[tid] = _tournament(
                        cfg, name, judge, tid, problem, solutions[tid], labels[tid], outcome
                    )
                advance(1)
            outcome.selections[name] = per_task
        if cfg.selective.enabled:
            _selective(cfg, run, outcome)
        _quality(cfg, judge, tasks, run, solutions, labels, outcome)
    finally:
        close = getattr(judge.sampler, "close", None)
        if callable(close):
            close()
    return outcome


def _pointwise(
    name: str,
    judge: CachedJudge,
    tid: str,
    problem: str,
    sols: list[str],
    labels: list[bool],
    outcome: JudgeOutcome,
) -> Selection:
    verdicts = judge.pointwise(POINTWISE_SELECTORS[name], [(problem, s) for s in sols])
    scores: list[float | None] = []
    for index, v in enumerate(verdicts):
        outcome.account(name, tid, f"candidate {index}", v)
        outcome.records.append(
            {
                "kind": "pointwise",
                "selector": name,
                "task_id": tid,
                "candidate": index,
                "p_correct": v.values[0] if v.ok and v.values else None,
                "failure": v.failure,
                "label": labels[index],
                "key": v.key,
            }
        )
        scores.append(v.values[0] if v.ok and v.values else None)
    valid = [(s, -i) for i, s in enumerate(scores) if s is not None]
    if not valid:
        return Selection(
            name, tid, None, 0.0, failure="every pointwise judgement failed", cost=_cost(verdicts)
        )
    chosen = -max(valid)[1]
    return Selection(
        name, tid, chosen, float(labels[chosen]), cost=_cost(verdicts), detail={"scores": scores}
    )


def _tournament(
    cfg: EvalConfig,
    name: str,
    judge: CachedJudge,
    tid: str,
    problem: str,
    sols: list[str],
    labels: list[bool],
    outcome: JudgeOutcome,
) -> Selection:
    import pairrl.rollout.tournament as tournament
    from pairrl.rollout.judges import round_rating

    func_name, multiple = TOURNAMENT_SELECTORS[name]
    func = getattr(tournament, func_name)
    n = len(sols)
    used: list[Verdict] = []
    asked: Counter[tuple[int, int]] = Counter()  # earlier asks of each shown (A, B) pair

    def judge_pairs(pairs: list[tuple[int, int]]) -> list[tuple[int, int] | None]:
        occurrences = [asked[pair] for pair in pairs]
        asked.update(pairs)
        verdicts = judge.pairwise([(problem, sols[a], sols[b]) for a, b in pairs], occurrences)
        out: list[tuple[int, int] | None] = []
        for (a, b), v, occurrence in zip(pairs, verdicts, occurrences, strict=True):
            used.append(v)
            outcome.account(name, tid, f"pair ({a}, {b})", v)
            outcome.records.append(
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
            out.append((round_rating(v.values[0]), round_rating(v.values[1])) if ok else None)
        return out

    seed = int(content_key(tid, cfg.judge.seed)[:8], 16)
    budget = None if multiple is None else multiple * n
    result = func(n, judge_pairs, budget, seed=seed)
    cost = _cost(used)
    detail = {"mu": [None if m != m else m for m in result.mu], "rounds": result.rounds}
    if result.winner is None:
        return Selection(
            name, tid, None, 0.0, failure=result.no_winner_reason, cost=cost, detail=detail
        )
    return Selection(
        name, tid, result.winner, float(labels[result.winner]), cost=cost, detail=detail
    )


def _selective(cfg: EvalConfig, run: EvalRun, outcome: JudgeOutcome) -> None:
    """`<tournament>+sv` rows: skip judging where the candidates already agree (one
    execution-output cluster), or where every pointwise P(correct) is confidently on one
    side; otherwise run the tournament. Pre-score calls are charged to the row."""
    agreement = run.selections.get("agreement")
    pointwise = outcome.selections.get("pointwise_ab")
    if agreement is None and pointwise is None:
        return
    conf = cfg.selective.pointwise_confidence
    for name in [n for n in outcome.selections if n in TOURNAMENT_SELECTORS]:
        rows: dict[str, Selection] = {}
        for tid in run.task_ids:
            base = outcome.selections[name][tid]
            agree = agreement[tid] if agreement else None
            if agree is not None and agree.detail.get("num_clusters") == 1:
                rows[tid] = Selection(
                    f"{name}+sv",
                    tid,
                    agree.chosen,
                    agree.score,
                    detail={"skipped": "one output cluster"},
                )
                continue
            cost = Cost()
            if pointwise is not None:
                pre = pointwise[tid]
                cost.add(pre.cost)
                scores = [s for s in pre.detail.get("scores", []) if s is not None]
                if scores and (min(scores) >= conf or max(scores) <= 1 - conf):
                    rows[tid] = Selection(
                        f"{name}+sv",
                        tid,
                        pre.chosen,
                        pre.score,
                        pre.failure,
                        cost,
                        {"skipped": "confident pointwise"},
                    )
                    continue
            cost.add(base.cost)
            rows[tid] = Selection(
                f"{name}+sv", tid, base.chosen, base.score, base.failure, cost, {"skipped": None}
            )
        outcome.selections[f"{name}+sv"] = rows


def _quality(
    cfg: EvalConfig,
    judge: CachedJudge,
    tasks: dict[str, Any],
    run: EvalRun,
    sols: dict[str, list[str]],
    labels: dict[str, list[bool]],
    outcome: JudgeOutcome,
) -> None:
    """Judge-quality metrics, including the foreign-solution and A/B-swap controls."""
    ids = run.task_ids
    foreign = (
        {tid: sols[ids[(i + 1) % len(ids)]][0] for i, tid in enumerate(ids)} if len(ids) > 1 else {}
    )
    for name in POINTWISE_SELECTORS:
        if name not in outcome.selections:
            continue
        recs = [r for r in outcome.records if r["kind"] == "pointwise" and r["selector"] == name]
        foreign_p: list[float | None] = []
        for tid, sol in foreign.items():
            (v,) = judge.pointwise(POINTWISE_SELECTORS[name], [(problem_text(tasks[tid]), sol)])
            outcome.account(f"quality:{name}", tid, "foreign solution", v)
            foreign_p.append(v.values[0] if v.ok and v.values else None)
        outcome.quality[name] = pointwise_quality(recs, foreign_p)
    pair_recs = [r for r in outcome.records if r["kind"] == "comparison"]
    if not pair_recs:
        return
    swaps: list[tuple[list[float] | None, list[float] | None]] = []
    first_by_task: dict[str, dict[str, Any]] = {}
    for r in pair_recs:
        if r["ratings"] is not None:
            first_by_task.setdefault(r["task_id"], r)
    for tid, r in first_by_task.items():
        (v,) = judge.pairwise([(problem_text(tasks[tid]), sols[tid][r["b"]], sols[tid][r["a"]])])
        outcome.account("quality:pairwise", tid, f"swap ({r['b']}, {r['a']})", v)
        swaps.append((r["ratings"], v.values if v.ok else None))
    foreign_r: list[float | None] = []
    for tid, sol in foreign.items():
        (v,) = judge.pairwise([(problem_text(tasks[tid]), sol, sols[tid][0])])
        outcome.account("quality:pairwise", tid, "foreign solution as A", v)
        foreign_r.append(v.values[0] if v.ok and v.values else None)
    outcome.quality["pairwise"] = pairwise_quality(pair_recs, swaps, foreign_r)
