"""A benchmark failure is never read as a score.

A run the integrity gate FAILs exits non-zero with or without --strict (`pairrl eval`,
`pairrl eval gate` and `pairrl eval merge` alike), prints its reasons and failure counts
and no accuracy, draws no chart, and keeps its numbers in summary.json marked FAIL. A
number measured on no task is n/a, never 0, and each task counts as failed for the
selectors whose pick rests on a label that could not be measured. --strict still means
something: a PASS that failed entries reached (within gate.tolerance) exits 1 under it.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from pairrl.eval.aggregate import summarise
from pairrl.eval.selectors import Selection, select_first, select_oracle, select_random

Cli = Callable[..., tuple[int, str]]

TASKS = [
    {
        "task_id": f"t/{name}",
        "prompt": f'def {name}(x):\n    """Return {doc}."""\n',
        "entry_point": name,
        "test": f"def check(candidate):\n    assert candidate(3) == {value}\n",
    }
    for name, doc, value in (("inc", "x + 1", 4), ("dbl", "2 * x", 6), ("neg", "-x", -3))
]
BODIES = {"inc": ["x + 1", "x"], "dbl": ["x", "2 * x"], "neg": ["-x", "-x"]}
# An accuracy figure as the report and the table print it, or a name of one.
SCORE = re.compile(r"\d+\.\d+ \[|\d+\.\d %|accuracy|pass@1|oracle pass@k")


@pytest.fixture()
def task_file(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    return path


@pytest.fixture()
def pool_file(tmp_path: Path) -> Path:
    rows = [
        {
            "task_id": f"t/{name}",
            "candidate_id": str(j),
            "code": f"def {name}(x):\n    return {b}\n",
        }
        for name, bodies in BODIES.items()
        for j, b in enumerate(bodies)
    ]
    path = tmp_path / "pool.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _dead_endpoint() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens there once the socket is closed


def _dead_run(task_file: Path, out: Path, *extra: str, endpoint: str | None = None) -> list[str]:
    return [
        "--tasks", str(task_file), "--endpoint", endpoint or _dead_endpoint(), "--k", "3",
        "--out", str(out), "--no-progress", "--set", "candidates.http.max_retries=0",
        "--set", "preflight.enabled=false", *extra,
    ]  # fmt: skip


def _check_failed_output(out: str) -> None:
    """FAIL, the reasons and counts, and no accuracy figure anywhere."""
    assert "integrity gate: FAIL" in out and "PASS" not in out
    assert SCORE.search(out) is None, out


@pytest.mark.parametrize("strict", [[], ["--strict"]], ids=["plain", "strict"])
def test_dead_endpoint_exits_non_zero_and_prints_no_score(
    eval_cli: Cli, task_file: Path, tmp_path: Path, strict: list[str]
) -> None:
    out_dir = tmp_path / "o"
    code, out = eval_cli(_dead_run(task_file, out_dir, *strict))
    assert code == 1
    _check_failed_output(out)
    assert "samples: 9 of 9 failed" in out and "labels: 9 of 9 failed" in out
    for name in ("random", "first", "agreement", "oracle"):  # counted where they failed
        assert f"| {name} | 3 of 3 |" in out
    report = (out_dir / "report.md").read_text()
    assert SCORE.search(report) is None and "No score is reported" in report
    assert not any((out_dir / png).exists() for png in ("selectors.png", "cost.png"))
    # The numbers stay for diagnosis, marked FAIL; none measured is n/a, never 0.
    summary = json.loads((out_dir / "summary.json").read_text())
    assert list(summary)[:2] == ["verdict", "verdict_note"] and summary["verdict"] == "FAIL"
    assert summary["pass@1"]["value"] is None and summary["oracle"]["value"] is None
    for row in summary["selectors"].values():
        assert row["accuracy"] == {"value": None, "ci95": [None, None]}
        assert row["failed_tasks"] == 3


def test_gate_and_merge_exit_non_zero_on_fail_without_strict(
    eval_cli: Cli, task_file: Path, pool_file: Path, tmp_path: Path
) -> None:
    whole = tmp_path / "whole"
    base = ["--tasks", str(task_file), "--pool", str(pool_file), "--k", "2", "--no-progress"]
    code, out = eval_cli([*base, "--out", str(whole)])
    assert code == 0, out
    assert (whole / "selectors.png").is_file()
    labels = whole / "cache" / "labels.jsonl"
    labels.write_text("\n".join(labels.read_text().splitlines()[1:]) + "\n")
    code, out = eval_cli(["gate", str(whole)])
    assert code == 1
    _check_failed_output(out)
    assert "missing from the cache" in out
    assert not (whole / "selectors.png").exists()  # the PASS's chart is not left behind

    sharded, dead = tmp_path / "sharded", _dead_endpoint()
    for shard in ("0/2", "1/2"):
        code, out = eval_cli(_dead_run(task_file, sharded, "--shard", shard, endpoint=dead))
        assert code == 1, out
    code, out = eval_cli(["merge", str(sharded)])
    assert code == 1
    _check_failed_output(out)
    assert "samples: 9 of 9 failed" in out


def test_strict_exits_non_zero_on_a_pass_that_failures_reached(
    eval_cli: Cli, task_file: Path, tmp_path: Path
) -> None:
    """With gate.tolerance 1 every failure is let through: the gate PASSes, the table
    shows n/a for what nothing measured, and --strict refuses the run."""
    args = _dead_run(task_file, tmp_path / "o", "--set", "gate.tolerance=1.0")
    code, out = eval_cli(args)
    assert code == 0, out
    assert "integrity gate: PASS" in out
    assert "| random | n/a | n/a | n/a | 3 |" in out
    assert "- pass@1: n/a  (verdict: PASS)" in out
    code, out = eval_cli([*args, "--strict"])
    assert code == 1
    assert "strict: the gate passed with failed entries within the tolerance 100.0%" in out
    assert "samples: 9" in out


def test_unmeasured_labels_give_n_a_and_count_where_they_fail() -> None:
    labels = {"a": [True, False], "b": [False, False], "c": [False, True]}
    unmeasured = {"a": [False, True], "b": [True, True], "c": [False, False]}
    picks = {"first": select_first, "oracle": select_oracle, "random": select_random}
    selections = {name: {t: pick(t, v) for t, v in labels.items()} for name, pick in picks.items()}
    summary = summarise(labels, selections, n_boot=100, unmeasured=unmeasured)
    # some task measured: an unmeasured label counts as not passed (the gate flags it)
    assert summary["pass@1"]["value"] == pytest.approx((1 / 2 + 0 + 1 / 2) / 3)
    assert summary["oracle"]["value"] == pytest.approx(2 / 3)

    # pass@1 needs a task with every label measured, oracle also one with a measured pass
    partly = summarise(
        {"a": [True, False], "b": [False, False]},
        {},
        n_boot=100,
        unmeasured={"a": [False, True], "b": [True, False]},
    )
    assert partly["pass@1"]["value"] is None
    assert partly["oracle"]["value"] == pytest.approx(1 / 2)
    nothing = {"a": [True, True], "b": [True, True], "c": [True, True]}
    summary = summarise(labels, selections, n_boot=100, unmeasured=nothing)
    assert summary["pass@1"]["value"] is None and summary["oracle"]["value"] is None

    failed = {t: Selection("x", t, None, 0.0, failure="judge down") for t in labels}
    half = {t: failed[t] if t == "b" else select_first(t, labels[t]) for t in labels}
    summary = summarise(labels, {"all_failed": failed, "one_failed": half}, n_boot=100)
    assert summary["selectors"]["all_failed"]["accuracy"] == {"value": None, "ci95": [None, None]}
    assert summary["selectors"]["all_failed"]["gap_closed"]["value"] is None
    assert summary["selectors"]["all_failed"]["failed_tasks"] == 3
    # a failed task among measured ones scores 0 (a: 1, b: failed, c: 0) and is counted
    assert summary["selectors"]["one_failed"]["accuracy"]["value"] == pytest.approx(1 / 3)
    assert summary["selectors"]["one_failed"]["failed_tasks"] == 1


def test_a_pick_fails_only_where_its_labels_are_unmeasured() -> None:
    from pairrl.eval.pipeline import _fail_if_unmeasured

    labels, reasons = [False, True, False], [None, None, "sampling failed: timeout"]
    assert _fail_if_unmeasured(select_first("t", labels), reasons).failure is None
    assert _fail_if_unmeasured(select_oracle("t", labels), reasons).failure is None  # a pass
    for pick in (select_random, select_oracle):
        failed = _fail_if_unmeasured(pick("t", [False, False, False]), reasons)
        assert failed.failure == "1 of 3 candidates have no label (e.g. sampling failed: timeout)"
    chosen_last = Selection("swiss_2n", "t", 2, 0.0)
    failed = _fail_if_unmeasured(chosen_last, reasons)
    assert failed.failure == "the chosen candidate 2 has no label (sampling failed: timeout)"
    assert (failed.chosen, failed.score) == (2, 0.0)  # the pick the gate compares is kept
