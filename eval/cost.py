"""What each selector cost beside what it reached: the choice a user makes by budget.

Per selector the summary holds judge calls and tokens (``aggregate.summarise``); this
module adds, over the whole table (``summary["cost"]``):

* ``axis``: ``judge_tokens``, or ``judge_calls`` when some judge call has no token count
  (``unmeasured_calls``), so that no selector looks free because its tokens were not counted;
* ``frontier``: the selectors no other beats, in order of cost: each is more accurate than
  every cheaper one (ties in cost: the more accurate first). ``oracle`` reads the labels
  and is never on it. The cheapest selector that reaches an accuracy is the first frontier
  entry at or above it (:func:`cheapest_reaching`);
* ``selective_savings``: for each ``X+sv`` row, the judge tokens and calls it saved
  against ``X`` (the same tournament judging every task), and the accuracy it gave up.

The full cost (``full_cost``, ``summary["full_cost"]``) adds the generation tokens of the k
candidates, which every selector of a run shares, to each selector's judge tokens, priced
by ``cost`` in the config (input, cached input and output tokens per million). Cached input
is prompt tokens a prefix cache would reuse: a task's k samples share one prompt, so the
first sample's prompt is input and the other k-1 are cached input. The judge's calls on a
task share its statement too, but that shared prefix is not measured, so judge prompts are
priced as uncached input (an upper bound). The no-verifier baseline is generating the k
candidates and picking with no judge call; ``relative_cost`` is a selector's cost over it.
Tokens that were not measured (a pool's candidates, calls without a token count) make the
priced cost n/a, never 0.

``selective_sweep`` replays the ``X+sv`` skip rule at each ``selective.sweep`` confidence
from the run's judgements (no new judge call): accuracy against judge tokens and cost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pairrl.eval.candidates import Candidate
from pairrl.eval.config import CostConfig, EvalConfig
from pairrl.eval.judge_controls import selective_rows
from pairrl.eval.run_state import EvalRun
from pairrl.eval.selectors import Cost, Selection
from pairrl.eval.tournament_selectors import TOURNAMENT_SELECTORS

__all__ = [
    "cheapest_reaching",
    "cost_frontier",
    "cost_summary",
    "full_cost",
    "generation_tokens",
    "price",
    "selective_savings",
    "selective_sweep",
]

Points = Mapping[str, tuple[float, float]]  # selector -> (cost, accuracy)
NOT_SELECTORS = frozenset({"oracle"})  # reads the labels: a ceiling, not a choice
# Recursive self-aggregation's rows pick among candidates they generated themselves: their
# generation is priced per round in the RSA section, not on these per-selector axes
RSA_ROWS = "rsa"


def _on_cost_axes(name: str) -> bool:
    return name not in NOT_SELECTORS and not name.startswith(RSA_ROWS)


def cost_frontier(points: Points) -> list[str]:
    """Selectors more accurate than every cheaper one, cheapest first.

    >>> cost_frontier({"random": (0, 0.5), "agreement": (0, 0.6), "swiss": (900, 0.7),
    ...                "all_pairs": (2000, 0.7), "pointwise": (400, 0.55)})
    ['agreement', 'swiss']
    """
    order = sorted(points, key=lambda name: (points[name][0], -points[name][1]))
    frontier: list[str] = []
    best = float("-inf")
    for name in order:
        if points[name][1] > best:
            frontier.append(name)
            best = points[name][1]
    return frontier


def cheapest_reaching(points: Points, accuracy: float) -> str | None:
    """The cheapest selector whose accuracy is at least ``accuracy`` (None: none is)."""
    for name in cost_frontier(points):
        if points[name][1] >= accuracy:
            return name
    return None


def _tokens(row: Mapping[str, Any]) -> int:
    return int(row["cost"]["prompt_tokens"]) + int(row["cost"]["completion_tokens"])


def selective_savings(selectors: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """For each ``X+sv`` row with ``X`` beside it: tokens and calls saved, and the share."""
    out: dict[str, dict[str, Any]] = {}
    for name, row in selectors.items():
        base = name.removesuffix("+sv")
        if base == name or base not in selectors:
            continue
        full, skipped = _tokens(selectors[base]), _tokens(row)
        calls = selectors[base]["cost"]["judge_calls"] - row["cost"]["judge_calls"]
        acc, base_acc = row["accuracy"]["value"], selectors[base]["accuracy"]["value"]
        out[name] = {
            "base": base,
            "tokens_saved": full - skipped,
            "share_saved": (full - skipped) / full if full else None,
            "calls_saved": calls,
            "accuracy_change": None if acc is None or base_acc is None else acc - base_acc,
        }
    return out


def cost_summary(selectors: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``summary["cost"]`` (see the module docstring) from the per-selector rows."""
    unmeasured = sum(int(row["cost"].get("unmeasured_calls", 0)) for row in selectors.values())
    axis = "judge_tokens" if unmeasured == 0 else "judge_calls"
    points = {
        name: (float(row["cost"][axis]), float(row["accuracy"]["value"]))
        for name, row in selectors.items()
        if _on_cost_axes(name) and row["accuracy"]["value"] is not None
    }
    return {
        "axis": axis,
        "unmeasured_calls": unmeasured,
        "frontier": cost_frontier(points),
        "selective_savings": selective_savings(selectors),
    }


def price(prices: CostConfig, prompt: int, cached: int, completion: int) -> float:
    """The cost of ``prompt`` input, ``cached`` cached-input and ``completion`` output
    tokens at ``prices`` (per million tokens).

    >>> price(CostConfig(input_per_mtok=2.5, cached_input_per_mtok=1.25, output_per_mtok=10),
    ...       400_000, 200_000, 100_000)
    2.25
    """
    per_mtok = (
        prompt * prices.input_per_mtok
        + cached * prices.cached_input_per_mtok
        + completion * prices.output_per_mtok
    )
    return per_mtok / 1e6


def _completion_count(cand: Candidate) -> int | None:
    """A candidate's generated tokens, None when not measured: absent (a pool), or 0 for a
    completion that has text (a server that returned no token ids)."""
    count = cand.meta.get("completion_tokens")
    if not isinstance(count, int) or (count == 0 and cand.text):
        return None
    return count


def generation_tokens(candidates: Mapping[str, Sequence[Candidate]]) -> dict[str, Any]:
    """What sampling the candidates read and wrote (the candidates' ``meta``
    ``prompt_tokens`` and ``completion_tokens``): per task, the first sample's prompt is
    input and each other sample's prompt (the same prompt) is cached input. A count is None
    (not measured) when no candidate has it; ``unmeasured_*`` count the candidates
    without one."""
    total = prompt = cached = completion = no_prompt = no_completion = 0
    for task_candidates in candidates.values():
        prompt_seen = False
        for cand in task_candidates:
            total += 1
            out = _completion_count(cand)
            no_completion += out is None
            completion += out or 0
            count = cand.meta.get("prompt_tokens")
            if not isinstance(count, int):
                no_prompt += 1
            elif prompt_seen:
                cached += count
            else:
                prompt, prompt_seen = prompt + count, True
    return {
        "candidates": total,
        "prompt_tokens": prompt if no_prompt < total else None,
        "cached_prompt_tokens": cached if no_prompt < total else None,
        "completion_tokens": completion if no_completion < total else None,
        "unmeasured_prompts": no_prompt,
        "unmeasured_completions": no_completion,
    }


def _generation_cost(generation: Mapping[str, Any], prices: CostConfig) -> float | None:
    """The priced generation tokens; None unless every candidate's were measured."""
    if not generation["candidates"] or generation["unmeasured_prompts"]:
        return None
    if generation["unmeasured_completions"]:
        return None
    return price(
        prices,
        generation["prompt_tokens"],
        generation["cached_prompt_tokens"],
        generation["completion_tokens"],
    )


def _priced(cost: Mapping[str, Any], prices: CostConfig, baseline: float | None) -> dict[str, Any]:
    """A selector's judge cost, full cost (generation + judge) and full cost over the
    no-verifier baseline; each None where some of its tokens were not measured."""
    judge = (
        None
        if cost["unmeasured_calls"]
        else price(prices, cost["prompt_tokens"], 0, cost["completion_tokens"])
    )
    total = None if judge is None or baseline is None else baseline + judge
    return {
        "judge_cost": judge,
        "cost": total,
        "relative_cost": total / baseline if total is not None and baseline else None,
    }


def full_cost(
    selectors: Mapping[str, Mapping[str, Any]],
    generation: Mapping[str, Any],
    prices: CostConfig,
) -> dict[str, Any]:
    """``summary["full_cost"]`` (see the module docstring) from the per-selector rows and
    the candidates' ``generation_tokens``."""
    baseline = _generation_cost(generation, prices)
    return {
        "prices": prices.model_dump(),
        "generation": {**generation, "cost": baseline},
        "baseline_cost": baseline,
        "selectors": {
            name: _priced(row["cost"], prices, baseline)
            for name, row in selectors.items()
            if not name.startswith(RSA_ROWS)
        },
    }


def _sweep_point(
    per_task: Mapping[str, Selection], prices: CostConfig, baseline: float | None
) -> dict[str, Any]:
    """One ``X+sv`` row at one threshold: accuracy, judge calls and tokens, the share of
    tasks judged at all, and its priced cost."""
    total = Cost()
    for sel in per_task.values():
        total.add(sel.cost)
    scores = [sel.score for sel in per_task.values()]
    measured = any(sel.failure is None for sel in per_task.values())
    judged = sum(1 for sel in per_task.values() if sel.cost.judge_calls > 0)
    tokens = {
        "unmeasured_calls": total.unmeasured_calls,
        "prompt_tokens": total.prompt_tokens,
        "completion_tokens": total.completion_tokens,
    }
    return {
        "accuracy": sum(scores) / len(scores) if measured else None,
        "judge_calls": total.judge_calls,
        "judge_tokens": total.prompt_tokens + total.completion_tokens,
        "verification_rate": judged / len(per_task) if per_task else None,
        **tokens,
        **_priced(tokens, prices, baseline),
    }


def _at_confidence(cfg: EvalConfig, confidence: float) -> EvalConfig:
    selective = cfg.selective.model_copy(update={"pointwise_confidence": confidence})
    return cfg.model_copy(update={"selective": selective})


def selective_sweep(run: EvalRun, baseline: float | None) -> dict[str, Any] | None:
    """The ``X+sv`` rows replayed at every ``selective.sweep`` confidence (and the
    configured one) from the run's selections: no judge call is made. None when selective
    verification is off or has no confidence to vary (no ``pointwise_ab`` pre-scores, or
    no tournament)."""
    cfg = run.config
    tournaments = [n for n in run.selections if n in TOURNAMENT_SELECTORS]
    if not cfg.selective.enabled or "pointwise_ab" not in run.selections or not tournaments:
        return None
    rows = []
    for confidence in sorted({*cfg.selective.sweep, cfg.selective.pointwise_confidence}):
        swept = selective_rows(_at_confidence(cfg, confidence), run, run.selections)
        skipped = Counter(
            sel.detail.get("skipped") for sel in swept[f"{tournaments[0]}+sv"].values()
        )
        rows.append(
            {
                "threshold": confidence,
                "skipped_one_cluster": skipped["one output cluster"],
                "skipped_confident": skipped["confident pointwise"],
                "to_tournament": skipped[None],
                "selectors": {
                    name: _sweep_point(per_task, cfg.cost, baseline)
                    for name, per_task in swept.items()
                },
            }
        )
    unmeasured = any(p["unmeasured_calls"] for r in rows for p in r["selectors"].values())
    return {
        "configured": cfg.selective.pointwise_confidence,
        "axis": "judge_calls" if unmeasured else "judge_tokens",
        "tasks": len(run.task_ids),
        "rows": rows,
    }
