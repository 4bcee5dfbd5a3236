"""The toy recipe as a ``pairrl.train.task_family.Recipe``: tasks, prompts, warm-start data, and
its experiment (``pairrl experiment``, ``pairrl.recipes.comparison.run``): the baselines
and the warm start's evaluation beside PairRL's training, then every model evaluated on the
held-out problems (the warm start's candidates also serve as a fixed pool that every judge
faces): ``RUN/summary.json``, ``RUN/demo.png``, a table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pairrl.recipes.comparison.report import TaskDescription
from pairrl.recipes.comparison.run import ComparisonExperiment
from pairrl.recipes.toy_addition.config import ToyAdditionOptions
from pairrl.recipes.toy_addition.tasks import AdditionProblem, split_problems
from pairrl.rewards.tasks import Task
from pairrl.rollout.prompt_kit import Messages, PromptKit

__all__ = ["TOY_TASK", "ToyAdditionRecipe"]


TOY_TASK = TaskDescription(
    title="toy addition",
    summary="toy_addition: two-digit a + b (a three-digit sum) as code run by the executor; "
    "the judge checks a candidate c by computing c - a",
)


class ToyAdditionRecipe(ComparisonExperiment):
    """Two-digit addition as code, and judging of it (see the package docstring)."""

    task = TOY_TASK
    options_model = ToyAdditionOptions

    def training_tasks(self, options: ToyAdditionOptions) -> list[Task]:
        """RL's problems: the training split (never the held-out problems), less those the
        warm start teaches when ``warm_start_share`` < 1."""
        _, rl = _warm_and_rl_problems(options)
        return [p.to_task() for p in rl]

    def heldout_tasks(self, options: ToyAdditionOptions) -> list[Task]:
        """The held-out split (``eval_problems`` of them when set)."""
        _, heldout = split_problems(options.heldout_problems, options.split_seed)
        if options.eval_problems is not None:
            heldout = heldout[: options.eval_problems]
        return [p.to_task() for p in heldout]

    def prompt_kit(self, options: ToyAdditionOptions) -> PromptKit:
        """Compact toy prompts with the product's output formats."""
        from pairrl.recipes.toy_addition.prompts import prompt_kit

        return prompt_kit()

    def warm_start_conversations(
        self, cfg: Any, options: ToyAdditionOptions, seed: int, tasks: Sequence[Task]
    ) -> list[Messages]:
        """Solutions and judgements from a teacher that drops the units carry at a rate."""
        from pairrl.recipes.toy_addition.conversations import warm_start_conversations

        warm, _ = _warm_and_rl_problems(options)
        return warm_start_conversations(
            warm,
            options.warm_start_examples,
            seed=seed,
            dropped_carry_rate=options.teacher_dropped_carry,
            dropped_borrow_rate=options.teacher_dropped_borrow,
            units_only_check_rate=options.teacher_units_only_check,
            overcounted_units_rate=options.teacher_overcounted_units,
            tens_only_check_rate=options.teacher_tens_only_check,
        )


def _warm_and_rl_problems(
    options: ToyAdditionOptions,
) -> tuple[list[AdditionProblem], list[AdditionProblem]]:
    """(warm start's problems, RL's problems): the training split cut at
    ``warm_start_share`` (already in a seeded order), or all of it for both at 1."""
    train, _ = split_problems(options.heldout_problems, options.split_seed)
    if options.warm_start_share >= 1.0:
        return train, train
    cut = round(len(train) * options.warm_start_share)
    if not 1 <= cut < len(train):
        raise ValueError(
            f"warm_start_share {options.warm_start_share} leaves no problems for the warm "
            f"start or for RL ({len(train)} training problems)"
        )
    return train[:cut], train[cut:]
