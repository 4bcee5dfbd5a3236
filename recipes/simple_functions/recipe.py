"""The simple-function recipe as a ``pairrl.train.task_family.Recipe``: tasks, prompts, the
warm start from the model's own samples, and the end-of-run held-out comparison
(``RUN/summary.json``, ``RUN/demo.png``, a table) of ``pairrl.recipes.comparison``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from pairrl.recipes.comparison.report import TaskDescription
from pairrl.recipes.simple_functions.config import SimpleFunctionOptions
from pairrl.recipes.simple_functions.tasks import split_tasks
from pairrl.rewards.tasks import Task
from pairrl.rollout.prompt_kit import Conversation, PromptKit
from pairrl.train.task_family import FinishedRun

__all__ = ["SIMPLE_FUNCTIONS", "SimpleFunctionRecipe"]


SIMPLE_FUNCTIONS = TaskDescription(
    title="simple Python functions",
    summary="simple_functions: one short named Python function per task (templates with a "
    "constant, held out by template), run against hidden asserts by the executor; the judge "
    "rates two candidates in natural-language tags",
)


class SimpleFunctionRecipe:
    """Simple Python functions, and judging them (see the package docstring)."""

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
    ) -> list[Conversation]:
        """The model's own samples on the training tasks, labelled by execution, as
        solution and judgement conversations (``conversations``)."""
        from pairrl.recipes.simple_functions.conversations import (
            build_conversations,
            label_blocks,
            sample_completions,
        )
        from pairrl.rewards.executor import Executor

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
        )
        executor = Executor(workers=cfg.executor.num_workers, timeout_s=cfg.executor.timeout_s)
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
        )
        _report_samples(completions, labelled, len(conversations))
        return conversations

    def before_training(
        self, cfg: Any, options: SimpleFunctionOptions, run_dir: Path, warm_start_dir: Path | None
    ) -> AbstractContextManager[Any]:
        """The comparison's work that needs only the warm start, started beside training."""
        if not options.evaluate or warm_start_dir is None:
            return nullcontext()
        from pairrl.recipes.comparison.beside import Beside

        return Beside(cfg, options, run_dir, warm_start_dir)

    def after_training(
        self, cfg: Any, options: SimpleFunctionOptions, run: FinishedRun
    ) -> dict[str, Any]:
        """Evaluate every model on the held-out tasks, write ``summary.json``, ``demo.png``
        and the table (``pairrl.recipes.comparison.report.finish``); returns the headline."""
        if not options.evaluate:  # a baseline run: the main run evaluates it
            return {"evaluated": False}
        if run.warm_start_dir is None:
            raise ValueError("this recipe compares against its warm start: warm_start.steps > 0")
        from pairrl.recipes.comparison.report import finish

        summary = finish(cfg, options, run, SIMPLE_FUNCTIONS)
        return {
            "verification_gain": summary["verification_gain"],
            "summary": str(run.run_dir / "summary.json"),
        }


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
