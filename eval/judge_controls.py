"""The judge's quality controls and selective verification, beside the judge selectors.

* ``pointwise`` / ``pairwise`` quality (``pairrl.rollout.judge_quality``) over every
  judgement the selectors made, with two controls: a foreign solution (a candidate of
  another task, which must get a "no") and an A/B swap of each task's first comparison.
* ``fixed_pairs`` (``judge.fixed_pairs``): the disjoint pairs (0, 1), (2, 3), ... of every
  task judged once, in that order. On a shared pool of candidates every judge faces the
  same items, so judges (checkpoints) compare on one footing.
* ``<tournament>+sv``: selective verification, no judging where the candidates agree (the
  judge tokens it saves are in the summary's ``cost.selective_savings``).
"""

from __future__ import annotations

from typing import Any

from pairrl.eval.config import EvalConfig
from pairrl.eval.judge_cache import CachedJudge
from pairrl.eval.run_state import EvalRun
from pairrl.eval.selectors import Cost, Selection
from pairrl.eval.tournament_selectors import TOURNAMENT_SELECTORS, TaskLedger
from pairrl.rollout.judge_quality import pairwise_quality, pointwise_quality

__all__ = ["POINTWISE_SELECTORS", "quality_controls", "selective_rows"]

POINTWISE_SELECTORS: dict[str, str] = {
    "pointwise_ab": "ab",
    "pointwise_think": "ab_think",
    "pointwise_rating": "rating",
}
"""Pointwise selector -> the judge's pointwise mode (``CachedJudge.pointwise``): ``ab`` and
``ab_think`` give P(correct) from the A/B logits, ``rating`` the 1-10 rating."""


def selective_rows(
    cfg: EvalConfig, run: EvalRun, selections: dict[str, dict[str, Selection]]
) -> dict[str, dict[str, Selection]]:
    """`<tournament>+sv` rows: skip judging where the candidates already agree (one
    execution-output cluster, or without `agreement` one `majority` answer), or where every
    pointwise P(correct) is confidently on one side; otherwise run the tournament.
    Pre-score calls are charged to the row."""
    agreement = run.selections.get("agreement") or run.selections.get("majority")
    pointwise = selections.get("pointwise_ab")
    rows_by_name: dict[str, dict[str, Selection]] = {}
    if agreement is None and pointwise is None:
        return rows_by_name
    conf = cfg.selective.pointwise_confidence
    for name in [n for n in selections if n in TOURNAMENT_SELECTORS]:
        rows: dict[str, Selection] = {}
        for tid in run.task_ids:
            rows[tid] = _selective_one(name, tid, selections[name][tid], agreement, pointwise, conf)
        rows_by_name[f"{name}+sv"] = rows
    return rows_by_name


def _selective_one(
    name: str, tid: str, base: Selection, agreement: Any, pointwise: Any, conf: float
) -> Selection:
    agree = agreement[tid] if agreement else None
    if agree is not None and agree.detail.get("num_clusters") == 1:
        return Selection(
            f"{name}+sv", tid, agree.chosen, agree.score, detail={"skipped": "one output cluster"}
        )
    cost = Cost()
    if pointwise is not None:
        pre = pointwise[tid]
        cost.add(pre.cost)
        scores = [s for s in pre.detail.get("scores", []) if s is not None]
        if scores and (min(scores) >= conf or max(scores) <= 1 - conf):
            return Selection(
                f"{name}+sv", tid, pre.chosen, pre.score, pre.failure, cost,
                {"skipped": "confident pointwise"},
            )  # fmt: skip
    cost.add(base.cost)
    return Selection(
        f"{name}+sv", tid, base.chosen, base.score, base.failure, cost, {"skipped": None}
    )


def quality_controls(
    cfg: EvalConfig,
    judge: CachedJudge,
    tasks: dict[str, Any],
    run: EvalRun,
    sols: dict[str, list[str]],
    records: list[dict[str, Any]],
    ledgers: dict[str, TaskLedger],
    selectors: set[str],
) -> dict[str, dict[str, Any]]:
    """Judge-quality metrics of every judge selector run, with the controls above."""
    ids = [t for t in run.task_ids if any(c.error is None for c in run.candidates[t])]
    first = {t: next(i for i, c in enumerate(run.candidates[t]) if c.error is None) for t in ids}
    foreign = _foreign(ids, first, sols)
    quality: dict[str, dict[str, Any]] = {}
    if not cfg.judge.controls:
        foreign = {}
    for name, mode in POINTWISE_SELECTORS.items():
        if name not in selectors:
            continue
        recs = [r for r in records if r["kind"] == "pointwise" and r["selector"] == name]
        verdicts = judge.pointwise(mode, [(tasks[t], s) for t, s in foreign.items()])
        foreign_p = []
        for tid, v in zip(foreign, verdicts, strict=True):
            ledgers[tid].account(f"quality:{name}", "foreign solution", v)
            foreign_p.append(v.values[0] if v.ok and v.values else None)
        quality[name] = pointwise_quality(recs, foreign_p, rated=mode == "rating")
    pair_recs = [r for r in records if r["kind"] == "comparison"]
    if pair_recs and cfg.judge.controls:
        quality["pairwise"] = _pairwise_controls(
            judge, tasks, sols, pair_recs, foreign, first, ledgers
        )
    elif pair_recs:
        quality["pairwise"] = pairwise_quality(pair_recs, [], [])
    if cfg.judge.fixed_pairs:
        quality["fixed_pairs"] = _fixed_pairs(judge, tasks, run, sols, records, ledgers)
    return quality


def _foreign(ids: list[str], first: dict[str, int], sols: dict[str, list[str]]) -> dict[str, str]:
    """Per task, the first existing candidate of the next task (a foreign solution)."""
    if len(ids) < 2:
        return {}
    nxt = {tid: ids[(k + 1) % len(ids)] for k, tid in enumerate(ids)}
    return {tid: sols[nxt[tid]][first[nxt[tid]]] for tid in ids}


def _pairwise_controls(
    judge: CachedJudge,
    tasks: dict[str, Any],
    sols: dict[str, list[str]],
    pair_recs: list[dict[str, Any]],
    foreign: dict[str, str],
    first: dict[str, int],
    ledgers: dict[str, TaskLedger],
) -> dict[str, Any]:
    first_by_task: dict[str, dict[str, Any]] = {}
    for r in pair_recs:
        if r["ratings"] is not None:
            first_by_task.setdefault(r["task_id"], r)
    swapped = judge.pairwise(
        [(tasks[t], sols[t][r["b"]], sols[t][r["a"]]) for t, r in first_by_task.items()]
    )
    swaps = []
    for (tid, r), v in zip(first_by_task.items(), swapped, strict=True):
        ledgers[tid].account("quality:pairwise", f"swap ({r['b']}, {r['a']})", v)
        swaps.append((r["ratings"], v.values if v.ok else None))
    as_a = judge.pairwise([(tasks[t], s, sols[t][first[t]]) for t, s in foreign.items()])
    foreign_r = []
    for tid, v in zip(foreign, as_a, strict=True):
        ledgers[tid].account("quality:pairwise", "foreign solution as A", v)
        foreign_r.append(v.values[0] if v.ok and v.values else None)
    return pairwise_quality(pair_recs, swaps, foreign_r)


def _fixed_pairs(
    judge: CachedJudge,
    tasks: dict[str, Any],
    run: EvalRun,
    sols: dict[str, list[str]],
    records: list[dict[str, Any]],
    ledgers: dict[str, TaskLedger],
) -> dict[str, Any]:
    labels = run.bool_labels()
    items = []
    for tid in run.task_ids:
        cands = run.candidates[tid]
        for a in range(0, len(cands) - 1, 2):
            if cands[a].error is None and cands[a + 1].error is None:
                items.append((tid, a, a + 1))
    verdicts = judge.pairwise([(tasks[t], sols[t][a], sols[t][b]) for t, a, b in items])
    fixed = []
    for (tid, a, b), v in zip(items, verdicts, strict=True):
        ledgers[tid].account("quality:fixed_pairs", f"pair ({a}, {b})", v)
        fixed.append(
            {
                "kind": "fixed_pair",
                "task_id": tid,
                "a": a,
                "b": b,
                "ratings": v.values if v.ok else None,
                "failure": v.failure,
                "labels": [labels[tid][a], labels[tid][b]],
                "key": v.key,
            }
        )
    records.extend(fixed)
    return pairwise_quality(fixed, [], [])
