"""Judge-rating parsing, normalisation and the paper's verification reward.

Parsing policy (one place, applied to both the pairwise and the pointwise judge):

* Where the text holds a ``</think>`` marker, only the text after the last one is read:
  a thinking block is reasoning, not the answer, and may quote the tag format.
* A rating is ``<tag>k</tag>`` with tag names matched case-insensitively and any
  whitespace (spaces, tabs, newlines) around ``k`` ignored.
* ``k`` must be a plain decimal integer (``7``, ``07``); signs, decimals, fractions
  (``7/10``) and words are failures ("non-integer"), never rounded or guessed.
* ``k`` must lie in 1..10; anything else is a failure ("out of range").
* A tag may be repeated when every repeat gives the same number (models often restate
  the verdict); repeats with different numbers are a failure ("conflicting"), so hedging
  by emitting several ratings never earns reward.
* A missing tag, or an opening tag never closed, is a failure naming the tag.
* Nothing defaults silently: every failure is a :class:`RatingFailure` with a reason,
  and :func:`verification_reward` turns it into a reward of 0 the caller can count.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

RATING_MIN = 1
RATING_MAX = 10

Normalisation = Literal["minus_one_over_nine", "over_ten"]
NORMALISATIONS: tuple[str, ...] = ("minus_one_over_nine", "over_ten")

# Comparisons at the 0.2 threshold are exact in the paper's arithmetic but not in
# floating point (e.g. |0.8 - 1| = 0.19999999999999996, |0.2 - 0| = 0.2); a tolerance
# far below the 1/90 spacing of normalised ratings keeps boundary cases on the paper's side.
_THRESHOLD_EPS = 1e-9

_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)


@dataclass(frozen=True)
class RatingFailure:
    """A judge output that yields no rating; ``reason`` says why (counted, never a 0.5)."""

    reason: str


def answer_part(text: str) -> str:
    """Return the text after the last ``</think>``, or all of it when there is none.

    >>> answer_part("draft ```python\\nx\\n```</think>\\n\\nfinal")
    '\\n\\nfinal'
    >>> answer_part("no thinking")
    'no thinking'
    """
    matches = list(_THINK_CLOSE.finditer(text))
    return text[matches[-1].end() :] if matches else text


def _parse_tag(text: str, tag: str) -> int | RatingFailure:
    """Read the single integer rating held by ``<tag>..</tag>`` in ``text`` per the policy."""
    pattern = re.compile(rf"<{tag}>(.*?)</{tag}>", re.IGNORECASE | re.DOTALL)
    contents = [m.group(1).strip() for m in pattern.finditer(text)]
    if not contents:
        if re.search(rf"<{tag}>", text, re.IGNORECASE):
            return RatingFailure(f"unclosed <{tag}> tag")
        return RatingFailure(f"missing <{tag}> tag")
    values: list[int] = []
    for content in contents:
        if not re.fullmatch(r"\d+", content):
            return RatingFailure(f"non-integer <{tag}> content {content[:40]!r}")
        value = int(content)
        if not RATING_MIN <= value <= RATING_MAX:
            return RatingFailure(
                f"out of range <{tag}> value {value} (allowed {RATING_MIN}..{RATING_MAX})"
            )
        values.append(value)
    if len(set(values)) > 1:
        return RatingFailure(f"conflicting repeated <{tag}> values {values}")
    return values[0]


def parse_pair_ratings(text: str) -> tuple[int, int] | RatingFailure:
    """Parse a pairwise judgement into ``(r_a, r_b)`` or a :class:`RatingFailure`."""
    answer = answer_part(text)
    rating_a = _parse_tag(answer, "rating_A")
    if isinstance(rating_a, RatingFailure):
        return rating_a
    rating_b = _parse_tag(answer, "rating_B")
    if isinstance(rating_b, RatingFailure):
        return rating_b
    return rating_a, rating_b


def parse_rating(text: str) -> int | RatingFailure:
    """Parse a pointwise judgement ``<rating>k</rating>`` into ``k`` or a failure."""
    return _parse_tag(answer_part(text), "rating")


def normalise_rating(r: float, normalisation: str = "minus_one_over_nine") -> float:
    """Map a rating in [1, 10] to [0, 1]: ``(r-1)/9`` (the paper's) or ``r/10``.

    Ratings are real numbers: an expected rating read from log-probabilities (7.51) keeps
    its fraction; a parsed rating is an integer, the special case.
    """
    if (
        isinstance(r, bool)
        or not isinstance(r, int | float)
        or not RATING_MIN <= r <= RATING_MAX  # also refuses NaN
    ):
        raise ValueError(f"rating must be a number in [{RATING_MIN}, {RATING_MAX}], got {r!r}")
    if normalisation == "minus_one_over_nine":
        return (r - 1) / 9
    if normalisation == "over_ten":
        return r / 10
    raise ValueError(f"normalisation {normalisation!r} unknown; allowed: {list(NORMALISATIONS)}")


def verification_reward(
    ratings: Sequence[float] | RatingFailure,
    labels: Sequence[bool | int],
    threshold: float = 0.2,
    normalisation: str = "minus_one_over_nine",
    class_weights: tuple[float, float] | None = None,
) -> float:
    """Mean over items of ``1(|v-y| <= threshold) * (1 - |v-y|)`` with ``v`` the normalised rating.

    Two items (A, B) give the paper's pair reward; one item gives the pointwise reward.
    A :class:`RatingFailure` (unparseable judgement) earns 0; callers count it separately.
    ``class_weights`` = (weight of an incorrect item, weight of a correct one) multiplies
    each item's term (see :func:`class_balance_weights`); None is the paper's reward.
    """
    if isinstance(ratings, RatingFailure):
        return 0.0
    if len(ratings) != len(labels):
        raise ValueError(f"{len(ratings)} ratings but {len(labels)} labels")
    if not ratings:
        raise ValueError("verification_reward needs at least one rating")
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    total = 0.0
    for rating, label in zip(ratings, labels, strict=True):
        if label not in (0, 1):
            raise ValueError(f"label must be 0/1 or bool, got {label!r}")
        gap = abs(normalise_rating(rating, normalisation) - float(label))
        if gap <= threshold + _THRESHOLD_EPS:
            total += (1.0 - gap) * (class_weights[int(label)] if class_weights else 1.0)
    return total / len(ratings)


def class_balance_weights(labels: Sequence[bool | int]) -> tuple[float, float]:
    """(incorrect, correct) item weights ``n / (2 n_class)`` over a batch's judged items.

    Each class then carries half of the batch's verification reward, whatever its share
    of the items: a judge that accepts everything earns what one that rejects everything
    does, so only telling the two apart pays (the balanced accuracy the benchmark
    reports). Both weights are 1 when a class is absent (nothing to balance).

    >>> class_balance_weights([True, True, True, False])  # 4 items, 1 incorrect
    (2.0, 0.6666666666666666)
    >>> class_balance_weights([True, True])
    (1.0, 1.0)
    """
    n, correct = len(labels), sum(bool(x) for x in labels)
    if correct in (0, n):
        return (1.0, 1.0)
    return (n / (2 * (n - correct)), n / (2 * correct))
