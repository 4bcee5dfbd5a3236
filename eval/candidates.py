"""The candidates schema shared by pools, sampling, labelling and the executor CLI.

One candidate is `{task_id, candidate_id, code}`: `code` is a complete Python source that
defines the task's entry point. A math candidate is `{task_id, candidate_id, text}`: the
completion, whose final `\\boxed{}` answer is labelled and voted on (its `code` is empty). `task_id` is always a string here (pool files sometimes
store integers; they are normalised on load so that keys compare equal everywhere).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairrl.errors import InputError

__all__ = ["Candidate", "group_by_task", "read_candidates", "write_candidates"]


@dataclass(frozen=True)
class Candidate:
    """One solution for one task.

    `text` is the raw model output (or pool completion) the code came from, kept for
    judging prompts and audits; `error` is set when the candidate could not be produced
    (a failed sampling call) and says why; such a candidate is never executed as code.
    """

    task_id: str
    candidate_id: str
    code: str
    text: str = ""
    error: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def completion(self) -> str:
        """The raw output (the code when a pool gave no text): what a math task reads."""
        return self.text or self.code

    def to_json(self) -> dict[str, Any]:
        """The JSON row (schema fields first; extras only when set)."""
        row: dict[str, Any] = {
            "task_id": self.task_id,
            "candidate_id": self.candidate_id,
            "code": self.code,
        }
        if self.text:
            row["text"] = self.text
        if self.error is not None:
            row["error"] = self.error
        if self.meta:
            row["meta"] = self.meta
        return row

    @classmethod
    def from_json(cls, row: dict[str, Any], where: str = "<row>") -> Candidate:
        """Build from a JSON row; a missing or mistyped field raises naming `where`."""
        for key in ("task_id", "candidate_id"):
            if key not in row:
                raise InputError(f"{where}: candidate row lacks {key!r} (keys: {sorted(row)})")
        if "code" not in row and "text" not in row:
            raise InputError(
                f"{where}: candidate row has neither 'code' (a program) nor 'text' (a math "
                f"completion) (keys: {sorted(row)})"
            )
        for key in ("code", "text"):
            if not isinstance(row.get(key, ""), str):
                raise InputError(
                    f"{where}: {key!r} must be a string, got {type(row[key]).__name__}"
                )
        return cls(
            task_id=str(row["task_id"]),
            candidate_id=str(row["candidate_id"]),
            code=row.get("code", ""),
            text=row.get("text", ""),
            error=row.get("error"),
            meta=dict(row.get("meta", {})),
        )


def read_candidates(path: str | Path) -> list[Candidate]:
    """Read a candidates JSONL file; errors name the file and the 1-based line."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found; expected a candidates JSONL file")
    out: list[Candidate] = []
    with path.open() as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise InputError(f"{path}:{lineno}: not valid JSON ({err})") from None
            out.append(Candidate.from_json(row, where=f"{path}:{lineno}"))
    return out


def write_candidates(path: str | Path, candidates: Iterable[Candidate]) -> None:
    """Write candidates as JSONL (one row per candidate)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        for cand in candidates:
            handle.write(json.dumps(cand.to_json()) + "\n")


def group_by_task(candidates: Sequence[Candidate]) -> dict[str, list[Candidate]]:
    """Candidates per task, in input order (the order defines "first sample")."""
    groups: dict[str, list[Candidate]] = {}
    for cand in candidates:
        groups.setdefault(cand.task_id, []).append(cand)
    return groups
