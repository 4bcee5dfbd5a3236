"""Sequential halving: stage sizes and budget split by hand, pairing, the final pool, and
that it beats Swiss on a simulated 80%-accurate judge (the benchmark's headline cell)."""

from __future__ import annotations

import math
import random

from pairrl.rollout.schedules import halving_rounds_per_stage, halving_stage_sizes, pool_matching
from pairrl.rollout.tournament import sequential_halving_tournament, swiss_tournament


def test_stage_sizes() -> None:
    assert halving_stage_sizes(16) == [16, 8, 4, 2]
    assert halving_stage_sizes(9) == [9, 5, 3, 2]
    assert halving_stage_sizes(2) == [2]
    assert halving_stage_sizes(1) == []


def _cost(sizes: list[int], rounds: list[int]) -> int:
    return sum(s // 2 * r for s, r in zip(sizes, rounds, strict=True))


def test_rounds_per_stage_hand_worked() -> None:
    # N=16, B=32: one round of every stage costs 8+4+2+1 = 15 -> 2 rounds each (30); the
    # 2 left: +1 round for the final (cost 1), the 4-pool's round (2) no longer fits, and
    # the last 1 goes to the final too -> [2, 2, 2, 4], spending 16+8+4+4 = 32.
    assert halving_rounds_per_stage([16, 8, 4, 2], 32) == [2, 2, 2, 4]
    # N=5, B=10: costs 2+1+1 = 4 -> 2 each (8); left 2: final +1, 3-pool +1 -> [2, 3, 3].
    assert halving_rounds_per_stage([5, 3, 2], 10) == [2, 3, 3]
    # B below one round of every stage: stages funded in order, never a blind cut.
    assert halving_rounds_per_stage([16, 8, 4, 2], 8) == [1, 0, 0, 0]
    assert halving_rounds_per_stage([16, 8, 4, 2], 13) == [1, 1, 1, 0]
    for n in range(2, 20):
        sizes = halving_stage_sizes(n)
        for b in range(0, 4 * n):
            rounds = halving_rounds_per_stage(sizes, b)
            if b >= sum(s // 2 for s in sizes):  # every stage funded: spends exactly B
                assert _cost(sizes, rounds) == b, (n, b)
            else:  # the last funded round may be cut short by the budget (the ledger truncates)
                assert b <= _cost(sizes, rounds) < b + sizes[0] // 2, (n, b)


def test_pool_matching_rotates_who_sits_out_and_avoids_repeats() -> None:
    rng = random.Random(0)
    attempts = [0] * 10
    attempts[4] = 3  # 4 has played most: with an odd pool it is the one left out
    pairs = pool_matching([1, 4, 6, 8, 9], attempts, set(), rng)
    assert len(pairs) == 2 and 4 not in {x for p in pairs for x in p}
    # with (1, 6) seen, 1 prefers another partner
    pairs = pool_matching([1, 6, 8], [0] * 10, {(1, 6)}, random.Random(1))
    first = next(p for p in pairs if 1 in p)
    assert 6 not in first


def test_winner_comes_from_the_final_pool() -> None:
    # 2 and 3 (rated 9) tie each other in the final, so their mu drops below 1, while a
    # candidate rated 8 that was cut after beating only weaker ones can keep mu = 1. The
    # pick is made among the finalists: always 2 or 3 (argmax over the whole field picks
    # 4 or 5 for several of these seeds).
    scores = [6, 1, 9, 9, 8, 8, 2, 2]

    def judge(pairs: list[tuple[int, int]]) -> list[tuple[int, int] | None]:
        return [(scores[a], scores[b]) for a, b in pairs]

    for seed in range(30):
        res = sequential_halving_tournament(8, judge, 16, seed=seed)
        assert res.num_comparisons == 16
        assert res.winner in {2, 3}, seed


def _sim_problem(rng: random.Random, n: int) -> tuple[list[bool], object]:
    """An ~80%-accurate judge: ratings round(7 or 4 + 2.1 z) clipped to 1..10."""
    labels = [rng.random() < 0.4 for _ in range(n)]
    noise = random.Random(rng.random())

    def judge(pairs: list[tuple[int, int]]) -> list[tuple[int, int] | None]:
        def rate(i: int) -> int:
            return min(10, max(1, math.floor((7 if labels[i] else 4) + 2.1 * noise.gauss() + 0.5)))

        return [(rate(a), rate(b)) for a, b in pairs]

    return labels, judge


def test_halving_beats_swiss_at_2n_on_a_simulated_judge() -> None:
    # 400 problems, N = 16, B = 32 (same problems for both). The benchmark measures
    # ~0.93 vs ~0.87 at 2,000 problems; a margin this large holds at 400 with seeds fixed.
    hits = {"swiss": 0, "halving": 0}
    for p in range(400):
        for name, fn in (("swiss", swiss_tournament), ("halving", sequential_halving_tournament)):
            labels, judge = _sim_problem(random.Random(p), 16)
            res = fn(16, judge, 32, seed=p)
            hits[name] += res.winner is not None and labels[res.winner]
    assert hits["halving"] > hits["swiss"]
    assert hits["halving"] / 400 > 0.88


def test_finalists_without_evidence_fall_back_to_the_whole_field() -> None:
    # Final pool {2, 3} whose comparisons all failed, while 0 beat 1: the pick falls back
    # to the whole field (0) rather than reporting "no winner" while evidence exists.
    from pairrl.rollout.ledger import Ledger as _Ledger

    verdicts = {(0, 1): (9, 1), (2, 3): None}
    led = _Ledger(4, lambda pairs: [verdicts[p] for p in pairs], 2, tau=0.1, flip=False)
    led.play([(0, 1), (2, 3)])
    res = led.result("sequential_halving", final_pool=[2, 3])
    assert res.winner == 0 and res.no_winner_reason is None
    # with evidence in the pool, the pool decides even against a higher mu outside it
    led = _Ledger(4, lambda pairs: [(9, 1), (6, 5)], 2, tau=0.1, flip=False)
    led.play([(0, 1), (2, 3)])
    assert led.result("sequential_halving", final_pool=[2, 3]).winner == 2
