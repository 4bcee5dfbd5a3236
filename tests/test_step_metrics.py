"""Per-step training metrics (``pairrl.train.metrics``) on one batch worked out by hand.

Ratings are normalised (r - 1) / 9, "yes" at >= 0.5, i.e. a rating of 6 or more.

    solution  passed        solution  failed
    J1  correct-incorrect  labels (T, F)  ratings (9, 2)  yes (T, F): 2 of 2 right
    J2  correct-incorrect  labels (F, T)  ratings (7, 8)  yes (T, T): 1 of 2 right
    J3  correct-correct    labels (T, T)  ratings (6, 3)  yes (T, F): 1 of 2 right
    J4  correct-incorrect  unparsed
    one empty slot (no_pair)

Item accuracy on mixed pairs (2 + 1) / 4 = 0.75 (J4 unparsed: not scored), on same-label
pairs 1 / 2; pairs rated both correct: J2 of three parsed pairs; ratings given 9, 2, 7,
8, 6, 3: each a sixth, 1 none. Slots: 4 judgements + 1 empty, 3 of them mixed (0.6);
parse failures 1 of 4; A rated above B on parsed mixed pairs: J1 yes, J2 no (0.5).
"""

from __future__ import annotations

import pytest

from pairrl.rollout.layout import RowRecord
from pairrl.train.metrics import advantage_metrics, step_metrics


def _judgement(kind: str, labels: tuple[bool, bool], ratings: tuple[int, int] | None) -> RowRecord:
    failure = None if ratings is not None else "no rating tags"
    return RowRecord(0, "judgement", 0.5, 10, judged=(0, 1), labels=labels, ratings=ratings,
                     parse_failure=failure, pair_kind=kind)  # fmt: skip


ROWS = [
    RowRecord(0, "solution", 1.0, 20, passed=True, exec_status="pass"),
    RowRecord(0, "solution", 0.0, 30, passed=False, exec_status="wrong"),
    _judgement("correct_incorrect", (True, False), (9, 2)),
    _judgement("correct_incorrect", (False, True), (7, 8)),
    _judgement("correct_correct", (True, True), (6, 3)),
    _judgement("correct_incorrect", (True, False), None),
    RowRecord(0, "no_pair", None),
]


def test_what_the_verification_reward_can_teach_is_logged_per_step() -> None:
    m = step_metrics(ROWS)
    assert m["judge/item_accuracy_mixed_pairs"] == 0.75
    assert m["judge/item_accuracy_same_label_pairs"] == 0.5
    assert m["judge/pairs_rated_both_correct"] == pytest.approx(1 / 3)
    for rating in (2, 3, 6, 7, 8, 9):
        assert m[f"judge/rating_{rating}"] == pytest.approx(1 / 6), rating
    assert m["judge/rating_1"] == 0.0 and m["judge/rating_10"] == 0.0
    assert m["pairrl/pairs_correct_incorrect"] == 0.6 and m["pairrl/pairs_none"] == 0.2
    assert m["pairrl/parse_failure_rate"] == 0.25
    assert m["judge/a_position_win_rate"] == 0.5
    assert m["pairrl/solution_pass_rate"] == 0.5
    assert m["tokens/solution"] == 50.0 and m["tokens/judgement"] == 40.0
    assert m["exec/pass"] == 1.0 and m["exec/wrong"] == 1.0


def test_a_batch_without_parsed_pairs_omits_what_it_cannot_measure() -> None:
    m = step_metrics([ROWS[0], ROWS[5]])
    assert "judge/item_accuracy_mixed_pairs" not in m
    assert "judge/pairs_rated_both_correct" not in m and "judge/rating_5" not in m


def test_the_rows_that_move_the_policy() -> None:
    """Judgements: J1 and J3 off their baseline, J2 and J4 on it (0 advantage); the empty
    slot is not a judgement. Solutions: both off."""
    advantages = [0.5, -0.5, 0.25, 0.0, -0.25, 0.0, 0.0]
    assert advantage_metrics(ROWS, advantages) == {
        "pairrl/judgements_with_advantage": 0.5,
        "pairrl/solutions_with_advantage": 1.0,
    }
    assert advantage_metrics(ROWS[:2], [0.0, 0.0]) == {"pairrl/solutions_with_advantage": 0.0}
