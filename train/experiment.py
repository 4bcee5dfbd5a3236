"""``pairrl experiment``: a recipe's experiment around one training run.

The run folder is set up and locked as for ``pairrl train`` (``pairrl.train.run``); the
recipe's ``run_experiment(run, cfg, options)`` then runs the training's stages in order
(``run.warm_start()``, ``run.train()``) with its own work beside and after them, and
returns the run's summary. No library module knows what an experiment does: the recipe
(``recipe:`` in the config) is loaded by name.
"""

from __future__ import annotations

from typing import Any

from pairrl.train.config import TrainConfig
from pairrl.train.plan import RunPlan
from pairrl.train.run import training_run

__all__ = ["run_experiment"]


def run_experiment(cfg: TrainConfig, plan: RunPlan, resume: bool = False) -> dict[str, Any]:
    """Run the configured recipe's experiment; the summary it returns."""
    with training_run(cfg, plan, resume) as run:
        family: Any = run.family  # a recipe family: its recipe and validated options
        return family.recipe.run_experiment(run, cfg, family.options)
