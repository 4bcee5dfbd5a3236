"""Training problems: load tasks, and the HF dataset TRL iterates over.

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
from typing import Any

from pairrl.rewards.tasks import Task
from pairrl.train.config import DataConfig

__all__ = ["LoadedTasks", "build_dataset", "deepcoder_row_to_task", "load_training_tasks"]

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
    from datasets import load_dataset

    tasks: list[Task] = []
    skipped: dict[str, int] = {}
    for subset in cfg.subsets or [None]:
        rows = load_dataset(cfg.path, subset, split=cfg.split)
        for i, row in enumerate(rows):
            try:
                tasks.append(deepcoder_row_to_task(row, f"{subset or 'default'}/{i}"))
            except (ValueError, KeyError) as err:
                reason = f"{subset}: {str(err).split(':')[0][:60]}"
                skipped[reason] = skipped.get(reason, 0) + 1
    return tasks, skipped


def load_training_tasks(cfg: DataConfig) -> LoadedTasks:
    """Tasks for ``cfg`` (shuffled with its seed, capped at ``max_problems``)."""
    skipped: dict[str, int] = {}
    if cfg.source == "tiny_code":
        from pairrl.train.tiny_tasks import tiny_code_tasks

        tasks = tiny_code_tasks()
    elif cfg.source == "file":
        from pairrl.rewards.task_loaders import load_tasks

        tasks = load_tasks(cfg.path or "")
    else:
        tasks, skipped = _hub_tasks(cfg)
    random.Random(cfg.shuffle_seed).shuffle(tasks)
    if cfg.max_problems is not None:
        tasks = tasks[: cfg.max_problems]
    if not tasks:
        raise ValueError(f"data source {cfg.source!r} gave no usable tasks (skipped: {skipped})")
    return LoadedTasks(tasks=tasks, skipped=skipped)


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
