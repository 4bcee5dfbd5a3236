"""Pairwise selection tournaments: pick the best of N candidates with a pairwise judge.

Entry points (one signature, so callers and ablations can swap them):

    swiss_tournament(num_candidates, judge_pairs, budget, *, d_min=2, window=8, tau=0.1, seed=0)
    random_pairing_tournament(...)   # same signature, random disjoint pairs each round
    all_pairs_tournament(...)        # same signature, every pair once (budget caps it)
    sequential_halving_tournament(...)   # ours, aimed at finding the best; argued in
                                         # pairrl.rollout.schedules

``judge_pairs(pairs)`` judges one round of disjoint ``(a, b)`` pairs as ONE batch and
returns, per pair, the two ratings ``(r_a, r_b)`` (integers 1..10) or ``None`` for a
failed comparison. Every tournament calls it once per round.

Aggregation (the paper's, shared by every schedule):

* outcome ``v_ab`` = 1 / 0.5 / 0 when ``r_a`` > / == / < ``r_b`` (and ``v_ba = 1 - v_ab``);
* confidence weight ``w_ab = max(|r_a - r_b| / 9, tau)``;
* weighted win rate ``mu_i = sum_j w_ij v_ij / sum_j w_ij`` over i's successful comparisons;
* winner = argmax mu; ties by mean rating received, then lowest index (sequential
  halving takes the argmax within its final pool, or the whole field if no finalist has
  a successful comparison).

Failed comparisons (``None``) never enter mu: they are recorded, counted and reported,
never turned into ties. A candidate with no successful comparison has ``mu = nan`` (no
evidence, not a neutral 0.5) and cannot win while another candidate has evidence. When
no comparison succeeds at all (N >= 2) there is no winner and ``no_winner_reason`` says
why. N = 1 needs no comparison: candidate 0 wins with ``mu = [nan]``.
"""

from __future__ import annotations

import math
import numbers
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from pairrl.rollout.schedules import (
    random_matching,
    round_robin_rounds,
    sequential_halving_plan,
    swiss_phase1_pairs,
    swiss_phase2_pairs,
)

Pair = tuple[int, int]
Ratings = tuple[int, int]
JudgePairs = Callable[[list[Pair]], Sequence[Ratings | None]]

RATING_MIN = 1
RATING_MAX = 10
# mu values closer than this are ties (mu is a ratio of float sums; equal records summed
# in a different order can differ in the last bits).
MU_TIE_EPS = 1e-12


# --------------------------------------------------------------------------- aggregation


def pair_outcome(rating_a: int, rating_b: int) -> float:
    """Outcome for A: 1 win, 0.5 tie, 0 loss (B's outcome is 1 minus this)."""
    if rating_a > rating_b:
        return 1.0
    if rating_a == rating_b:
        return 0.5
    return 0.0


def confidence_weight(rating_a: int, rating_b: int, tau: float) -> float:
    """The paper's weight max(|r_a - r_b| / 9, tau): confident verdicts count more."""
    return max(abs(rating_a - rating_b) / 9.0, tau)


class Comparison(NamedTuple):
    """One judged pair: A, B and their ratings; ``ratings`` is None when the judge failed.
    (A NamedTuple rather than a dataclass: tournaments create many, and this is cheaper.)"""

    round_index: int
    a: int
    b: int
    ratings: Ratings | None

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


# ------------------------------------------------------------------------------ the ledger


class _Ledger:
    """Running tournament state; judges rounds and keeps incremental sums for scheduling."""

    def __init__(self, num_candidates: int, judge_pairs: JudgePairs, budget: int, tau: float):
        self.n = num_candidates
        self.judge_pairs = judge_pairs
        self.budget = budget
        self.tau = tau
        self.comparisons: list[Comparison] = []
        self.rounds = 0
        self.degree = [0] * num_candidates  # successful comparisons per candidate
        self.attempts = [0] * num_candidates  # comparisons sent, failed ones included
        self._rating_sum = [0] * num_candidates
        self.seen: set[Pair] = set()  # unordered pairs sent to the judge (failed included)
        self._num = [0.0] * num_candidates
        self._den = [0.0] * num_candidates

    @property
    def remaining(self) -> int:
        return self.budget - len(self.comparisons)

    def schedule_mu(self) -> list[float]:
        """mu for pairing decisions: 0.5 where no evidence yet (scheduling only, never
        reported or used to pick the winner)."""
        return [n / d if d > 0 else 0.5 for n, d in zip(self._num, self._den, strict=True)]

    def schedule_mean_rating(self) -> list[float]:
        """Mean rating received, 0.0 where no evidence (scheduling tie-breaks only)."""
        return [s / d if d else 0.0 for s, d in zip(self._rating_sum, self.degree, strict=True)]

    def play(self, pairs: list[Pair]) -> None:
        """Judge one round (truncated to the remaining budget) with one batched call."""
        pairs = pairs[: self.remaining]
        if not pairs:
            raise RuntimeError("internal error: a round with no pairs would loop forever")
        used: set[int] = set()
        for a, b in pairs:
            if a == b or a in used or b in used or not (0 <= a < self.n and 0 <= b < self.n):
                raise RuntimeError(f"internal error: round pairs not disjoint/valid: {pairs}")
            used.update((a, b))
        verdicts = list(self.judge_pairs(list(pairs)))
        if len(verdicts) != len(pairs):
            raise ValueError(f"judge_pairs returned {len(verdicts)} results for {len(pairs)} pairs")
        for (a, b), verdict in zip(pairs, verdicts, strict=True):
            if verdict is not None:
                verdict = _checked_ratings(verdict)
                ra, rb = verdict
                # confidence_weight and pair_outcome inlined: this loop is the hot path
                w = max(abs(ra - rb) / 9.0, self.tau)
                v = 1.0 if ra > rb else (0.5 if ra == rb else 0.0)
                self._num[a] += w * v
                self._den[a] += w
                self._num[b] += w * (1.0 - v)
                self._den[b] += w
                self.degree[a] += 1
                self.degree[b] += 1
                self._rating_sum[a] += ra
                self._rating_sum[b] += rb
            self.attempts[a] += 1
            self.attempts[b] += 1
            self.comparisons.append(Comparison(self.rounds, a, b, verdict))
            self.seen.add((a, b) if a < b else (b, a))
        self.rounds += 1

    def result(self, schedule: str, final_pool: Sequence[int] | None = None) -> TournamentResult:
        mu = weighted_win_rates(self.n, self.comparisons, self.tau)
        mr = mean_ratings(self.n, self.comparisons)
        if final_pool is not None and all(math.isnan(mu[i]) for i in final_pool):
            final_pool = None  # no finalist has evidence: fall back to the whole field
        ranking = rank_candidates(mu, mr, final_pool)
        winner: int | None = ranking[0]
        reason = None
        if self.n >= 2 and math.isnan(mu[ranking[0]]):
            winner = None
            if not self.comparisons:
                reason = f"no comparison was made (budget {self.budget})"
            else:
                reason = f"all {len(self.comparisons)} comparisons failed"
        return TournamentResult(
            schedule=schedule,
            num_candidates=self.n,
            budget=self.budget,
            winner=winner,
            no_winner_reason=reason,
            mu=mu,
            mean_rating=mr,
            ranking=ranking,
            comparisons=list(self.comparisons),
            rounds=self.rounds,
            degree=list(self.degree),
        )


def _checked_ratings(verdict: object) -> Ratings:
    """The verdict as an ``(int, int)`` tuple, or ValueError: a judge breaking the contract
    is a bug to surface, not a failed comparison to count."""
    if isinstance(verdict, tuple | list) and len(verdict) == 2:
        ra, rb = verdict
        if (
            type(ra) is int
            and type(rb) is int
            and RATING_MIN <= ra <= RATING_MAX
            and RATING_MIN <= rb <= RATING_MAX
        ):
            return (ra, rb)
        if all(
            isinstance(r, numbers.Integral)
            and not isinstance(r, bool)
            and RATING_MIN <= r <= RATING_MAX
            for r in (ra, rb)
        ):
            return (int(ra), int(rb))  # e.g. numpy integers
    raise ValueError(
        f"judge_pairs must return (r_a, r_b) integers in {RATING_MIN}..{RATING_MAX} "
        f"or None for a failed comparison, got {verdict!r}"
    )


def _check_args(num_candidates: int, budget: int, d_min: int, window: int, tau: float) -> None:
    if not isinstance(num_candidates, int) or num_candidates < 1:
        raise ValueError(f"num_candidates must be an integer >= 1, got {num_candidates!r}")
    if not isinstance(budget, int) or budget < 0:
        raise ValueError(f"budget must be an integer >= 0 (comparisons), got {budget!r}")
    if d_min < 0:
        raise ValueError(f"d_min must be >= 0, got {d_min!r}")
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window!r}")
    if not 0.0 < tau <= 1.0:
        raise ValueError(f"tau must lie in (0, 1], got {tau!r}")


# ------------------------------------------------------------------------------ schedules


def swiss_tournament(
    num_candidates: int,
    judge_pairs: JudgePairs,
    budget: int,
    *,
    d_min: int = 2,
    window: int = 8,
    tau: float = 0.1,
    seed: int = 0,
) -> TournamentResult:
    """The paper's Swiss schedule (see DESIGN.md): phase 1 gives every candidate ``d_min``
    successful comparisons (a random disjoint pairing, then lowest-degree candidates meet
    the unseen partner of closest mu); phase 2 pairs candidates in mu order with the
    closest-mu partner among the next ``window``, preferring unseen pairs, until ``budget``
    comparisons have been sent. Winner: argmax mu, ties by mean rating, then index."""
    _check_args(num_candidates, budget, d_min, window, tau)
    rng = random.Random(seed)
    led = _Ledger(num_candidates, judge_pairs, budget, tau)
    if num_candidates >= 2 and budget > 0:
        if d_min > 0:
            led.play(random_matching(list(range(num_candidates)), rng))
        while led.remaining > 0 and min(led.degree) < d_min:
            led.play(swiss_phase1_pairs(led.degree, led.schedule_mu(), led.seen, d_min, rng))
        while led.remaining > 0:
            led.play(swiss_phase2_pairs(led.schedule_mu(), led.seen, window))
    return led.result("swiss")


def random_pairing_tournament(
    num_candidates: int,
    judge_pairs: JudgePairs,
    budget: int,
    *,
    d_min: int = 2,
    window: int = 8,
    tau: float = 0.1,
    seed: int = 0,
) -> TournamentResult:
    """Ablation: each round a fresh uniformly random disjoint pairing, until ``budget``.
    ``d_min`` and ``window`` are accepted for a common signature and unused."""
    _check_args(num_candidates, budget, d_min, window, tau)
    rng = random.Random(seed)
    led = _Ledger(num_candidates, judge_pairs, budget, tau)
    if num_candidates >= 2:
        while led.remaining > 0:
            led.play(random_matching(list(range(num_candidates)), rng))
    return led.result("random_pairing")


def all_pairs_tournament(
    num_candidates: int,
    judge_pairs: JudgePairs,
    budget: int | None = None,
    *,
    d_min: int = 2,
    window: int = 8,
    tau: float = 0.1,
    seed: int = 0,
) -> TournamentResult:
    """Ablation: every unordered pair judged once, in round-robin rounds of disjoint pairs
    (N-1 rounds for even N, N for odd N). ``budget=None`` means all N(N-1)/2 pairs; a
    smaller budget stops after that many pairs (rounds in a seeded random order, so the
    cut does not always fall on the same pairs). ``d_min``/``window`` are unused."""
    total = num_candidates * (num_candidates - 1) // 2 if num_candidates >= 1 else 0
    budget = total if budget is None else budget
    _check_args(num_candidates, budget, d_min, window, tau)
    rng = random.Random(seed)
    led = _Ledger(num_candidates, judge_pairs, budget, tau)
    rounds = round_robin_rounds(num_candidates)
    rng.shuffle(rounds)
    for pairs in rounds:
        if led.remaining <= 0:
            break
        led.play(pairs)
    return led.result("all_pairs")


def sequential_halving_tournament(
    num_candidates: int,
    judge_pairs: JudgePairs,
    budget: int,
    *,
    d_min: int = 2,
    window: int = 8,
    tau: float = 0.1,
    seed: int = 0,
) -> TournamentResult:
    """Our schedule, aimed at *finding the best* rather than ranking everyone (the
    argument is in pairrl.rollout.schedules): stages over pools of N, N/2, ..., 2 candidates,
    an equal number of rounds of disjoint duels inside the pool per stage, then the lower
    half by mu is cut. Same aggregation as Swiss; the winner is the argmax of mu within the
    final pool. ``d_min`` and ``window`` are accepted for a common signature and unused."""
    _check_args(num_candidates, budget, d_min, window, tau)
    rng = random.Random(seed)
    led = _Ledger(num_candidates, judge_pairs, budget, tau)
    pool = sequential_halving_plan(led, rng)
    return led.result("sequential_halving", final_pool=pool)


SCHEDULES: dict[str, Callable[..., TournamentResult]] = {
    "swiss": swiss_tournament,
    "sequential_halving": sequential_halving_tournament,
    "random_pairing": random_pairing_tournament,
    "all_pairs": all_pairs_tournament,
}
"""Tournaments by name (for CLIs and benchmarks); all share one signature."""
