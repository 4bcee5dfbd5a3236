"""Recipes: a task family with its own prompts, plugged into training and the benchmark.

A recipe is any importable module (or ``module:attribute``) whose object provides what
both sides need: the tasks (a training split and a held-out split) and the prompt kit, plus
an options schema (``options_model``) for the settings a YAML gives it. Training asks more
of it (``pairrl.train.task_family.Recipe``: warm-start data, optionally an experiment); the benchmark
asks only this (:class:`TaskRecipe`), so ``pairrl eval`` runs a recipe's held-out tasks
with the prompts the model was trained on. Selected in YAML::

    recipe:
      name: pairrl.recipes.toy_addition      # or my_recipes.sorting, or mod:attr
      options: {eval_k: 8}                   # validated by the recipe's options_model

No library module imports a recipe: it is loaded here, at run time, from the config.
Modules in the working directory are importable (as with ``python -m``), so a user's
recipe needs no installing.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import Field, ValidationError

from pairrl.config import ConfigError, PairrlModel, format_validation_errors
from pairrl.rewards.tasks import Task
from pairrl.rollout.prompt_kit import PromptKit

__all__ = ["LoadedRecipe", "RecipeConfig", "TaskRecipe", "load_recipe", "resolve_recipe"]

DEFAULT_ATTRIBUTE = "RECIPE"


class RecipeConfig(PairrlModel):
    """The ``recipe:`` section of a training or benchmark YAML."""

    name: str = Field(
        min_length=1,
        description="import path of the recipe module (e.g. pairrl.recipes.toy_addition), "
        "optionally module:attribute; modules in the working directory are found too",
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="the recipe's own settings, checked by its schema"
    )


@runtime_checkable
class TaskRecipe(Protocol):
    """What the benchmark needs of a recipe. ``options`` is an ``options_model`` instance."""

    options_model: type[PairrlModel]

    def training_tasks(self, options: Any) -> list[Task]:
        """The tasks RL trains on (each prompt unique: it identifies its task)."""
        ...

    def heldout_tasks(self, options: Any) -> list[Task]:
        """Tasks never trained on, for the benchmark."""
        ...

    def prompt_kit(self, options: Any) -> PromptKit:
        """The prompt builders (and training pair constructor) of the task family."""
        ...


@dataclass(frozen=True)
class LoadedRecipe:
    """A recipe with its validated options."""

    name: str
    recipe: Any  # a TaskRecipe, or the richer protocol it was loaded for
    options: Any


def load_recipe(name: str, protocol: type = TaskRecipe) -> Any:
    """Import ``module`` or ``module:attribute`` (default ``RECIPE``); check it against
    ``protocol`` (its methods and ``options_model`` must be there)."""
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
    if not isinstance(recipe, protocol):
        members = [m for m in dir(protocol) if not m.startswith("_")]
        missing = sorted(m for m in members if not hasattr(recipe, m))
        raise ConfigError(
            "recipe.name", [f"{name!r} is not a {protocol.__name__}: it lacks {missing}"]
        )
    return recipe


def resolve_recipe(config: RecipeConfig | None, protocol: type = TaskRecipe) -> LoadedRecipe | None:
    """Load the configured recipe and validate its options (errors name ``recipe.options``)."""
    if config is None:
        return None
    recipe = load_recipe(config.name, protocol)
    try:
        options = recipe.options_model.model_validate(config.options)
    except ValidationError as err:
        problems = format_validation_errors(err, recipe.options_model, prefix="recipe.options")
        raise ConfigError(f"recipe {config.name}", problems) from None
    return LoadedRecipe(config.name, recipe, options)
