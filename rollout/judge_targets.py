"""Which solutions the verification slots judge (pure, deterministic under a seed).

Pairs (PairRL) come from ``pairrl.rollout.pairs.build_training_pairs``: correct-incorrect and
correct-correct only, A/B order randomised. PointRL judges single solutions; to keep its
signal comparable, the slots alternate correct and incorrect solutions when the group has
both (so a constant rating cannot earn the reward on every slot), and otherwise cycle
through the group's solutions in a seeded random order. Every group is eligible for
pointwise judging: rating a wrong solution low is a correct judgement.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

__all__ = ["pointwise_targets", "step_seed"]


def step_seed(base_seed: int, step: int, group: int) -> int:
    """A seed for one problem group at one step: resumed runs redraw the same pairs."""
    return (base_seed * 1_000_003 + step) * 1_000_033 + group


def pointwise_targets(labels: Sequence[bool], num_targets: int, seed: int) -> list[int]:
    """Indices of the solutions the ``num_targets`` pointwise judgements rate.

    >>> pointwise_targets([True, False, False, True], 4, seed=0)  # alternates classes
    [0, 1, 3, 2]
    """
    if num_targets < 0:
        raise ValueError(f"num_targets must be >= 0, got {num_targets}")
    if not labels:
        raise ValueError("pointwise_targets needs at least one solution")
    rng = random.Random(seed)
    correct = [i for i, y in enumerate(labels) if y]
    wrong = [i for i, y in enumerate(labels) if not y]
    rng.shuffle(correct)
    rng.shuffle(wrong)
    if correct and wrong:
        first, second = (correct, wrong) if rng.random() < 0.5 else (wrong, correct)
        out: list[int] = []
        for k in range(num_targets):
            pool = first if k % 2 == 0 else second
            out.append(pool[(k // 2) % len(pool)])
        return out
    order = correct or wrong
    return [order[k % len(order)] for k in range(num_targets)]
