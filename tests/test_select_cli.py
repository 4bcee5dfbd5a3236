"""`pairrl select`: candidate loading, selection with a scripted judge, the CLI end to end."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from pairrl.rollout.judges import PairwiseJudge
from pairrl.rollout.samplers import Completion, SamplingParams
from pairrl.rollout.select_cli import (
    SCHEDULES,
    Candidate,
    CandidateError,
    _print_report,
    load_candidates,
    register,
    run_selection,
)


@pytest.fixture()
def app() -> typer.Typer:
    root = typer.Typer()

    @root.callback()
    def _root() -> None:
        """Test root (keeps `select` a subcommand)."""

    register(root)
    return root


def _jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_load_candidates(tmp_path: Path) -> None:
    jsonl = _jsonl(
        tmp_path / "c.jsonl", ["plain", {"id": "b", "completion": "text b"}, {"code": "x = 1"}]
    )
    extra = tmp_path / "extra.py"
    extra.write_text("def f(): pass\n", encoding="utf-8")
    got = load_candidates(jsonl, [extra])
    assert got == [
        Candidate("c.jsonl:1", "plain"),
        Candidate("b", "text b"),
        Candidate("c.jsonl:3", "x = 1"),
        Candidate(str(extra), "def f(): pass\n"),
    ]


def test_bad_rows_name_file_and_row(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('"ok"\n{"id": 3}\n', encoding="utf-8")
    with pytest.raises(CandidateError, match=r"bad\.jsonl row 2"):
        load_candidates(bad, [])
    bad.write_text('"ok"\n{not json\n', encoding="utf-8")
    with pytest.raises(CandidateError, match=r"bad\.jsonl row 2: not JSON"):
        load_candidates(bad, [])


class ContentJudgeSampler:
    """A perfect judge: rates a solution 9 when it says CORRECT, else 2."""

    def generate(self, prompts, n, sampling):
        out = []
        for prompt in prompts:
            text = prompt[-1]["content"]
            a = text.split("## Solution A", 1)[1].split("## Solution B", 1)[0]
            b = text.split("## Solution B", 1)[1]
            ra, rb = (9 if "CORRECT" in a else 2), (9 if "CORRECT" in b else 2)
            answer = f"<rating_A>{ra}</rating_A>\n<rating_B>{rb}</rating_B>"
            out.append([Completion(answer, [1], [-1.0], "stop") for _ in range(n)])
        return out

    def next_token_logprobs(self, prompts, candidates):  # pragma: no cover - sampled read-out
        raise AssertionError("not used")


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_perfect_judge_selects_the_correct_candidate(schedule: str, capsys) -> None:
    candidates = [Candidate(str(i), f"return {i}") for i in range(7)]
    candidates[4] = Candidate("4", "CORRECT return 4")
    judge = PairwiseJudge(ContentJudgeSampler(), sampling=SamplingParams(seed=0))
    result, judge_pairs = run_selection(
        judge, "P", candidates, schedule=schedule, budget=None, domain="math", seed=1
    )
    assert result.winner == 4 and result.ranking[0] == 4
    assert result.num_comparisons <= 14 and result.num_failed == 0  # budget 2N
    assert judge_pairs.calls == result.rounds  # one batched judge call per round
    _print_report(result, judge_pairs, candidates)
    out = capsys.readouterr().out
    assert "winner" in out and "[4] 4" in out and "failed 0" in out


def test_cli_tiny_model_reports_failures_and_no_winner(app, tiny_model_dir, tmp_path) -> None:
    jsonl = _jsonl(tmp_path / "c.jsonl", ["def f(): return 1", "def f(): return 2", "pass"])
    result = CliRunner().invoke(
        app,
        [
            "select",
            "--candidates",
            str(jsonl),
            "--problem",
            "Return 1.",
            "--judge-model",
            str(tiny_model_dir),
            "--budget",
            "2",
            "--max-tokens",
            "4",
            "--device",
            "cpu",
        ],
    )
    assert result.exit_code == 1, result.output
    assert "comparisons sent 2" in result.output and "failed 2" in result.output
    assert "failure" in result.output and "truncated" in result.output
    assert "no winner" in result.output


def test_cli_closed_port_fails_fast(app, tmp_path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    jsonl = _jsonl(tmp_path / "c.jsonl", ["a", "b"])
    base = ["select", "--candidates", str(jsonl), "--problem", "P"]
    start = time.monotonic()
    result = CliRunner().invoke(
        app,
        [
            *base,
            "--endpoint",
            f"http://127.0.0.1:{port}/v1",
            "--served-model",
            "m",
            "--max-retries",
            "0",
            "--schedule",
            "all_pairs",
        ],
    )
    assert time.monotonic() - start < 10
    assert result.exit_code == 1, result.output
    assert "transport" in result.output and "no winner" in result.output
    # Without --served-model the model list is fetched first, and that failure is explicit.
    result = CliRunner().invoke(app, [*base, "--endpoint", f"http://127.0.0.1:{port}/v1"])
    assert result.exit_code == 2 and "cannot list models" in result.output


def test_cli_argument_errors(app, tmp_path) -> None:
    jsonl = _jsonl(tmp_path / "c.jsonl", ["a"])
    runner = CliRunner()
    both = runner.invoke(
        app,
        [
            "select",
            "--candidates",
            str(jsonl),
            "--problem",
            "P",
            "--judge-model",
            "x",
            "--endpoint",
            "http://h/v1",
        ],
    )
    assert both.exit_code == 2 and "exactly one of --judge-model and --endpoint" in both.output
    schedule = runner.invoke(
        app,
        [
            "select",
            "--candidates",
            str(jsonl),
            "--problem",
            "P",
            "--judge-model",
            "x",
            "--schedule",
            "elo",
        ],
    )
    assert schedule.exit_code == 2 and "allowed" in schedule.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text("[1, 2]\n", encoding="utf-8")
    rows = runner.invoke(
        app, ["select", "--candidates", str(bad), "--problem", "P", "--judge-model", "x"]
    )
    assert rows.exit_code == 2 and "row 1" in rows.output
