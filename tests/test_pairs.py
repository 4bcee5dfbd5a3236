"""Training-pair construction: eligibility, kinds, A/B order, distinct first, determinism."""

from __future__ import annotations

import itertools

import pytest

from pairrl.rollout.pairs import build_training_pairs, eligible_pairs


def test_hand_worked_one_correct() -> None:
    # [T, F, F]: eligible {0,1}, {0,2} (both correct_incorrect); {1,2} is excluded.
    plan = build_training_pairs([True, False, False], num_pairs=3, seed=0)
    assert not plan.no_eligible_pair and plan.reason is None
    assert plan.num_eligible == 2 and plan.num_repeated == 1
    unordered = [tuple(sorted(p)) for p in plan.pairs]
    assert sorted(unordered[:2]) == [(0, 1), (0, 2)]  # distinct pairs first
    assert unordered[2] in {(0, 1), (0, 2)}
    assert plan.kinds == ["correct_incorrect"] * 3


def test_kinds_and_never_incorrect_incorrect() -> None:
    labels = [True, False, True, False, False, True]
    plan = build_training_pairs(labels, num_pairs=40, seed=3)
    assert len(plan.pairs) == len(plan.kinds) == 40
    for (a, b), kind in zip(plan.pairs, plan.kinds, strict=True):
        assert a != b
        assert labels[a] or labels[b]
        expected = "correct_correct" if labels[a] and labels[b] else "correct_incorrect"
        assert kind == expected


def test_distinct_pairs_before_any_repeat() -> None:
    labels = [True, True, False, False, True]
    n_eligible = len(eligible_pairs(labels))  # 10 pairs minus {2,3} = 9
    assert n_eligible == 9
    plan = build_training_pairs(labels, num_pairs=9, seed=5)
    assert len({tuple(sorted(p)) for p in plan.pairs}) == 9
    plan = build_training_pairs(labels, num_pairs=4, seed=5)
    assert len({tuple(sorted(p)) for p in plan.pairs}) == 4


def test_deterministic_under_seed_and_seed_matters() -> None:
    labels = [True, False, True, False, True, False, False, True]
    a = build_training_pairs(labels, 6, seed=1)
    assert a == build_training_pairs(labels, 6, seed=1)
    others = {tuple(build_training_pairs(labels, 6, seed=s).pairs) for s in range(2, 12)}
    assert len(others) > 1


def test_ab_order_is_randomised() -> None:
    # For correct-incorrect pairs the correct one must be in slot A about half the time.
    labels = [True, False]
    correct_first = sum(
        build_training_pairs(labels, 1, seed=s).pairs[0][0] == 0 for s in range(400)
    )
    assert 150 < correct_first < 250  # binomial(400, 0.5): mean 200, sd 10


@pytest.mark.parametrize(
    ("labels", "needle"),
    [([], "0 candidate"), ([True], "1 candidate"), ([False, False, False], "no correct")],
)
def test_no_eligible_pair_is_explicit(labels: list[bool], needle: str) -> None:
    plan = build_training_pairs(labels, 4, seed=0)
    assert plan.no_eligible_pair and plan.pairs == [] and plan.kinds == []
    assert needle in (plan.reason or "")


def test_zero_pairs_and_bad_count() -> None:
    plan = build_training_pairs([True, False], 0, seed=0)
    assert plan.pairs == [] and not plan.no_eligible_pair
    with pytest.raises(ValueError, match="num_pairs"):
        build_training_pairs([True, False], -1, seed=0)


def test_all_correct_gives_only_correct_correct() -> None:
    plan = build_training_pairs([True] * 4, 6, seed=2)
    assert set(plan.kinds) == {"correct_correct"}
    assert sorted(tuple(sorted(p)) for p in plan.pairs) == list(itertools.combinations(range(4), 2))


def test_mixed_only_pairs_one_candidate_of_each_label() -> None:
    # [T, T, F, T]: correct-incorrect pairs are {0,2}, {1,2}, {2,3}; four slots use all
    # three once, then one again; every judged pair holds the one incorrect candidate 2.
    plan = build_training_pairs([True, True, False, True], 4, seed=1, mixed_only=True)
    assert plan.num_eligible == 3 and plan.num_repeated == 1
    assert set(plan.kinds) == {"correct_incorrect"}
    assert all(2 in pair for pair in plan.pairs)
    assert {tuple(sorted(p)) for p in plan.pairs} == {(0, 2), (1, 2), (2, 3)}


def test_mixed_only_all_correct_has_no_pair_and_says_why() -> None:
    plan = build_training_pairs([True] * 4, 4, seed=0, mixed_only=True)
    assert plan.no_eligible_pair and plan.pairs == []
    assert "no correct-incorrect pair" in (plan.reason or "")
    # the paper's rule on the same group judges correct-correct pairs
    assert not build_training_pairs([True] * 4, 4, seed=0).no_eligible_pair
