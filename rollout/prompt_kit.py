"""The prompt kit: how a task becomes a solution prompt and a judge prompt.

One kit serves training (the rollout) and the benchmark (sampling and judging), so a model
is evaluated with the prompts it was trained on. The paper's kits word their prompts with
``pairrl.rollout.prompts``: the code kit (:func:`paper_prompt_kit`) and the math kit (:func:`math_prompt_kit`: a
``\\boxed{}`` final answer, a judge that rates the final answers only and sees whole
completions). :func:`kit_for_tasks` picks one by the tasks' kind. A recipe supplies its
own kit when its task family needs other wording, keeping the output formats the rewards
parse.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from pairrl.errors import InputError
from pairrl.rewards.answers import is_answer_task
from pairrl.rewards.tasks import Task
from pairrl.rollout.prompts import (
    Domain,
    aggregation_messages,
    generation_messages,
    pairwise_messages,
    pointwise_ab_messages,
    pointwise_messages,
    solution_for_judge,
)
from pairrl.rollout.statement import problem_text

__all__ = [
    "Messages",
    "PromptKit",
    "kit_for_tasks",
    "math_prompt_kit",
    "paper_prompt_kit",
]

# A chat: {"role", "content"} dicts. A prompt, or (warm-start data) a prompt followed by
# the assistant's target.
Messages = list[dict[str, str]]


@dataclass(frozen=True)
class PromptKit:
    """Prompt builders: a task (and solutions to judge) in, chat messages out.

    ``aggregation`` (a task and candidate completions in, a prompt for one improved
    solution out) serves the benchmark's recursive self-aggregation; its default is the
    paper kit's code wording, so a kit for another task family may override it."""

    generation: Callable[[Task], Messages]
    pairwise: Callable[[Task, str, str], Messages]
    pointwise: Callable[[Task, str], Messages]
    pointwise_ab: Callable[[Task, str], Messages]
    for_judge: Callable[[str], str]
    aggregation: Callable[[Task, Sequence[str]], Messages] = field(
        default=lambda task, solutions: _aggregation(task, solutions, "code")
    )


def _generation(task: Task, domain: Domain) -> Messages:
    return generation_messages(problem_text(task), domain)


def _pairwise(task: Task, solution_a: str, solution_b: str, domain: Domain) -> Messages:
    return pairwise_messages(problem_text(task), solution_a, solution_b, domain)


def _pointwise(task: Task, solution: str, domain: Domain) -> Messages:
    return pointwise_messages(problem_text(task), solution, domain)


def _pointwise_ab(task: Task, solution: str, domain: Domain) -> Messages:
    return pointwise_ab_messages(problem_text(task), solution, domain)


def _aggregation(task: Task, solutions: Sequence[str], domain: Domain) -> Messages:
    return aggregation_messages(problem_text(task), solutions, domain)


def _paper_kit(domain: Domain) -> PromptKit:
    """The paper's prompts for ``domain`` over the task's statement (``problem_text``)."""
    return PromptKit(
        generation=partial(_generation, domain=domain),
        pairwise=partial(_pairwise, domain=domain),
        pointwise=partial(_pointwise, domain=domain),
        pointwise_ab=partial(_pointwise_ab, domain=domain),
        for_judge=partial(solution_for_judge, domain=domain),
        aggregation=partial(_aggregation, domain=domain),
    )


def paper_prompt_kit() -> PromptKit:
    """The paper's code prompts over the task's statement (``problem_text``)."""
    return _paper_kit("code")


def math_prompt_kit() -> PromptKit:
    """The paper's math prompts: a ``\\boxed{}`` answer; judges rate final answers only."""
    return _paper_kit("math")


def kit_for_tasks(tasks: Sequence[Task]) -> PromptKit:
    """The math kit when every task is an answer task, the code kit when none is; a mix
    is an error (one run, one kit: train or evaluate the two kinds separately)."""
    kinds = {is_answer_task(t) for t in tasks}
    if kinds == {True, False}:
        math = next(t.task_id for t in tasks if is_answer_task(t))
        code = next(t.task_id for t in tasks if not is_answer_task(t))
        raise InputError(
            f"the tasks mix math (e.g. {math!r}) and code (e.g. {code!r}); one run uses one "
            "prompt kit: give math and code tasks to separate runs"
        )
    return math_prompt_kit() if kinds == {True} else paper_prompt_kit()
