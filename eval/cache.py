"""An on-disk, content-keyed, append-only cache for the benchmark's stages.

Each stage (samples, labels, outputs, pointwise, pairwise) is one JSONL file under the
cache directory; a line is `{"key": <sha256 of the key material>, "value": {...}}`.
Writes append and flush, so a run killed mid-stage loses at most the batch in flight and
resumes from what is on disk. A torn last line (the kill landed mid-write) is skipped and
counted in `torn_lines`; a malformed line anywhere else is an error naming file and line.

Keys are computed from *content* (model id, prompt, sampling parameters, seed, code,
tests), never from positions, so reordering or sharding a run reuses every entry.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["StageCache", "content_key"]


def content_key(*parts: Any) -> str:
    """sha256 over the canonical JSON of `parts` (sorted keys; non-JSON types via str)."""
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class StageCache:
    """One stage's entries: `get`, `put_many`, `__contains__`, `delete` (for audits)."""

    def __init__(self, root: str | Path, stage: str) -> None:
        self.path = Path(root) / f"{stage}.jsonl"
        self.stage = stage
        self.torn_lines = 0
        self._entries: dict[str, dict[str, Any]] = {}
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        lines = self.path.read_text().split("\n")
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                if lineno >= len(lines) - 1:
                    self.torn_lines += 1  # the last line of a killed write
                    continue
                raise ValueError(f"{self.path}:{lineno}: corrupt cache line ({err})") from None
            self._entries[row["key"]] = row["value"]
        if self.torn_lines:
            # Rewrite without the torn tail so later appends start on a fresh line.
            self._rewrite()

    def _rewrite(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("w") as handle:
            for key, value in self._entries.items():
                handle.write(json.dumps({"key": key, "value": value}) + "\n")
        os.replace(tmp, self.path)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored value, or None when absent."""
        return self._entries.get(key)

    def put_many(self, items: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Append entries and flush them to disk (one write per batch)."""
        items = list(items)
        if not items:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as handle:
            for key, value in items:
                handle.write(json.dumps({"key": key, "value": value}) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        for key, value in items:
            self._entries[key] = value

    def delete(self, key: str) -> bool:
        """Remove an entry on disk and in memory; True if it existed."""
        if key not in self._entries:
            return False
        del self._entries[key]
        self._rewrite()
        return True

    def items(self) -> list[tuple[str, dict[str, Any]]]:
        """Every (key, value), in insertion order."""
        return list(self._entries.items())
