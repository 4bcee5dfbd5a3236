"""Task sets for the benchmark: from a task file (through `pairrl.rewards.load_tasks`), or from
the tests a pool carries, then the split, the limit and the shard.

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
    path: str | Path | None, pool_task_rows: Sequence[dict[str, Any]] | None, work_dir: Path
) -> list[Any]:
    """Tasks from `path`, else from the pool's own rows (converted by the executor's own
    row parser, so both go through one parser; the rows are also written to `work_dir`
    for audits). Raises when neither is available."""
    from pairrl.rewards import load_tasks, row_to_task

    if path is not None:
        return list(load_tasks(str(path)))
    if pool_task_rows is None:
        raise ValueError("no task set: give --tasks (this pool does not carry its own tests)")
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
    elif split != "all":
        raise ValueError(f"unknown split {split!r}; allowed: all, mbpp_test")
    if limit is not None:
        chosen = chosen[:limit]
    if shard is not None:
        index, count = (int(x) for x in shard.split("/"))
        chosen = [t for p, t in enumerate(chosen) if p % count == index]
    return chosen
