"""Judge quality, one definition for training metrics, the benchmark and the recipes.

A *judged item* is one candidate inside a judgement (two per pairwise judgement, one per
pointwise): its true label and the judge's score for it, a number in [0, 1] (a rating
normalised with ``pairrl.rewards.normalise_rating``, or a pointwise P(correct)). The
judge says "yes" to an item when its score is >= ``YES_CUT`` (0.5: a rating >= 5.5 on
the paper's (r - 1) / 9 scale).

How failed judgements count (the one rule): a judgement that yielded no score (an
unparseable, truncated or failed call) never enters balanced accuracy, AUROC or the
yes-rate, which measure what the judge says when it says something; it is counted, and
every report shows the failure count beside those numbers, so a judge that fails often
cannot hide behind an accuracy computed on its few answers. (The benchmark's gate
refuses a run whose failures exceed its tolerance.)

All functions are pure and take plain values; the tests check them against hand-worked
numbers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from pairrl.rewards import normalise_rating

__all__ = [
    "YES_CUT",
    "auroc",
    "balanced_accuracy",
    "balanced_accuracy_from_counts",
    "class_counts",
    "comparison_class_counts",
    "item_quality",
    "pairwise_quality",
    "pointwise_quality",
    "swap_consistency",
]

YES_CUT = 0.5


def balanced_accuracy(predicted: Sequence[bool], actual: Sequence[bool]) -> float | None:
    """(TPR + TNR) / 2; None when either class is absent from `actual`."""
    return balanced_accuracy_from_counts(*class_counts(predicted, actual))


def class_counts(predicted: Sequence[bool], actual: Sequence[bool]) -> tuple[int, int, int, int]:
    """(true positives, positives, true negatives, negatives) of yes/no answers."""
    pred = np.asarray(predicted, dtype=bool)
    act = np.asarray(actual, dtype=bool)
    return int((pred & act).sum()), int(act.sum()), int((~pred & ~act).sum()), int((~act).sum())


def balanced_accuracy_from_counts(
    true_positives: int, positives: int, true_negatives: int, negatives: int
) -> float | None:
    """(TPR + TNR) / 2 from the four counts; None when either class is empty.

    Worked example: 3 of 4 positives and 1 of 2 negatives judged right: (0.75 + 0.5) / 2.

    >>> balanced_accuracy_from_counts(3, 4, 1, 2), balanced_accuracy_from_counts(3, 4, 0, 0)
    (0.625, None)
    """
    if positives == 0 or negatives == 0:
        return None
    return (true_positives / positives + true_negatives / negatives) / 2.0


def auroc(scores: Sequence[float], actual: Sequence[bool]) -> float | None:
    """Area under the ROC curve as the Mann-Whitney probability that a random positive
    outscores a random negative (ties count 1/2); None when a class is absent."""
    s = np.asarray(scores, dtype=float)
    act = np.asarray(actual, dtype=bool)
    pos, neg = s[act], s[~act]
    if len(pos) == 0 or len(neg) == 0:
        return None
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return float((greater + 0.5 * ties) / (len(pos) * len(neg)))


def swap_consistency(forward: Sequence[int], swapped: Sequence[int]) -> float | None:
    """Fraction of pairs whose preference survives swapping A and B.

    Preferences are signs: +1 prefers the first-named candidate, -1 the second, 0 tie.
    `forward[i]` is judged as (x, y); `swapped[i]` as (y, x) and already mapped back to
    the (x, y) frame by the caller, so a consistent judge has forward == swapped.
    """
    if len(forward) != len(swapped):
        raise ValueError("forward and swapped must have equal length")
    if not forward:
        return None
    same = sum(1 for f, s in zip(forward, swapped, strict=True) if f == s)
    return same / len(forward)


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def item_quality(scores: Sequence[float | None], labels: Sequence[bool]) -> dict[str, Any]:
    """Quality over judged items; ``None`` scores are failed judgements (see the module doc).

    Worked example: scores (0.9, 0.1, 0.8, None) for labels (T, F, F, T): the judged items
    say yes, no, yes; TPR 1/1, TNR 1/2, balanced accuracy 0.75; yes-rate 2/3; AUROC: the
    positive 0.9 beats both negatives -> 1.0; one failed item.

    >>> q = item_quality([0.9, 0.1, 0.8, None], [True, False, False, True])
    >>> (q["balanced_accuracy"], q["auroc"], round(q["yes_rate"], 3), q["failed_items"])
    (0.75, 1.0, 0.667, 1)
    """
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores but {len(labels)} labels")
    judged = [(s, bool(y)) for s, y in zip(scores, labels, strict=True) if s is not None]
    values = [s for s, _ in judged]
    truth = [y for _, y in judged]
    yes = [s >= YES_CUT for s in values]
    positives = sum(truth)
    return {
        "items": len(judged),
        "failed_items": len(scores) - len(judged),
        "balanced_accuracy": balanced_accuracy(yes, truth),
        "true_positive_rate": _ratio(
            sum(y and t for y, t in zip(yes, truth, strict=True)), positives
        ),
        "true_negative_rate": _ratio(
            sum(not y and not t for y, t in zip(yes, truth, strict=True)), len(truth) - positives
        ),
        "auroc": auroc(values, truth),
        "yes_rate": _ratio(sum(yes), len(yes)),
        "true_correct_rate": _ratio(positives, len(truth)),
    }


def _reject(values: Sequence[float | None]) -> dict[str, Any]:
    """Foreign-solution control: a candidate of another task must get a "no"."""
    ok = [v for v in values if v is not None]
    return {
        "foreign_checked": len(ok),
        "foreign_failed": len(values) - len(ok),
        "foreign_reject_rate": sum(v < YES_CUT for v in ok) / len(ok) if ok else None,
    }


def _headline(quality: dict[str, Any]) -> dict[str, Any]:
    keys = ("balanced_accuracy", "auroc", "yes_rate", "true_correct_rate")
    return {"judgements": quality["items"], **{k: quality[k] for k in keys}}


def pointwise_quality(
    records: Sequence[dict[str, Any]], foreign: Sequence[float | None], *, rated: bool = False
) -> dict[str, Any]:
    """Quality of a pointwise judge from its ``pointwise`` records and the foreign-solution
    checks (None where the judgement failed). A P(correct) judge's records hold
    ``p_correct`` and ``foreign`` holds P(correct); with ``rated`` the records hold
    ``rating`` and ``foreign`` holds ratings, both on 1..10, each scored
    ``normalise_rating(r)`` = (r - 1) / 9."""
    if rated:
        scores = [_rating_score(r["rating"]) for r in records]
        foreign = [_rating_score(v) for v in foreign]
    else:
        scores = [r["p_correct"] for r in records]
    quality = item_quality(scores, [r["label"] for r in records])
    out = _headline(quality)
    out["failed"] = quality["failed_items"]
    out.update(_reject(foreign))
    return out


def _rating_score(rating: float | None) -> float | None:
    return None if rating is None else normalise_rating(rating)


def _normalised(ratings: Sequence[float]) -> list[float]:
    return [normalise_rating(r) for r in ratings]


def pairwise_quality(
    records: Sequence[dict[str, Any]],
    swaps: Sequence[tuple[list[float] | None, list[float] | None]],
    foreign: Sequence[float | None],
) -> dict[str, Any]:
    """Quality of the pairwise judge from every ``comparison`` record (each side's rating
    is one judgement of that candidate; ``ratings`` None when it failed; records sharing a
    ``key`` are one judgement reused and count once), the swap re-judgements and the
    foreign checks (ratings of a foreign solution).

    swaps: (ratings judged as (x, y), ratings judged as (y, x)); a consistent judge
    prefers the same candidate both times.
    """
    scores: list[float | None] = []
    labels: list[bool] = []
    mixed_right = 0.0
    mixed = 0
    failed = 0
    for r in _unique_judgements(records):
        if r["ratings"] is None:
            failed += 1
            continue
        ra, rb = r["ratings"]
        la, lb = r["labels"]
        scores += _normalised((ra, rb))
        labels += [la, lb]
        if la != lb:
            mixed += 1
            mixed_right += 1.0 if (ra > rb) == la and ra != rb else (0.5 if ra == rb else 0.0)
    out = _headline(item_quality(scores, labels))
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
    out.update(_reject([None if v is None else normalise_rating(v) for v in foreign]))
    return out


def comparison_class_counts(records: Sequence[dict[str, Any]]) -> tuple[int, int, int, int]:
    """(true positives, positives, true negatives, negatives) of the judged items of
    ``comparison`` records, counted as :func:`pairwise_quality` counts them (records sharing
    a ``key`` once, failed judgements not at all), for balanced accuracies of many subsets
    of the records (:func:`balanced_accuracy_from_counts` of summed counts).

    Worked example: ratings (9, 2) for labels (T, F) are a true positive and a true
    negative; (8, 7) for (F, T) two yeses: a false positive and a true positive; the same
    key again and a failed judgement add nothing.

    >>> comparison_class_counts([
    ...     {"key": "a", "ratings": [9, 2], "labels": [True, False]},
    ...     {"key": "b", "ratings": [8, 7], "labels": [False, True]},
    ...     {"key": "a", "ratings": [9, 2], "labels": [True, False]},
    ...     {"key": "c", "ratings": None, "labels": [True, True]}])
    (2, 2, 1, 2)
    """
    judged = [r for r in _unique_judgements(records) if r["ratings"] is not None]
    yes = [s >= YES_CUT for r in judged for s in _normalised(r["ratings"])]
    return class_counts(yes, [bool(label) for r in judged for label in r["labels"]])


def _unique_judgements(records: Sequence[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The records in order, each ``key`` once (records sharing a key are one judgement)."""
    seen: set[str] = set()
    for r in records:
        if r["key"] not in seen:
            seen.add(r["key"])
            yield r


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)
