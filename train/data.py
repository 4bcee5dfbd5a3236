"""Training problems as TRL reads them: the checks of a data source before anything loads
and the HF dataset TRL iterates over. The
task families themselves (which tasks, which prompts) are ``pairrl.train.task_family``.

TRL hands the rollout only the ``prompt`` column, so each task's generation prompt must
identify it: the last user message's text is the key (``PairRLRollout`` maps it back).
Tasks whose prompt text repeats an earlier task's are dropped and counted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pairrl.errors import InputError
from pairrl.rewards.tasks import Task
from pairrl.rollout.prompt_kit import Messages
from pairrl.train.config import DataConfig

__all__ = ["build_dataset", "check_data_source"]


def check_data_source(cfg: DataConfig) -> None:
    """Raise :class:`~pairrl.errors.InputError` before any model loads for a task file
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
