"""The EvalPlus agreement benchmark finds every EvalPlus run it is given, and says what is
missing when there is none (the comparison itself runs for minutes: benchmarks/)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def script(load_benchmark):
    return load_benchmark("evalplus_agreement.py")


def test_every_kept_evalplus_run_is_compared(script, tmp_path: Path) -> None:
    for name in (
        "humaneval_samples_eval_results.json",
        "humaneval_samples_eval_results.2.json",
        "mbpp_samples_eval_results.json",
        "humaneval_samples.jsonl",
    ):
        (tmp_path / name).write_text("{}")
    runs = script.evalplus_runs(tmp_path, "humaneval")
    assert [p.name for p in runs] == [
        "humaneval_samples_eval_results.2.json",
        "humaneval_samples_eval_results.json",
    ]
    assert [p.name for p in script.evalplus_runs(tmp_path, "mbpp")] == [
        "mbpp_samples_eval_results.json"
    ]


def test_compare_without_evalplus_results_names_what_to_run(
    script, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not (script.DATA / "README.md").is_file():
        pytest.skip(f"shared data not found at {script.DATA}")
    assert script.main(["compare", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "humaneval_samples_eval_results*.json" in err
    assert "run step 'write' and EvalPlus first" in err
