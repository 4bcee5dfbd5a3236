"""Recipes: a task family plugged into ``pairrl train`` through one small, typed interface.

A recipe is any importable module (or ``module:attribute``) that provides a
:class:`Recipe`: the training tasks, the prompt kit the rollout uses, the conversations a
tiny model is warm-started on, and a hook that runs after training (a held-out
evaluation, a report). The run's YAML selects it and carries its options::

    data: {source: recipe}
    recipe:
      name: pairrl.recipes.toy_addition      # or my_recipes.sorting, or mod:attr
      options: {eval_k: 8}                   # validated by the recipe's options_model

The trainer owns everything else (the policy build, the one warm start, TRL, checkpoints),
so a recipe never touches the training loop. The library never imports a recipe by name:
it is loaded here, at run time, from the config. Modules in the working directory are
importable (as with ``python -m``), so a user's recipe needs no installing.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import ValidationError

from pairrl.config import ConfigError, PairrlModel, format_validation_errors
from pairrl.rewards.tasks import Task
from pairrl.train.config import RecipeConfig, TrainConfig
from pairrl.train.prompt_kit import Conversation, PromptKit

__all__ = ["FinishedRun", "LoadedRecipe", "Recipe", "load_recipe", "resolve_recipe"]

DEFAULT_ATTRIBUTE = "RECIPE"


@dataclass(frozen=True)
class FinishedRun:
    """What a recipe's ``after_training`` hook receives once training ended normally."""

    run_dir: Path
    warm_start_dir: Path | None  # None when the run had no warm start
    final_dir: Path
    log_history: list[dict[str, Any]]
    wall_s: dict[str, float] = field(default_factory=dict)


@runtime_checkable
class Recipe(Protocol):
    """What a recipe provides. ``options`` is an instance of ``options_model``."""

    options_model: type[PairrlModel]

    def training_tasks(self, cfg: TrainConfig, options: Any) -> list[Task]:
        """The tasks RL trains on (each prompt must be unique: it identifies its task)."""
        ...

    def prompt_kit(self, cfg: TrainConfig, options: Any) -> PromptKit:
        """The prompt builders and pair constructor the rollout uses."""
        ...

    def warm_start_conversations(
        self, cfg: TrainConfig, options: Any, tasks: Sequence[Task]
    ) -> list[Conversation]:
        """Chat conversations (prompt and assistant target) for the supervised warm start."""
        ...

    def after_training(self, cfg: TrainConfig, options: Any, run: FinishedRun) -> dict[str, Any]:
        """Runs on the main process after training; returns a summary for the CLI's output."""
        ...


@dataclass(frozen=True)
class LoadedRecipe:
    """A recipe with its validated options."""

    name: str
    recipe: Recipe
    options: Any


def load_recipe(name: str) -> Recipe:
    """Import ``module`` or ``module:attribute`` (default attribute ``RECIPE``)."""
    module_name, _, attribute = name.partition(":")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.append(cwd)  # after the installed packages: a local file cannot shadow them
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(
            "recipe.name", [f"cannot import recipe module {module_name!r}: {err}"]
        ) from None
    recipe = getattr(module, attribute or DEFAULT_ATTRIBUTE, None)
    if recipe is None:
        raise ConfigError(
            "recipe.name",
            [f"module {module_name!r} has no attribute {attribute or DEFAULT_ATTRIBUTE!r}"],
        )
    if not isinstance(recipe, Recipe):
        missing = [
            m
            for m in (
                "options_model",
                "training_tasks",
                "prompt_kit",
                "warm_start_conversations",
                "after_training",
            )
            if not hasattr(recipe, m)
        ]
        raise ConfigError("recipe.name", [f"{name!r} is not a Recipe: it lacks {missing}"])
    return recipe


def resolve_recipe(config: RecipeConfig | None) -> LoadedRecipe | None:
    """Load the configured recipe and validate its options (errors name ``recipe.options``)."""
    if config is None:
        return None
    recipe = load_recipe(config.name)
    try:
        options = recipe.options_model.model_validate(config.options)
    except ValidationError as err:
        problems = format_validation_errors(err, recipe.options_model, prefix="recipe.options")
        raise ConfigError(f"recipe {config.name}", problems) from None
    return LoadedRecipe(config.name, recipe, options)
