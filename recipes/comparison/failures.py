"""How often a model's judge failed to give a verdict in its benchmark runs, and why.

Every judge call of a benchmark run is a record in ``RUN/eval/<run>/records.jsonl``
(``comparison`` for a tournament's pair, ``fixed_pair`` for the judge-quality pairs,
``pointwise`` for a pointwise selector's rating), with
``failure`` set to the reason when no verdict came back. The summary keeps, per model,
the share of failed calls over both of its runs and the count of each kind of reason
(the reason without the item it quotes: ``non-integer <rating_A> content '...'`` counts as
``non-integer <rating_A> content``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["JUDGE_RECORD_KINDS", "failure_kind", "judge_failures"]

JUDGE_RECORD_KINDS = frozenset({"comparison", "fixed_pair", "pointwise"})

# what follows these words quotes the judge's output or names values: dropped
_QUOTED_TAIL = re.compile(r"( content| value| values)\b.*$")


def failure_kind(reason: str) -> str:
    """The kind of a judge failure's reason.

    >>> failure_kind("truncated: the judge hit max_tokens")
    'truncated'
    >>> failure_kind("non-integer <rating_A> content 'nine'")
    'non-integer <rating_A> content'
    >>> failure_kind("missing <rating_B> tag")
    'missing <rating_B> tag'
    """
    head = reason.split(":", 1)[0].strip()
    match = _QUOTED_TAIL.search(head)
    return head[: match.end(1)] if match else head


def judge_failures(eval_dirs: Iterable[str | Path]) -> dict[str, Any]:
    """``{"calls", "failed", "rate", "by_reason"}`` over the judge records of the runs in
    ``eval_dirs`` (a run without a records file counts nothing); ``rate`` is None when
    there were no judge calls."""
    calls, reasons = 0, Counter[str]()
    for folder in eval_dirs:
        path = Path(folder) / "records.jsonl"
        if not path.is_file():
            continue
        for line in path.read_text().splitlines():
            record = json.loads(line) if line.strip() else {}
            if record.get("kind") not in JUDGE_RECORD_KINDS:
                continue
            calls += 1
            if record.get("failure"):
                reasons[failure_kind(str(record["failure"]))] += 1
    failed = sum(reasons.values())
    return {
        "calls": calls,
        "failed": failed,
        "rate": failed / calls if calls else None,
        "by_reason": dict(reasons.most_common()),
    }
