"""The prompt kit: how a task becomes a solution prompt and a judge prompt, and which of a
problem's solutions are paired for training.

One kit serves training (the rollout) and the benchmark (sampling and judging), so a model
is evaluated with the prompts it was trained on. The paper's kit
(:func:`paper_prompt_kit`) uses ``pairrl.rollout.prompts`` and the paper's training pairs
(``pairrl.rollout.pairs``); a recipe supplies its own when its task family needs other
wording, keeping the output formats the rewards parse.
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
    pointwise_ab_messages,
    pointwise_messages,
    solution_for_judge,
)
from pairrl.rollout.statement import problem_text

__all__ = ["Conversation", "Messages", "PromptKit", "paper_prompt_kit"]

Messages = list[dict[str, str]]
Conversation = list[dict[str, str]]  # prompt messages followed by the assistant's target


@dataclass(frozen=True)
class PromptKit:
    """Prompt builders (task in, chat messages out) and the training pair constructor."""

    generation: Callable[[Task], Messages]
    pairwise: Callable[[Task, str, str], Messages]
    pointwise: Callable[[Task, str], Messages]
    pointwise_ab: Callable[[Task, str], Messages]
    for_judge: Callable[[str], str]
    build_pairs: Callable[[Sequence[bool], int, int], Any]


def _generation(task: Task) -> Messages:
    return generation_messages(problem_text(task))


def _pairwise(task: Task, solution_a: str, solution_b: str) -> Messages:
    return pairwise_messages(problem_text(task), solution_a, solution_b)


def _pointwise(task: Task, solution: str) -> Messages:
    return pointwise_messages(problem_text(task), solution)


def _pointwise_ab(task: Task, solution: str) -> Messages:
    return pointwise_ab_messages(problem_text(task), solution)


def _pairs(labels: Sequence[bool], num_pairs: int, seed: int) -> PairPlan:
    return build_training_pairs(labels, num_pairs=num_pairs, seed=seed)


def paper_prompt_kit() -> PromptKit:
    """The paper's code prompts over the task's statement (``problem_text``) and its pairs."""
    return PromptKit(
        generation=_generation,
        pairwise=_pairwise,
        pointwise=_pointwise,
        pointwise_ab=_pointwise_ab,
        for_judge=solution_for_judge,
        build_pairs=_pairs,
    )
