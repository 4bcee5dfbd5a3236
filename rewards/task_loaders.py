"""Read task files into :class:`Task` objects; the format is detected from the content.

Known formats (``.gz`` is decompressed first):

* MBPP (original or sanitized) JSON/JSONL: ``task_id, code, test_list`` (+ ``test_imports``).
* MBPP+ / HumanEval+ (EvalPlus): ``base_input``/``plus_input`` with ``canonical_solution``
  and ``atol``; judged on those inputs against the canonical solution's outputs.
* HumanEval-style JSONL: ``task_id, prompt, entry_point, test`` where ``test`` defines
  ``check(candidate)``; the asserts may use ``candidate`` or the function's own name.
* stdin/stdout JSONL: ``task_id`` and either ``tests: [{input, output}]`` or
  ``input_output: {inputs, outputs}`` (a dict or its JSON string, as in APPS/TACO).

A row that fits no format is an error naming the file and the row.
"""

from __future__ import annotations

import ast
import gzip
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from pairrl.rewards.evalplus_compat import oracle_for, restore_mbpp_inputs
from pairrl.rewards.tasks import AssertTests, IOTests, StdioTests, Task, prompt_helpers


class TaskFormatError(ValueError):
    """A task file or row the loaders cannot read; the message names file and row."""


def _read_rows(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    text = raw.decode("utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        rows = json.loads(text)
    elif stripped.startswith("{") and "\n" not in stripped.strip():
        rows = [json.loads(text)]
    else:
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise TaskFormatError(f"{path}: line {number} is not JSON: {exc}") from exc
    if isinstance(rows, dict):  # {task_id: row} mappings
        rows = [{"task_id": key, **value} for key, value in rows.items()]
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise TaskFormatError(f"{path}: expected JSON objects, one per task")
    return rows


def _mbpp_entry_point(row: dict[str, Any]) -> str:
    """The function the first assert calls that the reference code defines."""
    defined = [
        node.name
        for node in ast.parse(row["code"]).body
        if isinstance(node, ast.FunctionDef | ast.ClassDef)
    ]
    for node in ast.walk(ast.parse(row["test_list"][0])):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in defined
        ):
            return node.func.id
    if defined:
        return defined[-1]
    raise ValueError("reference code defines no function")


def _from_mbpp(row: dict[str, Any]) -> Task:
    prompt = row.get("prompt") or row.get("text") or ""
    return Task(
        task_id=str(row["task_id"]),
        prompt=prompt,
        entry_point=_mbpp_entry_point(row),
        tests=AssertTests(
            cases=tuple(row["test_list"]),
            setup="\n".join(row.get("test_imports") or []),
        ),
        canonical_solution=row["code"],
    )


def _from_evalplus(row: dict[str, Any]) -> Task:
    canonical = row["canonical_solution"]
    entry = row["entry_point"]
    prompt = row["prompt"]
    if f"def {entry}" not in canonical:  # HumanEval+: the body continues the prompt
        canonical = prompt + canonical
    task_id = str(row["task_id"])
    inputs = list(row["base_input"]) + list(row.get("plus_input") or ())
    if task_id.startswith("Mbpp/"):
        inputs = restore_mbpp_inputs(task_id, inputs)
    return Task(
        task_id=task_id,
        prompt=prompt,
        entry_point=entry,
        tests=IOTests(
            inputs=tuple(inputs),
            atol=float(row.get("atol") or 0.0),
            oracle=oracle_for(task_id, entry),
        ),
        canonical_solution=canonical,
        helpers=prompt_helpers(prompt, entry),
    )


def _from_humaneval(row: dict[str, Any]) -> Task:
    entry, prompt = row["entry_point"], row["prompt"]
    canonical = row.get("canonical_solution")
    if canonical and f"def {entry}" not in canonical:
        canonical = prompt + canonical
    return Task(
        task_id=str(row["task_id"]),
        prompt=prompt,
        entry_point=entry,
        tests=AssertTests(cases=(row["test"],), check_call="def check(" in row["test"]),
        canonical_solution=canonical,
        helpers=prompt_helpers(prompt, entry),
    )


def _from_stdio(row: dict[str, Any]) -> Task:
    if "tests" in row:
        cases = tuple((str(t["input"]), str(t["output"])) for t in row["tests"])
    else:
        io = row["input_output"]
        io = json.loads(io) if isinstance(io, str) else io
        cases = tuple(
            (_joined(i), _joined(o)) for i, o in zip(io["inputs"], io["outputs"], strict=True)
        )
    if not cases:
        raise ValueError("no stdin/stdout cases")
    return Task(
        task_id=str(row["task_id"]),
        prompt=str(row.get("prompt") or row.get("question") or ""),
        entry_point=str(row.get("entry_point") or ""),
        tests=StdioTests(cases=cases),
        canonical_solution=row.get("canonical_solution") or row.get("solution"),
    )


def _joined(value: Any) -> str:
    return "\n".join(map(str, value)) if isinstance(value, list) else str(value)


def row_to_task(row: dict[str, Any]) -> Task:
    """Convert one row by the fields it has; ValueError/KeyError when none fits."""
    if "test_list" in row and "code" in row:
        return _from_mbpp(row)
    if "base_input" in row and "canonical_solution" in row:
        return _from_evalplus(row)
    if "test" in row and "entry_point" in row and "prompt" in row:
        return _from_humaneval(row)
    if "tests" in row or "input_output" in row:
        return _from_stdio(row)
    raise ValueError(f"no known task format fits the fields {sorted(row)}")


def load_tasks(path: str | Path) -> list[Task]:
    """Load every task in ``path`` (format detected by content)."""
    path = Path(path)
    tasks = []
    for number, row in enumerate(_read_rows(path), 1):
        try:
            task = row_to_task(row)
        except (KeyError, ValueError, TypeError, SyntaxError) as exc:
            raise TaskFormatError(
                f"{path}: row {number} (task_id {row.get('task_id')!r}): {type(exc).__name__}: {exc}"
            ) from exc
        tasks.append(replace(task, source=str(path)))
    return tasks
