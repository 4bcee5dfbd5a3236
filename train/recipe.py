"""What training asks of a recipe (``pairrl.rollout.recipe`` holds the loader and the part
the benchmark shares): warm-start conversations, work to run beside training, and an
end-of-run hook.

The trainer owns everything else (the policy build, the one warm start, TRL,
checkpoints), so a recipe never touches the training loop::

    data: {source: recipe}
    recipe: {name: pairrl.recipes.toy_addition, options: {...}}
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pairrl.rewards.tasks import Task
from pairrl.rollout.prompt_kit import Conversation
from pairrl.rollout.recipe import LoadedRecipe, RecipeConfig, TaskRecipe
from pairrl.rollout.recipe import resolve_recipe as _resolve

__all__ = ["FinishedRun", "Recipe", "beside_training", "resolve_recipe"]


@dataclass(frozen=True)
class FinishedRun:
    """What a recipe's ``after_training`` hook receives once training ended normally."""

    run_dir: Path
    warm_start_dir: Path | None  # None when the run had no warm start
    final_dir: Path
    log_history: list[dict[str, Any]]
    wall_s: dict[str, float] = field(default_factory=dict)
    started_at: float = 0.0  # time.time() when the run started
    beside: Any = None  # what the recipe's ``before_training`` context yielded


@runtime_checkable
class Recipe(TaskRecipe, Protocol):
    """A recipe training can run: the benchmark's part, warm-start data, a final hook.

    One hook is optional: ``before_training(cfg, options, run_dir, warm_start_dir)``, a
    context manager (see ``beside_training``) for work to run beside training.
    """

    def warm_start_conversations(
        self, options: Any, seed: int, tasks: Sequence[Task]
    ) -> list[Conversation]:
        """Chat conversations (prompt and assistant target) for the supervised warm start."""
        ...

    def after_training(self, cfg: Any, options: Any, run: FinishedRun) -> dict[str, Any]:
        """Runs on the main process after training; returns a summary for the CLI's output."""
        ...


def resolve_recipe(config: RecipeConfig | None) -> LoadedRecipe | None:
    """The configured recipe, checked to be one training can run, with its options."""
    return _resolve(config, Recipe)


def beside_training(
    recipe: Recipe, cfg: Any, options: Any, run_dir: Path, warm_start_dir: Path | None
) -> AbstractContextManager[Any]:
    """The recipe's optional ``before_training`` context, or an empty one.

    It runs on the main process once the policy (and its warm start) is ready, and is
    entered around training and ``after_training``, so work it starts beside training is
    stopped if training fails or is interrupted; what it yields reaches ``after_training``
    as ``run.beside``.
    """
    hook = getattr(recipe, "before_training", None)
    return nullcontext() if hook is None else hook(cfg, options, run_dir, warm_start_dir)
