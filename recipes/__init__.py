"""pairrl.recipes: worked examples built on pairrl's public interfaces.

A recipe is selected from a training YAML (``recipe: pairrl.recipes.toy_addition``) and
plugs into the trainer through ``pairrl.train.task_family.Recipe``, the same interface a
user's own recipe module implements. No library module imports a recipe.
"""
