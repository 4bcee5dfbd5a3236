"""The real-model recipe: simple Python functions, solved and judged in pairs.

Selected by ``configs/smollm2_cpu.yaml`` (``recipe: {name: pairrl.recipes.simple_functions}``).
``templates`` and ``tasks`` (the task family, split by template), ``prompts`` (compact
prompts, the product's output formats), ``conversations`` (the warm start from the model's
own execution-labelled samples), ``recipe`` (the ``Recipe`` the trainer calls), ``config``
(its options). The comparison with the baselines on held-out tasks is
``pairrl.recipes.comparison``.
"""

from pairrl.recipes.simple_functions.recipe import SimpleFunctionRecipe

RECIPE = SimpleFunctionRecipe()

__all__ = ["RECIPE", "SimpleFunctionRecipe"]
