"""Training problems: load tasks, and the HF dataset TRL iterates over.

Sources (``data.source``): the built-in tiny code tasks, a recipe's, a task file (code or
math rows), a ``datasets`` source (hub id, dataset folder or parquet file, through
``pairrl.rewards.task_datasets``, with ``data.columns`` renaming columns to task fields),
or DeepCoder-style hub rows. :func:`check_data_source` checks local paths and a parquet
file's columns before anything loads.

TRL hands the rollout only the ``prompt`` column, so each task's generation prompt must
identify it: the last user message's text is the key (``PairRLRollout`` maps it back).
Tasks whose prompt text repeats an earlier task's are dropped and counted.

DeepCoder (``agentica-org/DeepCoder-Preview-Dataset``) rows hold ``problem`` and a JSON
``tests`` list; stdin/stdout tests become ``rewards`` stdio tasks. Rows whose tests the
executor cannot run (e.g. LiveCodeBench functional tests without an entry point) are
skipped and counted, never silently mislabelled.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pairrl.rewards.errors import InputError
from pairrl.rewards.tasks import AnswerTests, Task
from pairrl.rollout.prompt_kit import Conversation, PromptKit
from pairrl.train.config import DataConfig

__all__ = [
    "LoadedTasks",
    "answer_warm_start_examples",
    "build_dataset",
    "check_data_source",
    "deepcoder_row_to_task",
    "load_training_tasks",
]

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class LoadedTasks:
    """The task list plus what was dropped and why."""

    tasks: list[Task]
    skipped: dict[str, int]


def deepcoder_row_to_task(row: dict[str, Any], task_id: str) -> Task:
    """One DeepCoder row to a stdio Task; raises ValueError when its tests are not stdio."""
    from pairrl.rewards.task_loaders import row_to_task

    tests = row.get("tests")
    if isinstance(tests, str):
        tests = json.loads(tests)
    if not isinstance(tests, list) or not tests:
        raise ValueError("no tests")
    cases = []
    for case in tests:
        if case.get("testtype", "stdin") not in ("stdin", "stdin_stdout"):
            raise ValueError(f"test type {case.get('testtype')!r} is not stdin/stdout")
        cases.append({"input": case["input"], "output": case["output"]})
    return row_to_task({"task_id": task_id, "prompt": row["problem"], "tests": cases})


def _hub_tasks(cfg: DataConfig) -> tuple[list[Task], dict[str, int]]:
    from pairrl.rewards.task_datasets import open_rows

    tasks: list[Task] = []
    skipped: dict[str, int] = {}
    for subset in cfg.subsets or [None]:
        for i, row in enumerate(open_rows(cfg.path or "", subset, cfg.split).rows):
            try:
                tasks.append(deepcoder_row_to_task(row, f"{subset or 'default'}/{i}"))
            except (ValueError, KeyError) as err:
                reason = f"{subset}: {str(err).split(':')[0][:60]}"
                skipped[reason] = skipped.get(reason, 0) + 1
    return tasks, skipped


def _dataset_tasks(cfg: DataConfig) -> list[Task]:
    from pairrl.rewards.task_datasets import load_task_source

    tasks: list[Task] = []
    for subset in cfg.subsets or [None]:
        tasks += load_task_source(cfg.path or "", cfg.columns, subset, cfg.split)
    return tasks


def check_data_source(cfg: DataConfig) -> None:
    """Raise :class:`~pairrl.rewards.InputError` before any model loads for a task file
    that is missing or holds an unreadable row, or a local dataset path that is not there
    (or a parquet file without the mapped columns); dataset rows and hub ids are read at
    run time."""
    if cfg.source == "file":
        from pairrl.rewards.task_loaders import TASK_FILE_KINDS, load_tasks

        path = Path(cfg.path or "")
        if not path.is_file():
            what = "is a folder" if path.is_dir() else "file not found"
            raise InputError(f"data.path {path}: {what}; expected {TASK_FILE_KINDS}")
        load_tasks(path, cfg.columns)  # every row, so that a bad one is named now
    elif cfg.source == "dataset":
        from pairrl.rewards.task_datasets import check_task_source
        from pairrl.rewards.task_loaders import load_tasks

        if check_task_source(cfg.path or "", cfg.columns) == "file":
            load_tasks(cfg.path or "", cfg.columns)


def load_training_tasks(cfg: DataConfig) -> LoadedTasks:
    """Tasks for ``cfg`` (shuffled with its seed, capped at ``max_problems``)."""
    skipped: dict[str, int] = {}
    if cfg.source == "tiny_code":
        from pairrl.train.tiny_tasks import tiny_code_tasks

        tasks = tiny_code_tasks()
    elif cfg.source == "file":
        from pairrl.rewards.task_loaders import load_tasks

        tasks = load_tasks(cfg.path or "", cfg.columns)
    elif cfg.source == "dataset":
        tasks = _dataset_tasks(cfg)
    else:
        tasks, skipped = _hub_tasks(cfg)
    random.Random(cfg.shuffle_seed).shuffle(tasks)
    if cfg.max_problems is not None:
        tasks = tasks[: cfg.max_problems]
    if not tasks:
        raise InputError(
            f"data source {cfg.source!r} ({cfg.path}) gave no usable tasks (skipped: {skipped})"
        )
    return LoadedTasks(tasks=tasks, skipped=skipped)


def answer_warm_start_examples(
    tasks: list[Task], kit: PromptKit, num_examples: int, seed: int = 0, judge_every: int = 4
) -> list[Conversation]:
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

    out: list[Conversation] = []
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


def build_dataset(
    tasks: list[Task], generation_messages: Callable[[Task], Messages]
) -> tuple[Any, dict[str, Task], int]:
    """(HF Dataset with ``prompt`` and ``task_id``, prompt-key -> Task, duplicates dropped)."""
    from datasets import Dataset

    by_key: dict[str, Task] = {}
    rows = []
    duplicates = 0
    for task in tasks:
        messages = generation_messages(task)
        key = str(messages[-1]["content"])
        if key in by_key:
            duplicates += 1
            continue
        by_key[key] = task
        rows.append({"prompt": messages, "task_id": task.task_id})
    return Dataset.from_list(rows), by_key, duplicates
