"""How pairwise verdicts become a ranking (the paper's aggregation, shared by every schedule).

* outcome ``v_ab`` = 1 / 0.5 / 0 when ``r_a`` > / == / < ``r_b`` (and ``v_ba = 1 - v_ab``);
* confidence weight ``w_ab = max(|r_a - r_b| / 9, tau)``;
* weighted win rate ``mu_i = sum_j w_ij v_ij / sum_j w_ij`` over i's successful comparisons;
* ranking by mu, then mean rating received, then lowest index.

Ratings are real numbers in [1, 10] (integer ratings, or expected ratings read from the
judge's log-probabilities): nothing is rounded before aggregation. Failed comparisons
never enter mu; a candidate with no successful comparison has ``mu = nan`` (no evidence,
not a neutral 0.5).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

Pair = tuple[int, int]
Rating = float  # an int rating is the special case
Ratings = tuple[Rating, Rating]

RATING_MIN = 1
RATING_MAX = 10
# mu values closer than this are ties (mu is a ratio of float sums; equal records summed
# in a different order can differ in the last bits).
MU_TIE_EPS = 1e-12


# --------------------------------------------------------------------------- aggregation


def pair_outcome(rating_a: Rating, rating_b: Rating) -> float:
    """Outcome for A: 1 win, 0.5 tie, 0 loss (B's outcome is 1 minus this)."""
    if rating_a > rating_b:
        return 1.0
    if rating_a == rating_b:
        return 0.5
    return 0.0


def confidence_weight(rating_a: Rating, rating_b: Rating, tau: float) -> float:
    """The paper's weight max(|r_a - r_b| / 9, tau): confident verdicts count more."""
    return max(abs(rating_a - rating_b) / 9.0, tau)


class Comparison(NamedTuple):
    """One judged pair: A, B and their ratings; ``ratings`` is None when the judge failed.
    ``swapped``: the judge was shown ``(b, a)`` (ratings are mapped back to ``(r_a, r_b)``).
    (A NamedTuple rather than a dataclass: tournaments create many, and this is cheaper.)"""

    round_index: int
    a: int
    b: int
    ratings: Ratings | None
    swapped: bool = False

    @property
    def failed(self) -> bool:
        return self.ratings is None


def weighted_win_rates(
    num_candidates: int, comparisons: Sequence[Comparison], tau: float
) -> list[float]:
    """mu_i = sum w v / sum w over i's successful comparisons; nan where there are none."""
    num = [0.0] * num_candidates
    den = [0.0] * num_candidates
    for c in comparisons:
        if c.ratings is None:
            continue
        ra, rb = c.ratings
        w = confidence_weight(ra, rb, tau)
        v = pair_outcome(ra, rb)
        num[c.a] += w * v
        den[c.a] += w
        num[c.b] += w * (1.0 - v)
        den[c.b] += w
    return [n / d if d > 0 else math.nan for n, d in zip(num, den, strict=True)]


def mean_ratings(num_candidates: int, comparisons: Sequence[Comparison]) -> list[float]:
    """Mean rating each candidate received over its successful comparisons (nan if none)."""
    total = [0.0] * num_candidates
    count = [0] * num_candidates
    for c in comparisons:
        if c.ratings is None:
            continue
        total[c.a] += c.ratings[0]
        count[c.a] += 1
        total[c.b] += c.ratings[1]
        count[c.b] += 1
    return [t / n if n else math.nan for t, n in zip(total, count, strict=True)]


def rank_candidates(
    mu: Sequence[float], mean_rating: Sequence[float], eligible: Sequence[int] | None = None
) -> list[int]:
    """Candidates best first: mu desc, then mean rating desc, then index asc.

    Candidates with no evidence (mu nan) come last, by index. ``eligible`` restricts the
    ranking (a schedule's final pool); the others follow in the same order.
    """
    pool = set(range(len(mu)) if eligible is None else eligible)

    def key(i: int) -> tuple[int, int, float, float, int]:
        has_mu = not math.isnan(mu[i])
        mr = mean_rating[i] if not math.isnan(mean_rating[i]) else -math.inf
        # Quantise mu so float noise below MU_TIE_EPS cannot break a real tie.
        q = round(mu[i] / MU_TIE_EPS) if has_mu else 0
        return (i not in pool, not has_mu, -q, -mr, i)

    return sorted(range(len(mu)), key=key)


@dataclass(frozen=True)
class TournamentResult:
    """Outcome of one tournament; ``winner`` is None only with a ``no_winner_reason``.

    ``mu`` and ``mean_rating`` are per candidate (nan: no successful comparison);
    ``ranking`` lists candidates best first (a schedule's final pool first);
    ``comparisons`` holds every pair sent, failed ones with ``ratings=None``; ``rounds``
    is the number of batched judge calls; ``degree`` counts successful comparisons.
    """

    schedule: str
    num_candidates: int
    budget: int
    winner: int | None
    no_winner_reason: str | None
    mu: list[float]
    mean_rating: list[float]
    ranking: list[int]
    comparisons: list[Comparison]
    rounds: int
    degree: list[int] = field(repr=False)

    @property
    def num_comparisons(self) -> int:
        """Pairs sent to the judge (failures included); never exceeds ``budget``."""
        return len(self.comparisons)

    @property
    def num_failed(self) -> int:
        return sum(c.failed for c in self.comparisons)

    @property
    def num_judged(self) -> int:
        """Successful comparisons (the ones that enter mu)."""
        return self.num_comparisons - self.num_failed


def checked_ratings(verdict: object) -> Ratings:
    """The verdict as an ``(r_a, r_b)`` tuple of ints or floats in [1, 10], or ValueError:
    a judge breaking the contract is a bug to surface, not a failed comparison to count.
    Python ints and floats pass through unchanged; numpy scalars become int / float."""
    if isinstance(verdict, tuple | list) and len(verdict) == 2:
        ra, rb = verdict
        ta, tb = type(ra), type(rb)
        if (ta is int or ta is float) and (tb is int or tb is float):
            # NaN fails both comparisons, so it is rejected here too
            if RATING_MIN <= ra <= RATING_MAX and RATING_MIN <= rb <= RATING_MAX:
                return (ra, rb)
        elif all(isinstance(r, numbers.Real) and not isinstance(r, bool) for r in (ra, rb)):
            pair = tuple(int(r) if isinstance(r, numbers.Integral) else float(r) for r in (ra, rb))
            if all(RATING_MIN <= r <= RATING_MAX for r in pair):
                return pair  # e.g. numpy integers or floats
    raise ValueError(
        f"judge_pairs must return (r_a, r_b) ratings in {RATING_MIN}..{RATING_MAX} "
        f"(int or float) or None for a failed comparison, got {verdict!r}"
    )
