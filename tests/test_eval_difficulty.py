"""Accuracy by difficulty: a task's pass rate over its k candidates, bucketed easy / medium /
hard by the config's thresholds, and every selector's accuracy per bucket with its number
of tasks, against numbers worked by hand."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pairrl.eval.aggregate import difficulty_split, summarise
from pairrl.eval.metrics import difficulty_bucket
from pairrl.eval.selectors import Selection, select_first, select_oracle, select_random

# pass rates: a 3/3, b 2/3, c 1/3, d 0/3, e 2/4, f 1/3 with one label unmeasured
LABELS = {
    "a": [True, True, True],
    "b": [True, True, False],
    "c": [True, False, False],
    "d": [False, False, False],
    "e": [True, False, True, False],
    "f": [True, False, False],
}
UNMEASURED = {t: [t == "f" and i == 2 for i in range(len(v))] for t, v in LABELS.items()}


def _selections() -> dict[str, dict[str, Selection]]:
    return {
        "random": {t: select_random(t, v) for t, v in LABELS.items()},
        "first": {t: select_first(t, v) for t, v in LABELS.items()},
        "oracle": {t: select_oracle(t, v) for t, v in LABELS.items()},
        # picks candidate 1, and fails task b (its judge calls failed): that task scores 0
        "judge": {
            t: Selection("judge", t, 1, float(v[1]))
            if t != "b"
            else Selection("judge", t, None, 0.0, failure="every judgement failed")
            for t, v in LABELS.items()
        },
    }


def test_difficulty_bucket_by_hand() -> None:
    rates = [3 / 3, 2 / 3, 1 / 2, 1 / 3, 0 / 3]
    assert [difficulty_bucket(r, 2 / 3, 1 / 3) for r in rates] == [
        "easy",
        "easy",
        "medium",
        "hard",
        "hard",
    ]
    # a threshold typed with 4 digits still holds the rate it means (1/3 = 0.33333...)
    assert difficulty_bucket(1 / 3, 0.6667, 0.3333) == "hard"
    assert difficulty_bucket(2 / 3, 0.6667, 0.3333) == "easy"
    # k = 15: 8/15 = 0.533 is medium under the defaults, easy at easy_at = 0.5
    assert difficulty_bucket(8 / 15, 2 / 3, 1 / 3) == "medium"
    assert difficulty_bucket(8 / 15, 0.5, 0.2) == "easy"
    with pytest.raises(ValueError, match="hard_at < easy_at"):
        difficulty_bucket(0.5, 0.3, 0.6)


def test_accuracy_per_bucket_by_hand() -> None:
    split = difficulty_split(LABELS, _selections(), (2 / 3, 1 / 3), UNMEASURED, n_boot=100)
    # easy: a (1.0), b (2/3); medium: e (0.5); hard: c (1/3), d (0); f has no known rate.
    assert split["tasks"] == {"easy": 2, "medium": 1, "hard": 2, "unmeasured": 1}
    rows = split["selectors"]

    def value(name: str, bucket: str) -> float | None:
        return rows[name][bucket]["accuracy"]["value"]

    # random scores its task's pass rate: easy (1 + 2/3) / 2, medium 1/2, hard (1/3 + 0) / 2
    assert value("random", "easy") == pytest.approx(5 / 6)
    assert value("random", "medium") == pytest.approx(0.5)
    assert value("random", "hard") == pytest.approx(1 / 6)
    # first picks candidate 0: a T, b T | e T | c T, d F
    assert (value("first", "easy"), value("first", "medium"), value("first", "hard")) == (
        1.0,
        1.0,
        0.5,
    )
    # oracle: every task but d has a pass
    assert value("oracle", "hard") == pytest.approx(0.5)
    # judge picks candidate 1: a T, b failed (0) | e F | c F, d F
    assert value("judge", "easy") == pytest.approx(0.5)
    assert rows["judge"]["easy"]["failed_tasks"] == 1
    assert rows["judge"]["easy"]["tasks"] == 2
    assert value("judge", "medium") == 0.0
    lo, hi = rows["first"]["hard"]["accuracy"]["ci95"]
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0


def test_a_bucket_with_no_task_or_only_failed_tasks_is_n_a() -> None:
    labels = {"a": [True, True], "b": [True, False]}
    failing = {
        t: Selection("judge", t, None, 0.0, failure="every judgement failed") for t in labels
    }
    split = difficulty_split(labels, {"judge": failing}, (0.9, 0.1), n_boot=100)
    assert split["tasks"] == {"easy": 1, "medium": 1, "hard": 0, "unmeasured": 0}
    for bucket in ("easy", "medium", "hard"):
        assert split["selectors"]["judge"][bucket]["accuracy"]["value"] is None, bucket


def _finish(tmp_path: Path, verdict: str, difficulty: dict[str, float]) -> str:
    from pairrl.eval.config import EvalConfig
    from pairrl.eval.gate import GateResult
    from pairrl.eval.pipeline import EvalRun
    from pairrl.eval.runner import finish

    cfg = EvalConfig.model_validate(
        {"out_dir": str(tmp_path), "candidates": {"pool": "p"}, "difficulty": difficulty}
    )
    labels = {
        t: [{"passed": x, "status": "pass" if x else "fail"} for x in v] for t, v in LABELS.items()
    }
    labels["f"][2] = {"passed": False, "status": "sandbox_error", "first_failure": "bwrap"}
    run = EvalRun(cfg, "compute", list(LABELS), {}, labels, _selections())
    run.summary = summarise(LABELS, run.selections, n_boot=100, unmeasured=UNMEASURED)
    reasons = [] if verdict == "PASS" else ["a judge selector made no judge call"]
    return finish(run, GateResult(verdict, reasons, 0.0), tmp_path).report_text


def test_report_states_the_thresholds_and_the_split(tmp_path: Path) -> None:
    text = _finish(tmp_path, "PASS", {"easy_at": 0.9, "hard_at": 0.4})
    # easy: a (1.0); medium: b (2/3), e (0.5); hard: c (1/3), d (0); f unmeasured
    assert "easy at 90.0 % or more, hard at 40.0 % or less, medium between" in text
    assert "1 tasks with an unmeasured label are in no bucket" in text
    assert (
        "| selector | easy: 1 tasks, % [95% CI] | medium: 2 tasks, % [95% CI] "
        "| hard: 2 tasks, % [95% CI] |"
    ) in text
    # judge: a T | b failed, e F | c F, d F
    assert "| judge | 100.0 [100.0, 100.0] | 0.0 [0.0, 0.0] (1 failed) | 0.0 [0.0, 0.0] |" in text


def test_a_failed_run_shows_no_split(tmp_path: Path) -> None:
    text = _finish(tmp_path, "FAIL", {})
    assert "No score is reported" in text
    assert "difficulty" not in text and "easy" not in text and "[95% CI]" not in text


def test_thresholds_out_of_order_are_a_config_error(
    eval_cli: Callable[..., tuple[int, str]], tmp_path: Path
) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text('{"task_id": "t", "candidate_id": "0", "code": "x = 1"}\n')
    code, output = eval_cli(
        [
            "--pool",
            str(pool),
            "--out",
            str(tmp_path / "out"),
            "--set",
            "difficulty.easy_at=0.3",
            "--set",
            "difficulty.hard_at=0.5",
        ],
        reraise=False,
    )
    assert code == 2, output
    assert "hard_at < easy_at" in output and "Traceback" not in output
