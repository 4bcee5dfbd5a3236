"""The prompt kit: how the rollout turns a task into a solution prompt, a pairwise or
pointwise judge prompt, and which solutions it pairs.

The default kit uses the paper's prompts (``pairrl.rollout.prompts``) and training pairs
(``pairrl.rollout.pairs``); a recipe supplies its own (``pairrl.train.recipe``) when its
task family needs other wording, keeping the output formats the rewards parse.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pairrl.rewards.tasks import Task
from pairrl.rollout.pairs import PairPlan, build_training_pairs
from pairrl.rollout.prompts import (
    generation_messages,
    pairwise_messages,
    pointwise_messages,
    solution_for_judge,
)

__all__ = ["Conversation", "Messages", "PromptKit", "default_prompt_kit"]

Messages = list[dict[str, str]]
Conversation = list[dict[str, str]]  # prompt messages followed by the assistant's target


@dataclass(frozen=True)
class PromptKit:
    """The prompt builders and pair constructor the rollout uses."""

    generation: Callable[[Task], Messages]
    pairwise: Callable[[Task, str, str], Messages]
    pointwise: Callable[[Task, str], Messages]
    for_judge: Callable[[str], str]
    build_pairs: Callable[[Sequence[bool], int, int], Any]


def _generation(task: Task) -> Messages:
    return generation_messages(task.prompt)


def _pairwise(task: Task, solution_a: str, solution_b: str) -> Messages:
    return pairwise_messages(task.prompt, solution_a, solution_b)


def _pointwise(task: Task, solution: str) -> Messages:
    return pointwise_messages(task.prompt, solution)


def _pairs(labels: Sequence[bool], num_pairs: int, seed: int) -> PairPlan:
    return build_training_pairs(labels, num_pairs=num_pairs, seed=seed)


def default_prompt_kit() -> PromptKit:
    """Code prompts (generation, pairwise, pointwise) and the paper's training pairs."""
    return PromptKit(
        generation=_generation,
        pairwise=_pairwise,
        pointwise=_pointwise,
        for_judge=solution_for_judge,
        build_pairs=_pairs,
    )
