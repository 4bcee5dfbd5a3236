"""Simple Python function tasks from templates, split into train and held-out by template.

Each task asks for one named function (``multiply_by_3(n)``) and is a real
``rewards.Task``: its hidden asserts, computed from the template's reference
implementation, run in the sandboxed executor. The split is by template and fixed by
``split_seed`` alone: every held-out task belongs to a template no training task comes
from, so a held-out ``add_7`` cannot be a trained ``add_5``, and every training seed is
measured on the same held-out tasks.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from pairrl.recipes.simple_functions.templates import TEMPLATES, Template
from pairrl.rewards.tasks import AssertTests, Task

__all__ = ["TASK_PREFIX", "all_tasks", "split_tasks", "task_statement", "template_tasks"]

TASK_PREFIX = "simple"


def task_statement(name: str, params: str, description: str) -> str:
    """What the solver and the judge read: ``Write a Python function `f(x)` that ...``."""
    return f"Write a Python function `{name}({params})` that {description}."


def template_tasks(template: Template) -> list[Task]:
    """One task per constant of ``template`` (one task when it has none).

    >>> [t.task_id for t in template_tasks(TEMPLATES[0])][:2]
    ['simple/multiply_by/multiply_by_2', 'simple/multiply_by/multiply_by_3']
    >>> print(template_tasks(TEMPLATES[0])[0].tests.cases[1])
    assert multiply_by_2(3) == 6
    """
    constants = template.constants or (None,)
    tasks = []
    for k in constants:
        name = template.name.format(k=k)
        function = template.reference(k)
        cases = tuple(
            f"assert {name}({', '.join(map(repr, args))}) == {function(*args)!r}"
            for args in template.inputs
        )
        tasks.append(
            Task(
                task_id=f"{TASK_PREFIX}/{template.key}/{name}",
                prompt=task_statement(name, template.params, template.description.format(k=k)),
                entry_point=name,
                tests=AssertTests(cases=cases),
            )
        )
    return tasks


def all_tasks(templates: Sequence[Template] = TEMPLATES) -> list[Task]:
    """Every task of every template, in template order."""
    return [task for template in templates for task in template_tasks(template)]


def split_tasks(heldout_share: float, split_seed: int) -> tuple[list[Task], list[Task]]:
    """(training tasks, held-out tasks): the templates shuffled by ``split_seed``, the first
    ``heldout_share`` of them held out; each list in a seeded order of its own."""
    if not 0.0 < heldout_share < 1.0:
        raise ValueError(f"heldout_share must be in (0, 1), got {heldout_share}")
    templates = list(TEMPLATES)
    rng = random.Random(split_seed)
    rng.shuffle(templates)
    cut = max(1, round(len(templates) * heldout_share))
    heldout, train = all_tasks(templates[:cut]), all_tasks(templates[cut:])
    rng.shuffle(train)
    rng.shuffle(heldout)
    return train, heldout
