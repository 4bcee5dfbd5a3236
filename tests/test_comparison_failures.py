"""A model's judge failures over its benchmark runs (pairrl.recipes.comparison.failures)."""

from __future__ import annotations

import json
from pathlib import Path

from pairrl.recipes.comparison.failures import judge_failures


def _records(folder: Path, rows: list[dict]) -> Path:
    folder.mkdir()
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_failed_judge_calls_are_counted_by_kind_over_both_runs(tmp_path: Path) -> None:
    own = _records(
        tmp_path / "own",
        [
            {"kind": "candidate", "failure": None},  # not a judge call
            {"kind": "comparison", "failure": None},
            {"kind": "comparison", "failure": "truncated: the judge hit max_tokens"},
            {"kind": "comparison", "failure": "non-integer <rating_A> content 'nine'"},
            {"kind": "selection", "failure": "every pointwise judgement failed"},  # a pick
        ],
    )
    shared = _records(
        tmp_path / "shared",
        [
            {"kind": "fixed_pair", "failure": "non-integer <rating_A> content 'ten'"},
            {"kind": "fixed_pair", "failure": None},
            {"kind": "pointwise", "failure": "missing <rating> tag"},
        ],
    )
    got = judge_failures([own, shared, tmp_path / "no-run"])
    # 6 judge calls (3 comparisons, 2 fixed pairs, 1 pointwise), 4 failed
    assert got == {
        "calls": 6,
        "failed": 4,
        "rate": 4 / 6,
        "by_reason": {
            "non-integer <rating_A> content": 2,
            "truncated": 1,
            "missing <rating> tag": 1,
        },
    }
    assert judge_failures([])["rate"] is None
