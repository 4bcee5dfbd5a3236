"""The rating model (``pairrl.rollout.strengths``) by hand, and rated halving against
halving and Swiss on simulated judges with and without a pair effect."""

from __future__ import annotations

import math
import random

import pytest

from pairrl.rollout.strengths import pair_effect_weight, rating_strengths
from pairrl.rollout.tournament import (
    rated_halving_tournament,
    sequential_halving_tournament,
    swiss_tournament,
)


def test_rating_strengths_one_comparison_hand_worked() -> None:
    # 0 vs 1 rated (9, 3), prior worth 1 rating at the mean m = 6.
    # rho = 1: diag 2 + 2 = 4, rhs 12 + (9 - 3) + (9 + 3) = 30 -> 7.5; 12 - 6 + 12 = 18 -> 4.5
    assert rating_strengths(2, [(0, 1, 9, 3)], 1.0, rho=1.0) == pytest.approx([7.5, 4.5])
    # rho = 0: [[3, -1], [-1, 3]] s = [18, 6] -> s = [60 / 8, 36 / 8] = [7.5, 4.5]
    assert rating_strengths(2, [(0, 1, 9, 3)], 1.0, rho=0.0) == pytest.approx([7.5, 4.5])


def test_rating_strengths_absolute_levels_against_differences_only() -> None:
    # 0 vs 1 rated (9, 8) and 2 vs 3 rated (3, 2): the same difference, opposite levels.
    comps = [(0, 1, 9.0, 8.0), (2, 3, 3.0, 2.0)]
    # rho = 1, prior 1 rating at m = 5.5: s_i = (2 r_i + 2 * 5.5) / 4
    absolute = rating_strengths(4, comps, 1.0, rho=1.0)
    assert absolute == pytest.approx([7.25, 6.75, 4.25, 3.75])
    # rho = 0: each pair is its own block [[3, -1], [-1, 3]] s = [11 + d, 11 - d], d = 1:
    # s = [(3 * 12 + 10) / 8, (12 + 3 * 10) / 8] = [5.75, 5.25] for both pairs
    relative = rating_strengths(4, comps, 1.0, rho=0.0)
    assert relative == pytest.approx([5.75, 5.25, 5.75, 5.25])
    # no comparison: every candidate at 0, nothing to rank
    assert rating_strengths(3, [], 1.0) == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="rho"):
        rating_strengths(2, comps[:1], 1.0, rho=1.5)


def test_pair_effect_weight_hand_worked() -> None:
    # 0 and 1 compared twice, (8, 6) then (4, 2): each candidate's ratings deviate +-2 from
    # its mean: pooled variance (4 + 4 + 4 + 4) / 2 = 8; leave-one-out products
    # (8 - 4)(6 - 2) = 16 and (4 - 8)(2 - 6) = 16 -> pair variance 16, clipped to 8;
    # noise 0 -> rho = 0: the whole spread moves with the pair.
    assert pair_effect_weight(2, [(0, 1, 8, 6), (0, 1, 4, 2)]) == 0.0
    # 0 meets 1 then 2, rated (8, 6) and (4, 6): 0's ratings 8, 4 (variance 8, 1 dof);
    # 1 and 2 are rated once: not counted. No comparison has both sides rated twice:
    # the pair effect cannot be estimated.
    assert pair_effect_weight(3, [(0, 1, 8, 6), (0, 2, 4, 6)]) == 0.5
    # 0 vs 1 twice with ratings that move independently: (8, 2) then (6, 4):
    # pooled variance (1 + 1 + 1 + 1) / 2 = 2; products (8 - 6)(2 - 4) = -4 and
    # (6 - 8)(4 - 2) = -4 -> clipped to 0: no pair effect, rho = 1
    assert pair_effect_weight(2, [(0, 1, 8, 2), (0, 1, 6, 4)]) == 1.0
    # identical ratings everywhere: nothing to weigh
    assert pair_effect_weight(2, [(0, 1, 5, 5), (0, 1, 5, 5)]) == 1.0


def _sim(rng: random.Random, n: int, pair_sd: float) -> tuple[list[bool], object]:
    """Labels ~ Bernoulli(Beta(1.4, 2.1)); ratings round(7 or 4 + u + 2.1 z), u the pair's
    shared effect ~ N(0, pair_sd^2), clipped to 1..10."""
    p = rng.betavariate(1.4, 2.1)
    labels = [rng.random() < p for _ in range(n)]
    noise = random.Random(rng.random())

    def judge(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
        out = []
        for a, b in pairs:
            u = pair_sd * noise.gauss()
            ra, rb = ((7 if labels[i] else 4) + u + 2.1 * noise.gauss() for i in (a, b))
            out.append(tuple(min(10, max(1, math.floor(r + 0.5))) for r in (ra, rb)))
        return out

    return labels, judge


def _hits(pair_sd: float, problems: int = 300) -> dict[str, int]:
    hits = {"swiss": 0, "halving": 0, "rated": 0}
    schedules = (
        ("swiss", swiss_tournament),
        ("halving", sequential_halving_tournament),
        ("rated", rated_halving_tournament),
    )
    for p in range(problems):
        for name, fn in schedules:
            labels, judge = _sim(random.Random(p), 16, pair_sd)
            res = fn(16, judge, 32, seed=p)
            hits[name] += res.winner is not None and labels[res.winner]
    return hits


def test_rated_halving_reads_absolute_ratings() -> None:
    # No pair effect: a comparison rates both candidates' levels. The benchmark measures
    # ~0.94 (rated halving) vs ~0.93 (halving) vs ~0.87 (Swiss) at 2,000 problems.
    hits = _hits(pair_sd=0.0)
    assert hits["rated"] >= hits["halving"] > hits["swiss"]
    assert hits["rated"] / 300 > 0.9


def test_rated_halving_falls_back_to_differences_under_a_pair_effect() -> None:
    # A pair effect twice the rating noise: a rating's level says little, its difference
    # as much as before. Rated halving stays well above Swiss (a mean-rating pick would not).
    hits = _hits(pair_sd=4.2)
    assert hits["rated"] > hits["swiss"] + 0.03 * 300


def test_rated_halving_contract() -> None:
    # one candidate: it wins without a comparison; every call failing: no winner, a reason
    res = rated_halving_tournament(1, lambda pairs: [], 4)
    assert res.winner == 0 and res.num_comparisons == 0
    res = rated_halving_tournament(6, lambda pairs: [None] * len(pairs), 12)
    assert res.winner is None and "failed" in res.no_winner_reason
    # the winner comes from the final pool and has evidence
    _labels, judge = _sim(random.Random(7), 8, 0.0)
    res = rated_halving_tournament(8, judge, 16, seed=7)
    assert res.degree[res.winner] > 0 and res.num_comparisons <= 16
