"""Read task files into :class:`Task` objects; the format is detected from the content.

Known formats (``.gz`` is decompressed first):

* MBPP (original or sanitized) JSON/JSONL: ``task_id, code, test_list`` (+ ``test_imports``).
* MBPP+ / HumanEval+ (EvalPlus): ``base_input``/``plus_input`` with ``canonical_solution``
  and ``atol``; judged on those inputs against the canonical solution's outputs.
* HumanEval-style JSONL: ``task_id, prompt, entry_point, test`` where ``test`` defines
  ``check(candidate)``; the asserts may use ``candidate`` or the function's own name.
* stdin/stdout JSONL: ``task_id`` and either ``tests: [{input, output}]`` or
  ``input_output: {inputs, outputs}`` (a dict or its JSON string, as in APPS/TACO).
* math: ``problem`` (or ``question``) and ``answer``, the gold final answer (GSM8K's
  ``... #### 72`` reads as ``72``); judged by math-verify (``pairrl.rewards.answers``).

A column mapping (``{task field: column}``, e.g. ``{problem: question}``) renames a file's
or a dataset's columns to these fields first; a row without ``task_id`` gets
``<file stem>/<row index>``. A missing file, a row that fits no format or a mapped column
that is absent is a :class:`TaskFormatError` naming the file, the row and what was expected;
so is a file that holds no task (empty, or an empty JSON list).
"""

from __future__ import annotations

import ast
import gzip
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from pairrl.errors import InputError
from pairrl.rewards.answers import answer_task
from pairrl.rewards.evalplus_compat import oracle_for, restore_mbpp_inputs
from pairrl.rewards.tasks import AssertTests, IOTests, StdioTests, Task, prompt_helpers

TASK_FILE_KINDS = (
    "a task file (JSON or JSONL, optionally .gz: MBPP, MBPP+, HumanEval(+), stdin/stdout or "
    "math rows)"
)


class TaskFormatError(InputError):
    """A task file or row the loaders cannot read; the message names file and row."""


def _read_text(path: Path) -> str:
    if path.is_dir():
        raise TaskFormatError(f"{path}: is a folder; expected {TASK_FILE_KINDS}")
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return raw.decode("utf-8")
    except FileNotFoundError:
        raise TaskFormatError(f"{path}: file not found; expected {TASK_FILE_KINDS}") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise TaskFormatError(f"{path}: cannot be read as {TASK_FILE_KINDS}: {exc}") from None


def _read_rows(path: Path) -> list[dict[str, Any]]:
    text = _read_text(path)
    stripped = text.lstrip()
    if stripped.startswith("[") or (stripped.startswith("{") and "\n" not in stripped.strip()):
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TaskFormatError(f"{path}: not valid JSON: {exc}") from None
        rows = [rows] if stripped.startswith("{") else rows
    else:
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise TaskFormatError(f"{path}: line {number} is not JSON: {exc}") from None
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


def _from_answer(row: dict[str, Any]) -> Task:
    problem = row.get("problem", row.get("question"))
    if not isinstance(problem, str) or not problem.strip():
        raise ValueError("the problem is empty")
    return answer_task(str(row["task_id"]), problem, str(row["answer"]))


def _is_answer_row(row: dict[str, Any]) -> bool:
    return "answer" in row and ("problem" in row or "question" in row)


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
    if _is_answer_row(row):
        return _from_answer(row)
    raise ValueError(
        f"no known task format fits the fields {sorted(row)} (math rows need problem or "
        "question, and answer; code rows: see pairrl.rewards.task_loaders)"
    )


def map_columns(
    row: dict[str, Any],
    columns: dict[str, str] | None,
    where: str,
    index: int,
    id_prefix: str | None = None,
) -> dict[str, Any]:
    """``row`` with the mapped columns under their task-field names (the others kept) and
    a ``task_id`` when it has none (``<id_prefix, else where's stem>/<index>``)."""
    out = dict(row)
    for task_field, column in (columns or {}).items():
        if column not in row:
            raise TaskFormatError(
                f"{where}: row {index}: column {column!r} (task field {task_field!r} in the "
                f"column mapping) is not there; its columns are: {', '.join(sorted(row))}"
            )
        out[task_field] = row[column]
    if out.get("task_id") is None:
        out["task_id"] = f"{id_prefix or Path(where).stem.split('.')[0]}/{index}"
    return out


def rows_to_tasks(
    rows: Any,
    where: str,
    columns: dict[str, str] | None = None,
    first_row: int = 1,
    id_prefix: str | None = None,
) -> list[Task]:
    """Tasks from rows (numbered from ``first_row`` in messages, mapped by ``columns``)."""
    tasks = []
    for number, raw in enumerate(rows, first_row):
        row = map_columns(raw, columns, where, number, id_prefix)
        try:
            task = row_to_task(row)
        except (KeyError, ValueError, TypeError, SyntaxError) as exc:
            raise TaskFormatError(
                f"{where}: row {number} (task_id {row.get('task_id')!r}): "
                f"{type(exc).__name__}: {exc}"
            ) from None
        tasks.append(replace(task, source=where))
    return tasks


def load_tasks(path: str | Path, columns: dict[str, str] | None = None) -> list[Task]:
    """Load every task in ``path`` (format detected by content; ``columns``: see above); a
    file that holds no task is a :class:`TaskFormatError`, as a missing one is."""
    tasks = rows_to_tasks(_read_rows(Path(path)), str(path), columns)
    if not tasks:
        raise TaskFormatError(f"{path}: holds no task; expected {TASK_FILE_KINDS}")
    return tasks


def deepcoder_row_to_task(row: dict[str, Any], task_id: str) -> Task:
    """One DeepCoder (``agentica-org/DeepCoder-Preview-Dataset``) row, ``problem`` and a JSON
    ``tests`` list, to a stdio Task; raises ValueError when its tests are not stdin/stdout
    (e.g. LiveCodeBench functional tests without an entry point)."""
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
