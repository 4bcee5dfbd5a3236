"""Judge quality from recorded judgements: balanced accuracy, AUROC, yes-rate against the
true correct rate, foreign-solution reject rate and A/B swap consistency.

A pointwise "yes" is P(correct) >= 0.5; a pairwise rating r says "yes" when its
normalised value (r - 1) / 9 >= 0.5, i.e. r >= 5.5. A foreign solution (a candidate for
another task) is rejected when the judge says "no" to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pairrl.eval.metrics import auroc, balanced_accuracy, swap_consistency

__all__ = ["pairwise_quality", "pointwise_quality"]

RATING_YES = 5.5


def _binary(scores: list[float], labels: list[bool], threshold: float) -> dict[str, Any]:
    yes = [s >= threshold for s in scores]
    return {
        "judgements": len(scores),
        "balanced_accuracy": balanced_accuracy(yes, labels),
        "auroc": auroc(scores, labels),
        "yes_rate": sum(yes) / len(yes) if yes else None,
        "true_correct_rate": sum(labels) / len(labels) if labels else None,
    }


def _reject(values: Sequence[float | None], threshold: float) -> dict[str, Any]:
    ok = [v for v in values if v is not None]
    return {
        "foreign_checked": len(ok),
        "foreign_failed": len(values) - len(ok),
        "foreign_reject_rate": sum(v < threshold for v in ok) / len(ok) if ok else None,
    }


def pointwise_quality(
    records: Sequence[dict[str, Any]], foreign: Sequence[float | None]
) -> dict[str, Any]:
    """Quality of a pointwise P(correct) judge from its `pointwise` records."""
    ok = [r for r in records if r["p_correct"] is not None]
    out = _binary([r["p_correct"] for r in ok], [r["label"] for r in ok], 0.5)
    out["failed"] = len(records) - len(ok)
    out.update(_reject(foreign, 0.5))
    return out


def pairwise_quality(
    records: Sequence[dict[str, Any]],
    swaps: Sequence[tuple[list[float] | None, list[float] | None]],
    foreign: Sequence[float | None],
) -> dict[str, Any]:
    """Quality of the pairwise judge from every `comparison` record (each side's rating
    is one judgement of that candidate), the swap re-judgements and the foreign checks.

    swaps: (ratings judged as (x, y), ratings judged as (y, x)); a consistent judge
    prefers the same candidate both times.
    """
    seen: set[str] = set()
    scores: list[float] = []
    labels: list[bool] = []
    mixed_right = 0.0
    mixed = 0
    failed = 0
    for r in records:
        if r["key"] in seen:
            continue  # the same judgement reused by several selectors counts once
        seen.add(r["key"])
        if r["ratings"] is None:
            failed += 1
            continue
        ra, rb = r["ratings"]
        la, lb = r["labels"]
        scores += [ra, rb]
        labels += [la, lb]
        if la != lb:
            mixed += 1
            mixed_right += 1.0 if (ra > rb) == la and ra != rb else (0.5 if ra == rb else 0.0)
    out = _binary(scores, labels, RATING_YES)
    out["failed"] = failed
    out["mixed_pairs"] = mixed
    out["mixed_pair_accuracy"] = mixed_right / mixed if mixed else None
    forward: list[int] = []
    backward: list[int] = []
    for fwd, bwd in swaps:
        if fwd is None or bwd is None:
            continue
        forward.append(_sign(fwd[0] - fwd[1]))
        backward.append(_sign(bwd[1] - bwd[0]))  # (y, x) mapped back to the (x, y) frame
    out["swap_pairs"] = len(forward)
    out["swap_consistency"] = swap_consistency(forward, backward)
    out.update(_reject(foreign, RATING_YES))
    return out


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)
