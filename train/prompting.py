"""The rollout's prompt kit, wired to ``pairrl.rollout.prompts`` and ``pairrl.rollout.pairs``."""

from __future__ import annotations

from collections.abc import Sequence

from pairrl.rewards.tasks import Task
from pairrl.rollout.pairs import PairPlan
from pairrl.train.rollout_func import PromptKit

__all__ = ["default_prompt_kit"]


def default_prompt_kit() -> PromptKit:
    """Code prompts (generation, pairwise, pointwise) and the paper's training pairs."""
    from pairrl.rollout.pairs import build_training_pairs
    from pairrl.rollout.prompts import (
        generation_messages,
        pairwise_messages,
        pointwise_messages,
        solution_for_judge,
    )

    def generation(task: Task) -> list[dict[str, str]]:
        return generation_messages(task.prompt)

    def pairwise(task: Task, solution_a: str, solution_b: str) -> list[dict[str, str]]:
        return pairwise_messages(task.prompt, solution_a, solution_b)

    def pointwise(task: Task, solution: str) -> list[dict[str, str]]:
        return pointwise_messages(task.prompt, solution)

    def build_pairs(labels: Sequence[bool], num_pairs: int, seed: int) -> PairPlan:
        return build_training_pairs(labels, num_pairs=num_pairs, seed=seed)

    return PromptKit(
        generation=generation,
        pairwise=pairwise,
        pointwise=pointwise,
        for_judge=solution_for_judge,
        build_pairs=build_pairs,
    )
