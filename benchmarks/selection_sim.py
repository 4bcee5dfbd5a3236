"""Simulated problems and pairwise judges for benchmarks/selection.py (pure python).

Problem model: a problem's pass rate is drawn from Beta(1.4, 2.1) (mean 0.4); each of
its N candidates is correct with that probability. P(no correct candidate) is then about
0.06 at N = 16, so the oracle (pick a correct one whenever there is one) scores ~0.94,
as in the issue's reference simulation.

Judge model: each comparison rates both candidates 1..10 as
``clip(round(m[label] + bias_i + sigma_c * z), 1, 10)`` with ``m = 7`` for a correct and
``4`` for an incorrect candidate, ``z ~ N(0, 1)`` fresh per rating, and ``bias_i`` a
per-candidate offset fixed for the whole problem (a solution that *looks* right keeps
looking right: ``persistent_share`` of the noise variance). The total noise sd is
calibrated so that on a mixed pair (one correct, one incorrect) the correct candidate gets
the strictly higher rating with probability ``mixed_accuracy``; equal ratings are ties
(outcome 0.5), so confident verdicts carry larger rating gaps, which is what the paper's
confidence weights use. ``failure_rate`` is the chance a comparison returns None
(an unparseable or failed call). ``label_blind`` judges rate every candidate from the same
distribution (m = 5.5), whatever its label.

Judges added for the A/B flip, float ratings and failure rules (the simulated judge sees
each pair in the order the tournament presents it, so a position bias acts on that order):

* ``position_bias`` p, ``biased_position`` "A" or "B": with probability p a verdict
  follows position alone -- the favoured position gets 8, the other 3 (a confident
  verdict, weight 5/9) -- otherwise the normal judge rates the pair.
* ``expected_ratings``: a judge whose score is the expectation of its rating distribution
  (ratings from log-probs). Per comparison the judge forms an impression
  ``x = m[label] + bias_i + sd_x z`` of each candidate; its distribution over rating
  tokens is that of ``clip(round(x + sd_x e), 1, 10)`` (as much token-sampling spread as
  impression noise), and it returns ``E[rating | x] = 1 + sum_{k=1..9} P(x + sd_x e >
  k + 1/2)``, a real number in [1, 10]. ``sd_x`` is calibrated so that the correct
  candidate gets the higher expected rating on ``mixed_accuracy`` of mixed pairs (exact
  ties have probability 0), i.e. as discriminative as the integer judge of that accuracy.
* ``pair_effect`` k: both ratings of one comparison share an offset ``u ~ N(0, (k
  sd)^2)`` (sd the rating noise): a judge that rates a pair higher or lower as a whole,
  so a rating's level says less about its candidate while its difference says as much
  as before (the win probability changes only through clipping at 1 and 10). A judge
  for which ratings are not absolute, to check that a schedule reading the ratings'
  levels holds up when they mean little.
* ``dead_candidate``: one candidate per problem (uniform, from the problem seed, drawn
  after labels and biases so those match the other judges) whose comparisons always fail
  (returns None), e.g. a solution too long for the judge's context.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import lru_cache

PASS_RATE_BETA = (1.4, 2.1)
MEAN_CORRECT = 7.0
MEAN_INCORRECT = 4.0
BLIND_MEAN = 5.5


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def rating_pmf(mean: float, sd: float) -> list[float]:
    """P(rating = k) for k = 1..10 of clip(round(mean + sd * z), 1, 10)."""
    cdf = [_phi((k + 0.5 - mean) / sd) for k in range(1, 10)]  # P(rating <= k), k=1..9
    pmf = [cdf[0]] + [cdf[k] - cdf[k - 1] for k in range(1, 9)] + [1.0 - cdf[8]]
    return pmf


def p_strictly_higher(mean_hi: float, mean_lo: float, sd: float) -> float:
    """P(R_hi > R_lo) for independent ratings with the given means and noise sd."""
    hi, lo = rating_pmf(mean_hi, sd), rating_pmf(mean_lo, sd)
    cum_lo = 0.0
    total = 0.0
    for k in range(10):
        total += hi[k] * cum_lo
        cum_lo += lo[k]
    return total


@lru_cache(maxsize=64)
def p_tie(mean_a: float, mean_b: float, sd: float) -> float:
    """P(R_a == R_b) for independent ratings with the given means and noise sd."""
    return sum(x * y for x, y in zip(rating_pmf(mean_a, sd), rating_pmf(mean_b, sd), strict=True))


def calibrate_sd(mixed_accuracy: float) -> float:
    """Noise sd at which the correct candidate is rated strictly higher on a mixed pair
    with probability ``mixed_accuracy`` (bisection; that probability falls as sd grows)."""
    lo, hi = 0.05, 50.0
    if not p_strictly_higher(MEAN_CORRECT, MEAN_INCORRECT, hi) < mixed_accuracy:
        raise ValueError(f"mixed_accuracy {mixed_accuracy} too low for this judge model")
    if not p_strictly_higher(MEAN_CORRECT, MEAN_INCORRECT, lo) > mixed_accuracy:
        raise ValueError(f"mixed_accuracy {mixed_accuracy} too high for this judge model")
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if p_strictly_higher(MEAN_CORRECT, MEAN_INCORRECT, mid) > mixed_accuracy:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def calibrate_expected_sd(mixed_accuracy: float) -> float:
    """Impression noise sd of the expected-ratings judge: the correct candidate's expected
    rating is higher iff its impression is (E[rating | x] increases with x), so
    P = Phi((m_c - m_i) / (sqrt(2) sd)) and sd = (m_c - m_i) / (sqrt(2) Phi^-1(P))."""
    lo, hi = -10.0, 10.0
    for _ in range(100):  # Phi^-1 by bisection (pure python)
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _phi(mid) < mixed_accuracy else (lo, mid)
    return (MEAN_CORRECT - MEAN_INCORRECT) / (math.sqrt(2.0) * 0.5 * (lo + hi))


def expected_rating(x: float, sd: float) -> float:
    """E[clip(round(x + sd e), 1, 10)], e ~ N(0, 1): 1 + sum_k P(x + sd e > k + 1/2)."""
    c = 1.0 / (sd * math.sqrt(2.0))
    return 1.0 + sum(0.5 * math.erfc((k + 0.5 - x) * c) for k in range(1, 10))


@dataclass(frozen=True)
class JudgeModel:
    """Stated parameters of one simulated judge (see the module docstring)."""

    name: str
    mixed_accuracy: float = 0.8
    persistent_share: float = 0.0
    failure_rate: float = 0.0
    label_blind: bool = False
    blind_sd: float = 2.0
    position_bias: float = 0.0
    biased_position: str = "A"
    expected_ratings: bool = False
    dead_candidate: bool = False
    pair_effect: float = 0.0

    def describe(self) -> str:
        if self.label_blind:
            return f"{self.name}: label-blind, ratings ~ round(5.5 + {self.blind_sd} z)"
        if self.expected_ratings:
            sd = calibrate_expected_sd(self.mixed_accuracy)
            base = (
                f"{self.name}: expected ratings E[clip(round(x + {sd:.3f} e))], impression "
                f"x = m + {sd:.3f} z; P(correct higher | mixed pair) = {self.mixed_accuracy}"
            )
        else:
            sd = calibrate_sd(self.mixed_accuracy)
            base = (
                f"{self.name}: P(correct rated higher | mixed pair) = {self.mixed_accuracy}, "
                f"noise sd = {sd:.3f}, "
                f"P(tie | mixed pair) = {p_tie(MEAN_CORRECT, MEAN_INCORRECT, sd):.3f}"
            )
        extra = [f"persistent share {self.persistent_share}"] if self.persistent_share else []
        if self.failure_rate:
            extra.append(f"failure rate {self.failure_rate}")
        if self.position_bias:
            extra.append(
                f"P(verdict by position alone) = {self.position_bias}, "
                f"favouring {self.biased_position} (8 vs 3)"
            )
        if self.dead_candidate:
            extra.append("one candidate's comparisons always fail")
        if self.pair_effect:
            extra.append(f"pair effect sd = {self.pair_effect} x the rating noise sd")
        return base + ("; " + ", ".join(extra) if extra else "")


@dataclass
class SimProblem:
    """One problem: candidate labels, their persistent biases, and the judge's noise."""

    labels: list[bool]
    means: list[float]
    noise_sd: float
    failure_rate: float
    rng: random.Random
    calls: int = 0
    position_bias: float = 0.0
    biased_position: str = "A"
    expected_ratings: bool = False
    dead: int | None = None
    pair_sd: float = 0.0

    def judge_pairs(self, pairs: list[tuple[int, int]]) -> list[tuple[float, float] | None]:
        """One batched judge call over a round of pairs, each as presented (A, B)."""
        self.calls += 1
        out: list[tuple[float, float] | None] = []
        rng = self.rng
        sd = self.noise_sd
        for a, b in pairs:
            if a == self.dead or b == self.dead:
                out.append(None)
                continue
            if self.failure_rate and rng.random() < self.failure_rate:
                out.append(None)
                continue
            if self.position_bias and rng.random() < self.position_bias:
                out.append((8, 3) if self.biased_position == "A" else (3, 8))
                continue
            shared = self.pair_sd * rng.gauss(0.0, 1.0) if self.pair_sd else 0.0
            xa = self.means[a] + shared + sd * rng.gauss(0.0, 1.0)
            xb = self.means[b] + shared + sd * rng.gauss(0.0, 1.0)
            if self.expected_ratings:
                out.append((expected_rating(xa, sd), expected_rating(xb, sd)))
            else:
                ra, rb = math.floor(xa + 0.5), math.floor(xb + 0.5)
                out.append((min(max(ra, 1), 10), min(max(rb, 1), 10)))
        return out


def make_problem(
    judge: JudgeModel, num_candidates: int, problem_seed: int, judge_seed: int
) -> SimProblem:
    """Labels and biases depend on ``problem_seed`` only, so every schedule sees the same
    candidates; the judge's per-comparison noise depends on ``judge_seed``."""
    prng = random.Random(problem_seed)
    pass_rate = prng.betavariate(*PASS_RATE_BETA)
    labels = [prng.random() < pass_rate for _ in range(num_candidates)]
    if judge.label_blind:
        total_sd = judge.blind_sd
        centre = [BLIND_MEAN] * num_candidates
    elif judge.expected_ratings:
        total_sd = _expected_sd(judge.mixed_accuracy)
        centre = [MEAN_CORRECT if y else MEAN_INCORRECT for y in labels]
    else:
        total_sd = _calibrated_sd(judge.mixed_accuracy)
        centre = [MEAN_CORRECT if y else MEAN_INCORRECT for y in labels]
    bias_sd = total_sd * math.sqrt(judge.persistent_share)
    noise_sd = total_sd * math.sqrt(1.0 - judge.persistent_share)
    means = [c + bias_sd * prng.gauss(0.0, 1.0) for c in centre]
    dead = prng.randrange(num_candidates) if judge.dead_candidate else None
    return SimProblem(
        labels,
        means,
        noise_sd,
        judge.failure_rate,
        random.Random(judge_seed),
        position_bias=judge.position_bias,
        biased_position=judge.biased_position,
        expected_ratings=judge.expected_ratings,
        dead=dead,
        pair_sd=judge.pair_effect * noise_sd,
    )


@lru_cache(maxsize=16)
def _calibrated_sd(mixed_accuracy: float) -> float:
    return calibrate_sd(mixed_accuracy)


@lru_cache(maxsize=16)
def _expected_sd(mixed_accuracy: float) -> float:
    return calibrate_expected_sd(mixed_accuracy)
