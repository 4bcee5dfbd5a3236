"""The CPU toy recipe: PairRL teaches a tiny model to add (as code) and to judge its answers.

Selected by ``configs/toy_cpu.yaml`` (``recipe: {name: pairrl.recipes.toy_addition}``).
``tasks`` (the toy family, checked by the sandboxed executor), ``prompts`` (compact prompts,
single-token ratings), ``conversations`` (warm-start data from an imperfect teacher),
``evaluate`` (held-out pass rate, judge balanced accuracy, best-of-k), ``report``
(summary.json, PNG), ``recipe`` (the ``Recipe`` the trainer calls), ``config`` (its options).
"""

from pairrl.recipes.toy_addition.recipe import ToyAdditionRecipe

RECIPE = ToyAdditionRecipe()

__all__ = ["RECIPE", "ToyAdditionRecipe"]
