"""Where a run's tasks and candidates come from: a pool file, or sampling from a model
or an endpoint (cached under model, prompt, sampling and seed)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pairrl.eval.candidates import Candidate
from pairrl.eval.config import EvalConfig
from pairrl.eval.pools import check_pool_tasks, load_pool
from pairrl.eval.run_state import Issue
from pairrl.eval.tasks import load_task_set, select_tasks

__all__ = ["load_candidates_and_tasks"]


def load_candidates_and_tasks(
    cfg: EvalConfig,
    cache_dir: Path,
    mode: str,
    progress: Callable[[str, int], Callable[[int], None]],
) -> tuple[dict[str, Any], list[Candidate], list[Issue]]:
    """Tasks (after split, limit and shard) by id, their first-k candidates in order, and
    issues (failed or, in replay, missing samples)."""
    src = cfg.candidates
    if src.source == "pool":
        assert src.pool is not None
        all_tasks = _configured_tasks(cfg, cache_dir)
        pool = load_pool(src.pool, all_tasks)
        if all_tasks is None or (pool.task_rows is not None and not cfg.tasks.path):
            # a pool that carries its own tests defines the task set unless a task file is
            # given; a recipe then gives only its prompts
            all_tasks = load_task_set(None, pool.task_rows, cache_dir)
        elif pool.task_rows is not None:  # its own tests, but matched to the given task set
            check_pool_tasks(Path(src.pool), pool.candidates, all_tasks)
        tasks = select_tasks(all_tasks, cfg.tasks.split, cfg.tasks.limit, cfg.shard)
        by_id = {str(t.task_id): t for t in tasks}
        per_task: dict[str, int] = {}
        chosen: list[Candidate] = []
        for cand in pool.candidates:
            if cand.task_id in by_id and per_task.get(cand.task_id, 0) < src.k:
                per_task[cand.task_id] = per_task.get(cand.task_id, 0) + 1
                chosen.append(cand)
        return by_id, chosen, []  # a pool's candidates are data: nothing can have failed
    from pairrl.eval.sampling import sample_candidates

    configured = _configured_tasks(cfg, cache_dir)
    assert configured is not None  # the config's validator requires a task file or a recipe
    tasks = select_tasks(configured, cfg.tasks.split, cfg.tasks.limit, cfg.shard)
    by_id = {str(t.task_id): t for t in tasks}
    cands, issues = sample_candidates(cfg, list(by_id.values()), cache_dir, mode, progress)
    return by_id, cands, issues


def _configured_tasks(cfg: EvalConfig, cache_dir: Path) -> list[Any] | None:
    """The task file's tasks, else the recipe's held-out tasks, else None (a pool's own)."""
    if cfg.tasks.path:
        t = cfg.tasks
        return load_task_set(t.path, None, cache_dir, t.columns, t.subset, t.dataset_split)
    if cfg.recipe is not None:
        from pairrl.eval.kit import recipe_tasks

        return recipe_tasks(cfg)
    return None
