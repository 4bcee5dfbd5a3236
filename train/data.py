"""Training problems as TRL reads them: the checks of a data source before anything loads,
the math families' format-teaching warm start, and the HF dataset TRL iterates over. The
task families themselves (which tasks, which prompts) are ``pairrl.train.task_family``.

TRL hands the rollout only the ``prompt`` column, so each task's generation prompt must
identify it: the last user message's text is the key (``PairRLRollout`` maps it back).
Tasks whose prompt text repeats an earlier task's are dropped and counted.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pairrl.errors import InputError
from pairrl.rewards.tasks import AnswerTests, Task
from pairrl.rollout.prompt_kit import Messages, PromptKit
from pairrl.train.config import DataConfig

__all__ = ["answer_warm_start_examples", "build_dataset", "check_data_source"]


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


def answer_warm_start_examples(
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
