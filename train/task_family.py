"""Task families: where a training run's problems, prompts and warm-start data come from.

One interface, :class:`TaskFamily`, and one place that picks it from the YAML
(:func:`task_family`, by ``data.source``). Each family gives the training tasks (each
prompt unique: it identifies its task), the prompt kit and the warm-start conversations.
The built-in families:

* ``tiny_code``: eight tiny Python-function tasks (``pairrl.train.tiny_tasks``), warm-started
  on pool answers and random ratings (formats only);
* ``file`` / ``dataset``: task rows (code or math) from a file or a ``datasets`` source
  (``pairrl.rewards.task_loaders``, ``pairrl.rewards.task_datasets``); math rows teach a
  tiny model the formats, real models start from their own;
* ``hub``: DeepCoder-style rows (stdin/stdout tests), unrunnable rows skipped and counted;
* ``recipe``: a user's module (``recipe:`` section, ``pairrl.rollout.recipe``), e.g.
  ``pairrl.recipes.toy_addition``, with its own options and warm start, and optionally an
  experiment (``run_experiment``) that ``pairrl experiment`` runs.

The trainer owns everything else (the policy, the one warm start, TRL, checkpoints), so
a family never touches the training loop.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pairrl.errors import InputError
from pairrl.rewards.tasks import AnswerTests, Task
from pairrl.rollout.prompt_kit import Messages, PromptKit
from pairrl.rollout.recipe import LoadedRecipe, RecipeConfig, TaskRecipe
from pairrl.rollout.recipe import resolve_recipe as _resolve
from pairrl.train.config import DataConfig, TrainConfig

__all__ = [
    "DeepCoderFamily",
    "Recipe",
    "RecipeFamily",
    "TaskFamily",
    "TaskRowsFamily",
    "TinyCodeFamily",
    "resolve_recipe",
    "task_family",
]

WARM_START_EXAMPLES = 512  # format-teaching conversations of the built-in families


@runtime_checkable
class TaskFamily(Protocol):
    """What training asks of a task family (see the module docstring)."""

    name: str
    skipped: dict[str, int]  # rows dropped while loading, by reason

    def training_tasks(self) -> list[Task]:
        """The tasks RL trains on, in the order the run uses."""
        ...

    def prompt_kit(self) -> PromptKit:
        """The prompt builders (and training pair constructor) of the family."""
        ...

    def warm_start_conversations(self, seed: int, tasks: Sequence[Task]) -> list[Messages]:
        """Chat conversations (prompt and assistant target) for the supervised warm start."""
        ...


@runtime_checkable
class Recipe(TaskRecipe, Protocol):
    """A user's recipe module's object, as training runs it: the benchmark's part
    (``TaskRecipe``) and warm-start data, each given the recipe's validated options.
    Optional: ``run_experiment(run, cfg, options)``, the experiment ``pairrl experiment``
    runs on an open ``pairrl.train.run.TrainingRun`` (e.g. baselines beside the training and
    a benchmark after it), returning the run's summary; ``heldout_probe_pairs(cfg,
    options, seed, model, max_pairs)``, the held-out judge probe's pairs
    (``pairrl.train.heldout_probe``), candidates of ``model`` on the held-out tasks."""

    def warm_start_conversations(
        self, cfg: TrainConfig, options: Any, seed: int, tasks: Sequence[Task]
    ) -> list[Messages]:
        """Chat conversations (prompt and assistant target) for the supervised warm start
        (``cfg``: the run's config, e.g. for a recipe that samples its model first)."""
        ...


def resolve_recipe(config: RecipeConfig | None) -> LoadedRecipe | None:
    """The configured recipe, checked to be one training can run, with its options."""
    return _resolve(config, Recipe)


class _BuiltIn:
    """What every built-in family has."""

    name = "built-in"
    skipped: dict[str, int]


class TinyCodeFamily(_BuiltIn):
    """``data.source: tiny_code``: the built-in tiny Python-function tasks."""

    name = "tiny_code"

    def __init__(self, data: DataConfig) -> None:
        from pairrl.train.tiny_tasks import tiny_code_tasks

        self.skipped = {}
        self._tasks = _shuffled_and_capped(tiny_code_tasks(), data, self.skipped)

    def training_tasks(self) -> list[Task]:
        return list(self._tasks)

    def prompt_kit(self) -> PromptKit:
        from pairrl.rollout.prompt_kit import kit_for_tasks

        return kit_for_tasks(self._tasks)

    def warm_start_conversations(self, seed: int, tasks: Sequence[Task]) -> list[Messages]:
        from pairrl.train.tiny_tasks import warm_start_examples

        kit = self.prompt_kit()
        return warm_start_examples(
            list(tasks), kit.generation, kit.pairwise, WARM_START_EXAMPLES, seed=seed
        )


class TaskRowsFamily(_BuiltIn):
    """``data.source: file | dataset``: task rows (code or math) from a task file or a
    ``datasets`` source, ``data.columns`` renaming columns to task fields."""

    def __init__(self, data: DataConfig) -> None:
        self.name = data.source
        self.skipped = {}
        self._tasks = _shuffled_and_capped(self._load(data), data, self.skipped)

    def _load(self, data: DataConfig) -> list[Task]:
        if data.source == "file":
            from pairrl.rewards.task_loaders import load_tasks

            return load_tasks(data.path or "", data.columns)
        from pairrl.rewards.task_datasets import load_task_source

        tasks: list[Task] = []
        for subset in data.subsets or [None]:
            tasks += load_task_source(data.path or "", data.columns, subset, data.split)
        return tasks

    def training_tasks(self) -> list[Task]:
        return list(self._tasks)

    def prompt_kit(self) -> PromptKit:
        from pairrl.rollout.prompt_kit import kit_for_tasks

        return kit_for_tasks(self._tasks)  # math tasks get the math prompts

    def warm_start_conversations(self, seed: int, tasks: Sequence[Task]) -> list[Messages]:
        """Math rows: format-teaching conversations; code rows: none (a real model starts
        from its own)."""
        kit = self.prompt_kit()
        return _answer_format_conversations(list(tasks), kit, WARM_START_EXAMPLES, seed=seed)


class DeepCoderFamily(TaskRowsFamily):
    """``data.source: hub``: DeepCoder-style rows (``problem`` and stdin/stdout ``tests``);
    rows whose tests the executor cannot run are skipped and counted, never mislabelled."""

    def _load(self, data: DataConfig) -> list[Task]:
        from pairrl.rewards.task_datasets import open_rows
        from pairrl.rewards.task_loaders import deepcoder_row_to_task

        tasks: list[Task] = []
        for subset in data.subsets or [None]:
            for i, row in enumerate(open_rows(data.path or "", subset, data.split).rows):
                try:
                    tasks.append(deepcoder_row_to_task(row, f"{subset or 'default'}/{i}"))
                except (ValueError, KeyError) as err:
                    reason = f"{subset}: {str(err).split(':')[0][:60]}"
                    self.skipped[reason] = self.skipped.get(reason, 0) + 1
        return tasks


class RecipeFamily:
    """``data.source: recipe``: a user's recipe module, bound to its validated options."""

    skipped: dict[str, int]

    def __init__(self, loaded: LoadedRecipe, cfg: TrainConfig) -> None:
        self.name, self.recipe, self.options = loaded.name, loaded.recipe, loaded.options
        self.cfg = cfg
        self.skipped = {}

    def training_tasks(self) -> list[Task]:
        return self.recipe.training_tasks(self.options)

    def prompt_kit(self) -> PromptKit:
        return self.recipe.prompt_kit(self.options)

    def warm_start_conversations(self, seed: int, tasks: Sequence[Task]) -> list[Messages]:
        return self.recipe.warm_start_conversations(self.cfg, self.options, seed, tasks)

    def heldout_probe_pairs(self, seed: int, model: str, max_pairs: int) -> list[Any]:
        """The recipe's held-out probe pairs (``pairrl.train.heldout_probe.ProbePair``)."""
        build = getattr(self.recipe, "heldout_probe_pairs", None)
        if build is None:
            raise InputError(
                f"recipe {self.name} builds no held-out probe pairs: set "
                "heldout_probe.pairs_file, or heldout_probe.every_steps 0"
            )
        return build(self.cfg, self.options, seed, model, max_pairs)


def task_family(cfg: TrainConfig) -> TaskFamily:
    """The run's task family, chosen by ``data.source`` (``recipe`` needs ``recipe:``)."""
    if cfg.data.source == "recipe" or cfg.recipe is not None:
        loaded = resolve_recipe(cfg.recipe)
        if loaded is None:
            raise InputError("data.source 'recipe' needs a recipe: section naming the module")
        return RecipeFamily(loaded, cfg)
    if cfg.data.source == "tiny_code":
        return TinyCodeFamily(cfg.data)
    if cfg.data.source == "hub":
        return DeepCoderFamily(cfg.data)
    return TaskRowsFamily(cfg.data)


def _shuffled_and_capped(
    tasks: list[Task], data: DataConfig, skipped: dict[str, int]
) -> list[Task]:
    """``tasks`` shuffled with ``data.shuffle_seed`` and capped at ``max_problems``; an
    empty result is an error naming the source and what was skipped."""
    random.Random(data.shuffle_seed).shuffle(tasks)
    if data.max_problems is not None:
        tasks = tasks[: data.max_problems]
    if not tasks:
        raise InputError(
            f"data source {data.source!r} ({data.path}) gave no usable tasks (skipped: {skipped})"
        )
    return tasks


def _answer_format_conversations(
    tasks: list[Task], kit: PromptKit, num_examples: int, seed: int = 0, judge_every: int = 4
) -> list[Messages]:
    """Format-teaching conversations for math tasks (a tiny model's warm start).

    Solutions end in ``\\boxed{}`` with an answer drawn from the pool of the task set's
    gold answers (right for its own task, wrong for the others); every ``judge_every``-th
    example is a pairwise judgement of two such solutions with random ratings. The warm
    start teaches the formats, not the problems.
    """
    golds = sorted({t.tests.gold for t in tasks if isinstance(t.tests, AnswerTests)})
    if not golds:
        return []
    rng = random.Random(seed)

    def solution() -> str:
        return f"The answer is \\boxed{{{rng.choice(golds)}}}."

    out: list[Messages] = []
    for k in range(num_examples):
        task = rng.choice(tasks)
        if judge_every and k % judge_every == 0:
            a, b = rng.randint(1, 10), rng.randint(1, 10)
            target = f"<rating_A>{a}</rating_A>\n<rating_B>{b}</rating_B>"
            prompt = kit.pairwise(task, kit.for_judge(solution()), kit.for_judge(solution()))
        else:
            target, prompt = solution(), kit.generation(task)
        out.append([*prompt, {"role": "assistant", "content": target}])
    return out
