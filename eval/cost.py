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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["cheapest_reaching", "cost_frontier", "cost_summary", "selective_savings"]

Points = Mapping[str, tuple[float, float]]  # selector -> (cost, accuracy)
NOT_SELECTORS = frozenset({"oracle"})  # reads the labels: a ceiling, not a choice


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
        if name not in NOT_SELECTORS and row["accuracy"]["value"] is not None
    }
    return {
        "axis": axis,
        "unmeasured_calls": unmeasured,
        "frontier": cost_frontier(points),
        "selective_savings": selective_savings(selectors),
    }
