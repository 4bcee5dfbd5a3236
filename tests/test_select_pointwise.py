"""`pairrl select --method pointwise_rating` (the paper's pointwise 1-10 baseline) end to end
against a fake OpenAI-compatible judge: the highest rating wins, ties go to the lowest index
as in the tournaments, expected ratings come from the log-probabilities, failed ratings are
counted with their reasons, and the judge calls and measured tokens are reported."""

from __future__ import annotations

import http.server
import json
import math
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from pairrl.rollout.judges import pointwise_ranking
from pairrl.rollout.select_cli import register

PROMPT_TOKENS, COMPLETION_TOKENS = 50, 7
_MARK = re.compile(r"# (\w+)\n")
# What the fake judge writes for each candidate's mark: (text, finish_reason).
ANSWERS = {
    "good": ("Traced it on three inputs.\n<rating>9</rating>", "stop"),
    "also_good": ("Same behaviour.\n<rating>9</rating>", "stop"),
    "fair": ("Misses the empty input.\n<rating>6</rating>", "stop"),
    "mute": ("Looks reasonable to me.", "stop"),
    "long": ("Let me trace this one step at a time and", "length"),
}
# Where the judge writes the rating (expected read-out): next-token log-probabilities.
RATING_LOGPROBS = {
    "good": {"8": math.log(0.5), "9": math.log(0.4), "x": math.log(0.1)},  # 8.444..., mass 0.9
    "also_good": {"9": math.log(0.8), "x": math.log(0.2)},  # 9, mass 0.8
    "fair": {"6": math.log(0.2), "x": math.log(0.8)},  # mass 0.2: below the 0.5 floor
}


class FakeJudge:
    """An OpenAI-compatible chat server that judges by the candidate's mark; records the
    requests it received and reports usage on each."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None  # keep pytest output free of access logs

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                data = json.dumps(owner.answer(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @staticmethod
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        user = body["messages"][0]["content"]
        assert "<rating>k</rating>" in user, "not the pointwise 1-10 prompt"
        mark = _MARK.search(user.split("## Solution", 1)[1]).group(1)  # type: ignore[union-attr]
        usage = {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS}
        if body.get("continue_final_message"):  # a scoring call at the rating position
            assert body["messages"][-1]["content"].endswith("<rating>")
            tops = [{"token": t, "logprob": lp} for t, lp in RATING_LOGPROBS[mark].items()]
            entry = {"token": tops[0]["token"], "logprob": tops[0]["logprob"], "top_logprobs": tops}
            message = {"role": "assistant", "content": entry["token"]}
            choice = {"index": 0, "message": message, "finish_reason": "length"}
            return {"choices": [{**choice, "logprobs": {"content": [entry]}}], "usage": usage}
        text, finish = ANSWERS[mark]
        choice = {"index": 0, "message": {"role": "assistant", "content": text}}
        return {"choices": [{**choice, "finish_reason": finish}], "usage": usage}

    def generations(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if not r.get("continue_final_message")]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def judge() -> Iterator[FakeJudge]:
    fake = FakeJudge()
    yield fake
    fake.close()


@pytest.fixture()
def app() -> typer.Typer:
    root = typer.Typer()

    @root.callback()
    def _root() -> None:
        """Test root (keeps `select` a subcommand)."""

    register(root)
    return root


def _candidates(tmp_path: Path, marks: list[str]) -> Path:
    path = tmp_path / "cands.jsonl"
    rows = [{"id": m, "text": f"```python\n# {m}\ndef f(x):\n    return x\n```"} for m in marks]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _select(app: typer.Typer, judge: FakeJudge, jsonl: Path, *extra: str) -> Any:
    args = ["select", "--candidates", str(jsonl), "--problem", "Return x."]
    args += ["--endpoint", judge.url, "--served-model", "judge", "--max-retries", "0"]
    return CliRunner().invoke(app, [*args, "--method", "pointwise_rating", *extra])


def test_highest_rating_wins_ties_to_lowest_index_failures_counted(app, judge, tmp_path) -> None:
    marks = ["fair", "mute", "good", "long", "also_good"]
    result = _select(app, judge, _candidates(tmp_path, marks))
    out = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    # 'good' (index 2) and 'also_good' (index 4) both rate 9: the lower index wins.
    assert "winner: [2] good, rating 9" in out
    assert "ratings asked 5, rated 3, failed 2, judge calls 1" in out
    assert "failure [1] mute: missing <rating> tag" in out
    assert "failure [3] long: truncated: the judge hit max_tokens" in out
    # One generation per candidate, nothing else (the sampled read-out scores nothing).
    assert len(judge.requests) == len(judge.generations()) == 5
    tokens = f"prompt {5 * PROMPT_TOKENS}, completion {5 * COMPLETION_TOKENS}, over 5 requests"
    assert f"judge tokens (measured by the engine): {tokens}" in out
    table = result.output[: result.output.index("ratings asked")]
    assert [line.split("│")[3].strip() for line in table.splitlines() if "│ [" in line] == [
        "9",
        "9",
        "6",
        "FAILED",
        "FAILED",
    ]


def test_expected_ratings_from_log_probabilities(app, judge, tmp_path) -> None:
    marks = ["good", "fair", "also_good", "mute"]
    result = _select(app, judge, _candidates(tmp_path, marks), "--readout", "expected")
    out = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    # good: (8 * 0.5 + 9 * 0.4) / 0.9 = 8.444; also_good: 9 wins; fair's mass 0.2 fails.
    assert "winner: [2] also_good, rating 9" in out
    assert "8.444" in out
    assert "failure [1] fair: rating mass 0.200 below the floor 0.5" in out
    assert "failure [3] mute: missing <rating> tag" in out
    assert "ratings asked 4, rated 2, failed 2, judge calls 1" in out
    assert len(judge.generations()) == 4 and len(judge.requests) == 4 + 3  # 3 scoring calls


def test_forced_ratings_are_read_without_generating(app, judge, tmp_path) -> None:
    marks = ["good", "fair", "also_good"]
    result = _select(app, judge, _candidates(tmp_path, marks), "--readout", "forced")
    out = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert "winner: [2] also_good, rating 9" in out and "8.444" in out
    assert "failure [1] fair: rating mass 0.200 below the floor 0.5" in out
    assert judge.generations() == [] and len(judge.requests) == 3  # one scoring call each
    assert "judge tokens (measured by the engine): prompt 150, completion 0, over 3" in out


def test_every_rating_failed_is_no_winner(app, judge, tmp_path) -> None:
    result = _select(app, judge, _candidates(tmp_path, ["mute", "long", "mute"]))
    out = " ".join(result.output.split())
    assert result.exit_code == 1, result.output
    assert "ratings asked 3, rated 0, failed 3" in out
    assert "2 x missing <rating> tag" in out and "1 x truncated" in out
    assert "no winner: every rating failed (3 of 3)" in out
    assert "│" not in result.output  # no table made of failures


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--schedule", "swiss"], "--schedule applies to pairwise tournaments"),
        (["--budget", "4"], "--budget applies to pairwise tournaments"),
    ],
)
def test_tournament_options_are_usage_errors(app, judge, tmp_path, extra, message) -> None:
    result = _select(app, judge, _candidates(tmp_path, ["good"]), *extra)
    assert result.exit_code == 2 and message in " ".join(result.output.split())
    assert judge.requests == []


def test_unknown_method_is_a_usage_error(app, tmp_path) -> None:
    jsonl = _candidates(tmp_path, ["good"])
    args = ["select", "--candidates", str(jsonl), "--problem", "P", "--judge-model", "x"]
    result = CliRunner().invoke(app, [*args, "--method", "pointwise"])
    assert result.exit_code == 2 and "allowed: pairwise, pointwise_rating" in result.output


def test_pointwise_ranking_is_the_tournaments_tie_break() -> None:
    scores = [None, 7.0, 9.0, 9.0, 8.5]
    # 9 ties 9: lower index first; then 8.5, 7; the failed candidate last.
    assert pointwise_ranking(scores) == [2, 3, 4, 1, 0]
