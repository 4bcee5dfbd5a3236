"""Per-step training metrics from the batch's row records (pure; gathered rows in, dict out).

Judge quality follows ``pairrl.rollout.judge_quality`` (the benchmark's definition): a
judged item is one solution inside a judgement (2 per pair, 1 pointwise), "yes" when its
normalised rating is >= 0.5, and unparsed judgements are counted in
``pairrl/parse_failure_rate`` rather than scored. What the verification reward can teach
is logged beside (``_judge_signal``): the judge's item accuracy on mixed
(correct-incorrect) and on same-label (correct-correct) pairs separately, the share of
pairs it rates both correct, its ratings' histogram, and (``advantage_metrics``) the share
of judgement rows whose advantage is not zero, the rows that carry a gradient. Metrics
whose denominator is empty are omitted rather than reported as 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pairrl.rewards import normalise_rating
from pairrl.rewards.ratings import RATING_MAX, RATING_MIN
from pairrl.rollout.judge_quality import item_quality
from pairrl.rollout.layout import JUDGEMENT, NO_PAIR, SOLUTION, UNLABELLED, RowRecord

__all__ = ["advantage_metrics", "step_metrics"]


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def step_metrics(
    rows: Sequence[RowRecord], normalisation: str = "minus_one_over_nine"
) -> dict[str, float]:
    """Metrics for one step: pass rate, verification reward, judge quality, pair mix, tokens."""
    solutions = [r for r in rows if r.sample_type == SOLUTION]
    judgements = [r for r in rows if r.sample_type == JUDGEMENT]
    empty = [r for r in rows if r.sample_type == NO_PAIR]
    unlabelled = [r for r in rows if r.sample_type == UNLABELLED]
    slots = len(judgements) + len(empty)
    out: dict[str, float | None] = {
        "pairrl/solution_pass_rate": _ratio(sum(bool(r.passed) for r in solutions), len(solutions)),
        "pairrl/solution_reward": _ratio(sum(r.reward or 0.0 for r in solutions), len(solutions)),
        "pairrl/verification_reward": _ratio(
            sum(r.reward or 0.0 for r in judgements), len(judgements)
        ),
        "pairrl/parse_failure_rate": _ratio(
            sum(r.parse_failure is not None for r in judgements), len(judgements)
        ),
        "pairrl/pairs_correct_incorrect": _ratio(
            sum(r.pair_kind == "correct_incorrect" for r in judgements), slots
        ),
        "pairrl/pairs_correct_correct": _ratio(
            sum(r.pair_kind == "correct_correct" for r in judgements), slots
        ),
        "pairrl/pairs_none": _ratio(len(empty), slots),
        "pairrl/no_pair_rows": float(len(empty)) if slots else None,
        "pairrl/problems_without_pair": float(
            len({r.group for r in empty} - {r.group for r in judgements})
        )
        if slots
        else None,
        "pairrl/unlabelled_solutions": float(len(unlabelled)),
        "tokens/solution": float(sum(r.completion_tokens for r in solutions)),
        "tokens/judgement": float(sum(r.completion_tokens for r in judgements)),
    }
    out.update(_judge_quality(judgements, normalisation))
    out.update(_judge_signal(judgements, normalisation))
    out.update(_position_bias(judgements))
    executed = solutions + unlabelled
    for status, count in sorted(Counter(r.exec_status or "unknown" for r in executed).items()):
        out[f"exec/{status}"] = float(count)
    return {k: float(v) for k, v in out.items() if v is not None}


def _judge_quality(judgements: Sequence[RowRecord], normalisation: str) -> dict[str, float | None]:
    """Balanced accuracy, yes-rate and true correct rate over judged items
    (``pairrl.rollout.judge_quality``: unparsed judgements are counted, not scored)."""
    scores: list[float | None] = []
    labels: list[bool] = []
    for row in judgements:
        for n, label in enumerate(row.labels):
            rating = None if row.ratings is None else row.ratings[n]
            scores.append(None if rating is None else normalise_rating(rating, normalisation))
            labels.append(label)
    quality = item_quality(scores, labels)
    return {
        "judge/balanced_accuracy": quality["balanced_accuracy"],
        "judge/yes_rate": quality["yes_rate"],
        "judge/true_correct_rate": quality["true_correct_rate"],
        "judge/items": float(quality["items"]),
    }


def _position_bias(judgements: Sequence[RowRecord]) -> dict[str, float | None]:
    """On parsed correct-incorrect pairs: how often A is rated above B (ties count half)."""
    wins = 0.0
    pairs = 0
    for row in judgements:
        if row.pair_kind != "correct_incorrect" or row.ratings is None or len(row.ratings) != 2:
            continue
        pairs += 1
        ra, rb = row.ratings
        wins += 1.0 if ra > rb else 0.5 if ra == rb else 0.0
    return {"judge/a_position_win_rate": _ratio(wins, pairs)}


def _judge_signal(judgements: Sequence[RowRecord], normalisation: str) -> dict[str, float | None]:
    """On parsed judgements: the share of judged items the judge gets right (yes on a
    correct solution, no on an incorrect one) per pair kind, the share of pairs it rates
    both correct, and each rating's share of all ratings given."""
    right = {"correct_incorrect": [0, 0], "correct_correct": [0, 0]}  # [right, items]
    both_yes = pairs = 0
    ratings: Counter[int] = Counter()
    for row in judgements:
        if row.ratings is None:
            continue
        ratings.update(row.ratings)
        yes = [normalise_rating(r, normalisation) >= 0.5 for r in row.ratings]
        if len(yes) == 2:
            pairs += 1
            both_yes += all(yes)
        if row.pair_kind in right:
            right[row.pair_kind][0] += sum(
                y == label for y, label in zip(yes, row.labels, strict=True)
            )
            right[row.pair_kind][1] += len(yes)
    given = sum(ratings.values())
    out: dict[str, float | None] = {
        "judge/item_accuracy_mixed_pairs": _ratio(*right["correct_incorrect"]),
        "judge/item_accuracy_same_label_pairs": _ratio(*right["correct_correct"]),
        "judge/pairs_rated_both_correct": _ratio(both_yes, pairs),
    }
    for rating in range(RATING_MIN, RATING_MAX + 1):
        out[f"judge/rating_{rating}"] = _ratio(ratings[rating], given)
    return out


def advantage_metrics(rows: Sequence[RowRecord], advantages: Sequence[float]) -> dict[str, float]:
    """The share of judgement rows, and of solution rows, whose advantage is not zero: the
    rows that move the policy (a judgement whose reward equals the baseline teaches
    nothing)."""
    out = {}
    for kind, name in ((JUDGEMENT, "judgements"), (SOLUTION, "solutions")):
        mine = [a for r, a in zip(rows, advantages, strict=True) if r.sample_type == kind]
        share = _ratio(sum(abs(a) > 1e-12 for a in mine), len(mine))
        if share is not None:
            out[f"pairrl/{name}_with_advantage"] = share
    return out
