"""The simple-function recipe as a ``pairrl.train.task_family.Recipe``: tasks, prompts, the
warm start from the model's own samples, and the experiment of ``pairrl.recipes.comparison``
(``pairrl experiment``: the baselines beside PairRL, then the held-out comparison,
``RUN/summary.json``, ``RUN/demo.png``, a table).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pairrl.recipes.comparison.report import TaskDescription
from pairrl.recipes.comparison.run import ComparisonExperiment
from pairrl.recipes.simple_functions.config import SimpleFunctionOptions
from pairrl.recipes.simple_functions.tasks import split_tasks
from pairrl.rewards.tasks import Task
from pairrl.rollout.prompt_kit import Messages, PromptKit
from pairrl.train.heldout_probe import ProbePair

__all__ = ["SIMPLE_FUNCTIONS", "SimpleFunctionRecipe"]


SIMPLE_FUNCTIONS = TaskDescription(
    title="simple Python functions",
    summary="simple_functions: one short named Python function per task (templates with a "
    "constant, held out by template), run against hidden asserts by the executor; the judge "
    "rates two candidates in natural-language tags",
)


class SimpleFunctionRecipe(ComparisonExperiment):
    """Simple Python functions, and judging them (see the package docstring)."""

    task = SIMPLE_FUNCTIONS
    options_model = SimpleFunctionOptions

    def training_tasks(self, options: SimpleFunctionOptions) -> list[Task]:
        """The training templates' tasks (never a held-out template's)."""
        train, _ = split_tasks(options.heldout_share, options.split_seed)
        return train[: options.train_problems] if options.train_problems else train

    def heldout_tasks(self, options: SimpleFunctionOptions) -> list[Task]:
        """The held-out templates' tasks (``eval_problems`` of them when set)."""
        _, heldout = split_tasks(options.heldout_share, options.split_seed)
        return heldout[: options.eval_problems] if options.eval_problems else heldout

    def prompt_kit(self, options: SimpleFunctionOptions) -> PromptKit:
        """Compact prompts with the product's output formats."""
        from pairrl.recipes.simple_functions.prompts import prompt_kit

        return prompt_kit()

    def warm_start_conversations(
        self, cfg: Any, options: SimpleFunctionOptions, seed: int, tasks: Sequence[Task]
    ) -> list[Messages]:
        """The model's own samples on the training tasks, labelled by execution, as
        solution and judgement conversations (``conversations``)."""
        from pairrl.recipes.simple_functions.conversations import (
            build_conversations,
            label_blocks,
            sample_completions,
        )

        kit = self.prompt_kit(options)
        completions = sample_completions(
            cfg.model.path,
            tasks,
            kit,
            n=options.warm_samples_per_task,
            temperature=options.warm_sample_temperature,
            max_tokens=options.warm_sample_max_tokens,
            seed=seed,
            engine=options.warm_sample_engine,
            dtype=options.warm_sample_dtype,
        )
        executor = cfg.executor.build()
        try:
            labelled = label_blocks(tasks, completions, executor)
        finally:
            executor.close()
        conversations = build_conversations(
            tasks,
            labelled,
            kit,
            seed=seed,
            solutions_per_task=options.warm_solutions_per_task,
            pairs_per_task=options.warm_pairs_per_task,
            pointwise_per_task=options.warm_pointwise_per_task,
            ab_per_task=options.warm_ab_per_task,
        )
        _report_samples(completions, labelled, len(conversations))
        return conversations

    def heldout_probe_pairs(
        self, cfg: Any, options: SimpleFunctionOptions, seed: int, model: str, max_pairs: int
    ) -> list[ProbePair]:
        """The held-out judge probe's pairs: ``eval_k`` samples of ``model`` per held-out
        task at the benchmark's temperature (the kind of candidates its shared pool holds),
        their distinct first blocks labelled by execution and paired
        (``pairrl.train.heldout_probe``); the benchmark's temperature and length."""
        from pairrl.recipes.simple_functions.conversations import label_blocks, sample_completions
        from pairrl.recipes.simple_functions.prompts import solution_text
        from pairrl.train.heldout_probe import build_probe_pairs

        tasks, kit = self.heldout_tasks(options), self.prompt_kit(options)
        completions = sample_completions(
            model,
            tasks,
            kit,
            n=options.eval_k,
            temperature=options.eval_temperature or cfg.sampling.solution.temperature,
            max_tokens=cfg.sampling.solution.max_tokens,
            seed=seed,
            engine=options.warm_sample_engine,
            dtype=options.warm_sample_dtype,
            stage="held-out probe",
        )
        executor = cfg.executor.build()
        try:
            labelled = label_blocks(tasks, completions, executor)
        finally:
            executor.close()
        candidates = [[(solution_text(b.code), b.passed) for b in row] for row in labelled]
        return build_probe_pairs(tasks, candidates, kit.pairwise, seed=seed, max_pairs=max_pairs)


def _report_samples(
    completions: Sequence[Sequence[str]], labelled: Sequence[Sequence[Any]], conversations: int
) -> None:
    samples = sum(len(row) for row in completions)
    blocks = sum(len(row) for row in labelled)
    passing = sum(b.passed for row in labelled for b in row)
    solved = sum(any(b.passed for b in row) for row in labelled)
    print(
        f"[pairrl] warm start: {samples} samples, {blocks} distinct first blocks, {passing} "
        f"passing; {solved} of {len(labelled)} tasks with a passing block; "
        f"{conversations} conversations",
        flush=True,
    )
