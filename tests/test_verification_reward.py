"""The paper's verification reward, checked against numbers worked by hand."""

from __future__ import annotations

import pytest

from pairrl.rewards import RatingFailure, verification_reward


def test_correct_rated_ten_earns_one() -> None:
    # v = (10-1)/9 = 1, y = 1, |v-y| = 0 <= 0.2 -> 1 - 0 = 1.
    assert verification_reward([10], [True]) == 1.0


def test_correct_rated_nine_earns_eight_ninths() -> None:
    # v = 8/9, |v-y| = 1/9 = 0.111 <= 0.2 -> 1 - 1/9 = 8/9.
    assert verification_reward([9], [1]) == pytest.approx(8 / 9)


def test_correct_rated_eight_earns_nothing() -> None:
    # v = 7/9, |v-y| = 2/9 = 0.222 > 0.2 -> 0.
    assert verification_reward([8], [1]) == 0.0


def test_incorrect_rated_one_earns_one() -> None:
    # v = 0, y = 0 -> 1.
    assert verification_reward([1], [False]) == 1.0


def test_incorrect_rated_two_earns_eight_ninths() -> None:
    # v = 1/9, y = 0, gap 1/9 -> 8/9.
    assert verification_reward([2], [0]) == pytest.approx(8 / 9)


def test_safe_bet_five_five_earns_nothing() -> None:
    # v = 4/9 for both. Correct: gap 5/9 > 0.2; incorrect: gap 4/9 > 0.2 -> (0 + 0) / 2 = 0.
    assert verification_reward([5, 5], [1, 0]) == 0.0


def test_pair_reward_is_the_mean_of_the_two_items() -> None:
    # A correct rated 10 -> 1; B incorrect rated 2 -> 8/9; pair = (1 + 8/9) / 2 = 17/18.
    assert verification_reward((10, 2), (True, False)) == pytest.approx(17 / 18)


def test_pair_with_one_confident_mistake() -> None:
    # A correct rated 10 -> 1; B correct rated 1 -> gap 1 > 0.2 -> 0; pair = 1/2.
    assert verification_reward((10, 1), (1, 1)) == pytest.approx(0.5)


def test_over_ten_boundary_counts_at_exactly_the_threshold() -> None:
    # r/10: correct rated 8 -> v = 0.8, gap 0.2 <= 0.2 (boundary included) -> 0.8, although
    # 1 - 0.8 = 0.19999999999999996 in floating point; rated 7 -> gap 0.3 -> 0.
    assert verification_reward([8], [1], normalisation="over_ten") == pytest.approx(0.8)
    assert verification_reward([7], [1], normalisation="over_ten") == 0.0
    # incorrect rated 2 -> v = 0.2, gap 0.2 -> 0.8; rated 1 -> v = 0.1 -> 0.9.
    assert verification_reward([2], [0], normalisation="over_ten") == pytest.approx(0.8)
    assert verification_reward([1], [0], normalisation="over_ten") == pytest.approx(0.9)


def test_wider_threshold_admits_rating_eight() -> None:
    # threshold 0.25: correct rated 8, gap 2/9 = 0.222 <= 0.25 -> 7/9.
    assert verification_reward([8], [1], threshold=0.25) == pytest.approx(7 / 9)


def test_parse_failure_earns_zero() -> None:
    assert verification_reward(RatingFailure("missing <rating_A> tag"), [1, 0]) == 0.0


@pytest.mark.parametrize(
    ("ratings", "labels"),
    [([10], [1, 0]), ([], []), ([10], [2]), ([0], [1]), ([10], [1.0000001])],
)
def test_bad_inputs_raise(ratings: list[int], labels: list[object]) -> None:
    with pytest.raises(ValueError):
        verification_reward(ratings, labels)  # type: ignore[arg-type]
