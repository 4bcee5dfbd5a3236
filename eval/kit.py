"""The benchmark's tasks and prompts when a recipe is named: its held-out tasks and the
prompt kit its models were trained with (``pairrl.rollout.recipe``); otherwise the task
file and the paper's prompts for the tasks' kind, code or math
(``pairrl.rollout.prompt_kit.kit_for_tasks``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from pairrl.eval.config import EvalConfig
from pairrl.rollout.prompt_kit import PromptKit, kit_for_tasks, paper_prompt_kit
from pairrl.rollout.recipe import LoadedRecipe, RecipeConfig, resolve_recipe

__all__ = ["benchmark_kit", "benchmark_recipe", "recipe_tasks"]


@lru_cache(maxsize=8)
def _resolved(name: str, options_json: str) -> LoadedRecipe | None:
    return resolve_recipe(RecipeConfig(name=name, options=json.loads(options_json)))


def benchmark_recipe(cfg: EvalConfig) -> LoadedRecipe | None:
    """The configured recipe with its validated options (None without one)."""
    if cfg.recipe is None:
        return None
    return _resolved(cfg.recipe.name, json.dumps(cfg.recipe.options, sort_keys=True))


def benchmark_kit(cfg: EvalConfig, tasks: Sequence[Any] | None = None) -> PromptKit:
    """The recipe's prompt kit, or the paper's for ``tasks`` (math or code; code when
    the tasks are not given)."""
    loaded = benchmark_recipe(cfg)
    if loaded is not None:
        return loaded.recipe.prompt_kit(loaded.options)
    return paper_prompt_kit() if tasks is None else kit_for_tasks(tasks)


def recipe_tasks(cfg: EvalConfig) -> list[Any]:
    """The recipe's held-out tasks (the benchmark's task set when no task file is given)."""
    loaded = benchmark_recipe(cfg)
    if loaded is None:
        raise ValueError("no recipe configured")
    return list(loaded.recipe.heldout_tasks(loaded.options))
