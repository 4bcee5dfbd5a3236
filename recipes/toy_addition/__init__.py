"""The CPU toy recipe: PairRL teaches a tiny model to add (as code) and to judge its answers.

Selected by ``configs/toy_cpu.yaml`` (``recipe: {name: pairrl.recipes.toy_addition}``).
``tasks`` (the toy family, checked by the sandboxed executor), ``prompts`` (compact prompts,
single-token ratings), ``conversations`` (warm-start data from an imperfect teacher),
``recipe`` (the ``Recipe`` the trainer calls), ``config`` (its options). The comparison
with the baselines on held-out problems is ``pairrl.recipes.comparison``.
"""

from pairrl.recipes.toy_addition.recipe import ToyAdditionRecipe

RECIPE = ToyAdditionRecipe()

__all__ = ["RECIPE", "ToyAdditionRecipe"]
