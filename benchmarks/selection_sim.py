"""Simulated problems and pairwise judges for benchmarks/selection.py (pure python).

Problem model: a problem's pass rate is drawn from Beta(1.4, 2.1) (mean 0.4); each of
its N candidates is correct with that probability. P(no correct candidate) is then about
0.06 at N = 16, so the oracle (pick a correct one whenever there is one) scores ~0.94,
a realistic share of problems where selection cannot help.

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


@dataclass(frozen=True)
class JudgeModel:
    """Stated parameters of one simulated judge (see the module docstring)."""

    name: str
    mixed_accuracy: float = 0.8
    persistent_share: float = 0.0
    failure_rate: float = 0.0
    label_blind: bool = False
    blind_sd: float = 2.0

    def describe(self) -> str:
        if self.label_blind:
            return f"{self.name}: label-blind, ratings ~ round(5.5 + {self.blind_sd} z)"
        sd = calibrate_sd(self.mixed_accuracy)
        return (
            f"{self.name}: P(correct rated higher | mixed pair) = {self.mixed_accuracy}, "
            f"persistent share of noise = {self.persistent_share}, "
            f"failure rate = {self.failure_rate}, noise sd = {sd:.3f}, "
            f"P(tie | mixed pair) = {p_tie(MEAN_CORRECT, MEAN_INCORRECT, sd):.3f}"
        )


@dataclass
class SimProblem:
    """One problem: candidate labels, their persistent biases, and the judge's noise."""

    labels: list[bool]
    means: list[float]
    noise_sd: float
    failure_rate: float
    rng: random.Random
    calls: int = 0

    def judge_pairs(self, pairs: list[tuple[int, int]]) -> list[tuple[int, int] | None]:
        """One batched judge call over a round of pairs."""
        self.calls += 1
        out: list[tuple[int, int] | None] = []
        rng = self.rng
        for a, b in pairs:
            if self.failure_rate and rng.random() < self.failure_rate:
                out.append(None)
                continue
            ra = math.floor(self.means[a] + self.noise_sd * rng.gauss(0.0, 1.0) + 0.5)
            rb = math.floor(self.means[b] + self.noise_sd * rng.gauss(0.0, 1.0) + 0.5)
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
    else:
        total_sd = calibrate_sd(judge.mixed_accuracy)
        centre = [MEAN_CORRECT if y else MEAN_INCORRECT for y in labels]
    bias_sd = total_sd * math.sqrt(judge.persistent_share)
    noise_sd = total_sd * math.sqrt(1.0 - judge.persistent_share)
    means = [c + bias_sd * prng.gauss(0.0, 1.0) for c in centre]
    return SimProblem(labels, means, noise_sd, judge.failure_rate, random.Random(judge_seed))
