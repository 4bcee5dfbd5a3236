"""Real candidate pools -> the candidates schema, following ../shared/data/README.md exactly.

Three pool layouts are detected by content (first row's keys), never by file name:

- CodeGen layout, one row per task `{"prompt", "samples": [...]}`: the prompt is
  HumanEval's with the docstring examples removed, so each row is mapped to the one task
  whose prompt contains all of its non-blank lines (checked one-to-one); the program is
  the *task's own* prompt + the truncated completion.
- CodeGeeX HumanEval layout, one row per sample `{"task_id", "prompt", "completion"}`:
  program = prompt + truncated completion.
- CodeGeeX MBPP layout, one row per task `{"task_id", "prompt", "entry_point", "test",
  "completion": [...]}`: program = the prompt's last function (from its final `def `
  line) without the prompt's trailing newline + the truncated completion. These rows
  carry their own tests, so they also define the task set (`PoolData.task_rows`, in the
  generic HumanEval-style JSONL layout the executor reads).
- Already-normalised candidates `{"task_id", "candidate_id", "code"}` (or `"text"`, a math
  completion) pass through.

Completions are truncated at the usual stop sequences (STOP_SEQUENCES). Candidates are
matched to tasks by `task_id` (CodeGen-layout rows by prompt text, see above); a pool row
that cannot be read, or candidates for tasks the task set lacks, is an `InputError` naming
the pool file, the row and what was expected (MATCHING says how matching works).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pairrl.errors import InputError
from pairrl.eval.candidates import Candidate

__all__ = [
    "MATCHING",
    "STOP_SEQUENCES",
    "PoolData",
    "TaskLike",
    "check_pool_tasks",
    "last_function",
    "load_pool",
    "map_prompts_to_tasks",
    "truncate_completion",
]

STOP_SEQUENCES: tuple[str, ...] = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")
MATCHING = (
    "candidates are matched to tasks by task_id (rows of the CodeGen layout by their prompt "
    "text); give the task file the pool was sampled from"
)


class TaskLike(Protocol):
    """What pool loading needs from a task (rewards.Task satisfies it)."""

    task_id: str
    prompt: str


@dataclass(frozen=True)
class PoolData:
    """A normalised pool: candidates in sample order, the layout found, and (for pools
    that carry their own tests) the task rows to label them with."""

    candidates: list[Candidate]
    layout: str
    task_rows: list[dict[str, Any]] | None = None


def truncate_completion(text: str, stops: Sequence[str] = STOP_SEQUENCES) -> str:
    """Cut `text` at the earliest stop sequence (the stop itself is dropped).

    >>> truncate_completion("    return 1\\n\\ndef g():\\n    pass")
    '    return 1\\n'
    """
    cut = len(text)
    for stop in stops:
        pos = text.find(stop)
        if pos != -1:
            cut = min(cut, pos)
    return text[:cut]


def last_function(prompt: str) -> str:
    """The prompt from its final line that starts with `def ` to the end, minus the one
    trailing newline (the MBPP pool's samples were generated without it)."""
    lines = prompt.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("def ")]
    if not starts:
        raise ValueError("prompt has no line starting with 'def '")
    tail = "\n".join(lines[starts[-1] :])
    return tail[:-1] if tail.endswith("\n") else tail


def map_prompts_to_tasks(prompts: Sequence[str], tasks: Sequence[TaskLike]) -> list[str]:
    """For each stripped prompt, the task_id of the one task whose prompt contains all of
    its non-blank lines. Raises when a prompt matches zero or several tasks, or when two
    prompts map to the same task (the mapping must be one-to-one)."""
    out: list[str] = []
    seen: dict[str, int] = {}
    for index, prompt in enumerate(prompts):
        lines = [line for line in prompt.splitlines() if line.strip()]
        hits = [t.task_id for t in tasks if all(line in t.prompt for line in lines)]
        if len(hits) != 1:
            raise InputError(
                f"pool row {index + 1}: prompt matches {len(hits)} tasks ({hits[:5]}); expected "
                "one (a row matches the task whose prompt holds every non-blank line of its own)"
            )
        if hits[0] in seen:
            raise InputError(
                f"pool rows {seen[hits[0]] + 1} and {index + 1} both map to task {hits[0]}"
            )
        seen[hits[0]] = index
        out.append(hits[0])
    return out


def load_pool(path: str | Path, tasks: Sequence[TaskLike] | None = None) -> PoolData:
    """Read a pool file and return normalised candidates (see the module docstring).

    `tasks` is needed for layouts whose rows must be matched to a task set (CodeGen) and
    is used to check that every candidate's task exists when given.
    """
    path = Path(path)
    rows = _read_jsonl(path)
    if not rows:
        raise InputError(f"{path}: empty pool; expected one JSON object per line")
    first = rows[0]
    if "samples" in first:
        data = _codegen_layout(path, rows, tasks)
    elif isinstance(first.get("completion"), list):
        data = _mbpp_layout(path, rows)
    elif isinstance(first.get("completion"), str):
        data = _per_sample_layout(path, rows)
    elif {"task_id", "candidate_id"} <= set(first) and ("code" in first or "text" in first):
        data = PoolData(
            candidates=[Candidate.from_json(r, f"{path}:{i + 1}") for i, r in enumerate(rows)],
            layout="candidates",
        )
    else:
        raise InputError(
            f"{path}: unknown pool layout (first row keys: {sorted(first)}); expected "
            "{task_id, candidate_id, code or text} rows or a layout listed in pairrl.eval.pools"
        )
    if tasks is not None and data.task_rows is None:
        check_pool_tasks(path, data.candidates, tasks)
    return data


def check_pool_tasks(path: Path, candidates: Sequence[Candidate], tasks: Sequence[Any]) -> None:
    """Every candidate's task is in the task set; else an error naming both sides' ids."""
    known = {str(t.task_id) for t in tasks}
    pool_ids = sorted({c.task_id for c in candidates})
    missing = [t for t in pool_ids if t not in known]
    if not missing:
        return
    where = str(getattr(tasks[0], "source", "")) if tasks else ""
    which = (
        "no task id of the pool is"
        if len(missing) == len(pool_ids)
        else f"{len(missing)} of the pool's {len(pool_ids)} task ids are not"
    )
    raise InputError(
        f"{path}: {which} in the task set {where} ({len(known)} tasks): pool ids such as "
        f"{missing[:3]}, task ids such as {sorted(known)[:3]}; {MATCHING}"
    )


def _codegen_layout(
    path: Path, rows: list[dict[str, Any]], tasks: Sequence[TaskLike] | None
) -> PoolData:
    if tasks is None:
        raise InputError(f"{path}: this pool's prompts must be matched to a task set; pass --tasks")
    try:
        task_ids = map_prompts_to_tasks([r["prompt"] for r in rows], tasks)
    except InputError as err:
        raise InputError(f"{path}: {err}; {MATCHING}") from None
    by_id = {t.task_id: t for t in tasks}
    cands: list[Candidate] = []
    for row, task_id in zip(rows, task_ids, strict=True):
        prompt = by_id[task_id].prompt
        for j, sample in enumerate(row["samples"]):
            body = truncate_completion(sample)
            cands.append(Candidate(task_id, str(j), prompt + body, text=body))
    return PoolData(cands, "codegen_prompt_samples")


def _per_sample_layout(path: Path, rows: list[dict[str, Any]]) -> PoolData:
    cands: list[Candidate] = []
    counts: dict[str, int] = {}
    for i, row in enumerate(rows):
        for key in ("task_id", "prompt", "completion"):
            if key not in row:
                raise InputError(f"{path}:{i + 1}: row lacks {key!r} (keys: {sorted(row)})")
        task_id = str(row["task_id"])
        j = counts.get(task_id, 0)
        counts[task_id] = j + 1
        body = truncate_completion(row["completion"])
        cands.append(Candidate(task_id, str(j), row["prompt"] + body, text=body))
    return PoolData(cands, "per_sample_completion")


def _mbpp_layout(path: Path, rows: list[dict[str, Any]]) -> PoolData:
    cands: list[Candidate] = []
    task_rows: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        for key in ("task_id", "prompt", "entry_point", "test", "completion"):
            if key not in row:
                raise InputError(f"{path}:{i + 1}: row lacks {key!r} (keys: {sorted(row)})")
        task_id = str(row["task_id"])
        head = last_function(row["prompt"])
        for j, sample in enumerate(row["completion"]):
            body = truncate_completion(sample)
            cands.append(Candidate(task_id, str(j), head + body, text=body))
        task_rows.append(
            {
                "task_id": task_id,
                # The judge and the agreement selector see the target function's stub,
                # not the few-shot context.
                "prompt": head + "\n",
                "entry_point": row["entry_point"],
                "test": row["test"],
            }
        )
    return PoolData(cands, "mbpp_fewshot_completions", task_rows=task_rows)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "file not found"
        raise InputError(f"{path}: {what}; expected a pool file (JSONL, one object per line)")
    rows: list[dict[str, Any]] = []
    with path.open() as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as err:
                raise InputError(f"{path}:{lineno}: not valid JSON ({err})") from None
            if not isinstance(row, dict):
                raise InputError(f"{path}:{lineno}: expected a JSON object, got {row!r:.60}")
            rows.append(row)
    return rows
