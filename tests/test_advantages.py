"""PairRL / PointRL / GRPO advantages against hand-worked numbers."""

from __future__ import annotations

import math

import pytest

from pairrl.rollout.layout import check_group_order, group_layout
from pairrl.train.advantages import EPS_STD, compute_advantages

S, J, N = "solution", "judgement", "no_pair"

# A PairRL batch of 3 problems, G = 8 = 4 solutions + 4 judgement slots.
#   p0: solutions pass 1,0,0,1; two eligible pairs judged (rewards 0.9, 0.1), two empty slots
#   p1: every solution fails -> no eligible pair -> four empty slots
#   p2: solutions pass 1,1,1,0; four pairs judged (rewards 1.0, 0.9, 0.8, 0.5)
GROUPS = [0] * 8 + [1] * 8 + [2] * 8
TYPES = [S] * 4 + [J, J, N, N] + [S] * 4 + [N] * 4 + [S] * 4 + [J] * 4
REWARDS = [
    1.0,
    0.0,
    0.0,
    1.0,
    0.9,
    0.1,
    None,
    None,
    0.0,
    0.0,
    0.0,
    0.0,
    None,
    None,
    None,
    None,
    1.0,
    1.0,
    1.0,
    0.0,
    1.0,
    0.9,
    0.8,
    0.5,
]
# Solutions, per-problem mean: p0 0.5 -> +-0.5; p1 0 -> 0; p2 0.75 -> 0.25 x3, -0.75.
SOLUTION_ADV = {0: [0.5, -0.5, -0.5, 0.5], 1: [0.0] * 4, 2: [0.25, 0.25, 0.25, -0.75]}


def _expected(judge_p0: list[float], judge_p2: list[float]) -> list[float]:
    return (
        SOLUTION_ADV[0]
        + judge_p0
        + [0.0, 0.0]
        + SOLUTION_ADV[1]
        + [0.0] * 4
        + SOLUTION_ADV[2]
        + judge_p2
    )


def test_pairrl_batch_baseline() -> None:
    # Judgement rewards 0.9, 0.1, 1.0, 0.9, 0.8, 0.5: sum 4.2 over 6 rows -> baseline 0.7.
    got = compute_advantages(GROUPS, TYPES, REWARDS, lambda_ver=1.0, judgement_baseline="batch")
    assert got == pytest.approx(_expected([0.2, -0.6], [0.3, 0.2, 0.1, -0.2]))


def test_pairrl_problem_baseline() -> None:
    # p0 judgement mean (0.9 + 0.1) / 2 = 0.5; p2 mean 3.2 / 4 = 0.8.
    got = compute_advantages(GROUPS, TYPES, REWARDS, lambda_ver=1.0, judgement_baseline="problem")
    assert got == pytest.approx(_expected([0.4, -0.4], [0.2, 0.1, 0.0, -0.3]))


def test_lambda_scales_only_judgement_rows() -> None:
    # lambda = 0.5 halves the batch-baseline judgement advantages; solutions unchanged.
    got = compute_advantages(GROUPS, TYPES, REWARDS, lambda_ver=0.5)
    assert got == pytest.approx(_expected([0.1, -0.3], [0.15, 0.1, 0.05, -0.1]))
    zero = compute_advantages(GROUPS, TYPES, REWARDS, lambda_ver=0.0)
    assert zero == pytest.approx(_expected([0.0, 0.0], [0.0] * 4))


def test_rows_without_pair_get_zero_advantage() -> None:
    got = compute_advantages(GROUPS, TYPES, REWARDS)
    empty = [a for a, t in zip(got, TYPES, strict=True) if t == N]
    assert len(empty) == 6
    assert all(a == 0.0 for a in empty)


def test_pointrl_batch() -> None:
    # PointRL: one problem, solutions 1,0,1,0 (mean 0.5); 4 pointwise judgements with
    # rewards 0.9, 1.0, 0.0, 0.8 (mean 0.675) -> 0.225, 0.325, -0.675, 0.125.
    groups = [0] * 8
    types = [S] * 4 + [J] * 4
    rewards = [1.0, 0.0, 1.0, 0.0, 0.9, 1.0, 0.0, 0.8]
    got = compute_advantages(groups, types, rewards)
    assert got == pytest.approx([0.5, -0.5, 0.5, -0.5, 0.225, 0.325, -0.675, 0.125])


def test_grpo_mode_matches_trl_formula() -> None:
    # GRPO: 2 problems x 4 solutions; TRL with scale_rewards='none' gives r - group mean.
    torch = pytest.importorskip("torch")
    rewards = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    got = compute_advantages([0] * 4 + [1] * 4, [S] * 8, rewards)
    t = torch.tensor(rewards)
    trl = t - t.view(-1, 4).mean(dim=1).repeat_interleave(4)
    assert got == pytest.approx(trl.tolist())
    assert got == pytest.approx([0.75, -0.25, -0.25, -0.25, 0.25, 0.25, -0.75, 0.25])


def test_group_scaling_uses_bessel_std() -> None:
    # p0 solutions 1,0,0,1: mean 0.5, sample std sqrt(4 * 0.25 / 3) = 0.57735.
    got = compute_advantages([0] * 4, [S] * 4, [1.0, 0.0, 0.0, 1.0], scale="group")
    expected = 0.5 / (math.sqrt(1 / 3) + EPS_STD)
    assert got == pytest.approx([expected, -expected, -expected, expected])
    # A constant group has std 0: advantages 0, never a division by zero.
    flat = compute_advantages([0] * 4, [S] * 4, [1.0] * 4, scale="group")
    assert flat == [0.0] * 4


def test_batch_scaling_per_sample_type() -> None:
    # Judgement rewards 0.9, 0.1 (std sqrt(0.32) = 0.565685) with lambda 2:
    # A = 2 * (+-0.4) / (0.565685 + 1e-4).
    groups = [0] * 6
    types = [S, S, S, S, J, J]
    rewards = [1.0, 0.0, 0.0, 1.0, 0.9, 0.1]
    got = compute_advantages(groups, types, rewards, lambda_ver=2.0, scale="batch")
    judge = 2 * 0.4 / (math.sqrt(0.32) + EPS_STD)
    assert got[4:] == pytest.approx([judge, -judge])


@pytest.mark.parametrize(
    ("types", "rewards", "match"),
    [
        ([S, N], [1.0, 0.5], "no_pair row with reward"),
        ([S, J], [1.0, None], "judgement row with reward None"),
        ([S, J], [1.0, float("nan")], "judgement row with reward nan"),
        ([S, "other"], [1.0, 1.0], "unknown sample type"),
    ],
)
def test_inconsistent_rows_are_rejected(types: list[str], rewards: list, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        compute_advantages([0, 0], types, rewards)


def test_group_layout_and_order() -> None:
    assert group_layout(4, 4, 2) == [S] * 4 + [J, J, N, N]
    assert group_layout(8, 0, 0) == [S] * 8
    with pytest.raises(ValueError, match="num_pairs"):
        group_layout(4, 4, 5)
    check_group_order([0, 0, 1, 1], 2)
    with pytest.raises(ValueError, match="mix groups"):
        check_group_order([0, 1, 1, 1], 2)


def test_sample_type_weights_hand_worked() -> None:
    from pairrl.train.advantages import sample_type_weights

    # Tokens: solutions 10 + 30 = 40, judgements 60, no_pair 0 -> N = 100.
    # Solutions get 100 / 40 = 2.5, the judgement 100 / 60, the no_pair row 0.
    weights = sample_type_weights(["solution", "solution", "judgement", "no_pair"], [10, 30, 60, 0])
    assert weights == pytest.approx([2.5, 2.5, 100 / 60, 0.0])
    # With the weights, each type's summed token weight equals N: one token mean per type.
    assert pytest.approx(60 * 100 / 60) == 10 * 2.5 + 30 * 2.5
    with pytest.raises(ValueError, match="token counts"):
        sample_type_weights(["solution"], [1, 2])
