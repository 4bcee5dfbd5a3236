"""Task sets for the benchmark: from a task file, a parquet file, a dataset folder or a
datasets hub id (through `pairrl.rewards.task_datasets`, with a column mapping), or from the
tests a pool carries, then the split, the limit and the shard.

Order is the file's order; `--limit N` keeps the first N tasks *after* the split, and a
shard `i/n` keeps every task whose position p satisfies p % n == i (so shards balance
task difficulty along the file and merge back into the exact unsharded set).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["load_task_set", "select_tasks", "task_number"]


def load_task_set(
    path: str | Path | None,
    pool_task_rows: Sequence[dict[str, Any]] | None,
    work_dir: Path,
    columns: dict[str, str] | None = None,
    subset: str | None = None,
    dataset_split: str = "test",
) -> list[Any]:
    """Tasks from `path` (any source `pairrl.rewards.task_datasets` reads, `columns`
    renaming its columns), else from the pool's own rows (converted by the executor's own
    row parser, so both go through one parser; the rows are also written to `work_dir`
    for audits). Raises `InputError` when neither is available or the source holds none."""
    from pairrl.rewards import InputError, row_to_task
    from pairrl.rewards.task_datasets import load_task_source

    if path is not None:
        tasks = load_task_source(str(path), columns, subset, dataset_split)
        if not tasks:
            raise InputError(f"{path}: holds no task")
        return tasks
    if pool_task_rows is None:
        raise InputError("no task set: give --tasks (this pool does not carry its own tests)")
    work_dir.mkdir(parents=True, exist_ok=True)
    with (work_dir / "pool_tasks.jsonl").open("w") as handle:
        for row in pool_task_rows:
            handle.write(json.dumps(row) + "\n")
    return [row_to_task(row) for row in pool_task_rows]


def task_number(task_id: str) -> int | None:
    """The trailing integer of a task id ("Mbpp/11" -> 11, "11" -> 11), else None."""
    match = re.search(r"(\d+)$", str(task_id))
    return int(match.group(1)) if match else None


def select_tasks(
    tasks: Sequence[Any], split: str = "all", limit: int | None = None, shard: str | None = None
) -> list[Any]:
    """Apply the split (`mbpp_test`: ids 11..510), then the limit, then the shard."""
    chosen = list(tasks)
    if split == "mbpp_test":
        chosen = [t for t in chosen if (n := task_number(t.task_id)) is not None and 11 <= n <= 510]
        if tasks and not chosen:
            from pairrl.rewards import InputError

            raise InputError(
                f"tasks.split 'mbpp_test' keeps tasks whose id ends in 11..510, and none of the "
                f"{len(tasks)} tasks (ids such as {[t.task_id for t in tasks[:3]]}) does: "
                "use split 'all' for other task sets"
            )
    elif split != "all":
        raise ValueError(f"unknown split {split!r}; allowed: all, mbpp_test")
    if limit is not None:
        chosen = chosen[:limit]
    if shard is not None:
        index, count = (int(x) for x in shard.split("/"))
        chosen = [t for p, t in enumerate(chosen) if p % count == index]
    return chosen
