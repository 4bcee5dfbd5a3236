"""Retries do not multiply a run's wall time: one deadline for all its remote calls.

A server that accepts requests and never answers holds each call for the read timeout
times its attempts; under `remote_call_budget` calls in flight at the deadline are
abandoned and later ones are not sent, each a failure of kind ``deadline`` that the
benchmark's gate counts. The budget measures requests, retries, timeouts and the wall
time spent waiting on failures, which `pairrl eval` writes to summary.json (``remote``)
and one line of the report.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_eval_preflight import TASKS, FakeOpenAI

from pairrl.rollout.samplers import OpenAISampler, SamplingParams
from pairrl.rollout.samplers.call_budget import describe_remote, remote_call_budget

Cli = Callable[..., tuple[int, str]]
PARAMS = SamplingParams(max_tokens=2)


@pytest.fixture()
def hanging() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(hang_s=5.0)  # longer than any read timeout below
    yield server
    server.close()


class _FlakyServer:
    """Answers 503 to the first request, then a well-formed completion."""

    def __init__(self) -> None:
        self.requests = 0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                owner.requests += 1
                status, body = (503, {"error": "busy"}) if owner.requests == 1 else (200, _OK)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


_OK = {"choices": [{"index": 0, "text": "ok", "finish_reason": "stop"}]}


def test_the_deadline_cuts_calls_in_flight_and_refuses_later_ones(hanging: FakeOpenAI) -> None:
    remote = OpenAISampler(hanging.url, "m", 1.0, 3.0, 2, retry_backoff_s=0.01)
    with remote_call_budget(0.5) as budget:
        start = time.monotonic()
        ((cut,),) = remote.generate(["prompt"], 1, PARAMS)
        cut_after = time.monotonic() - start
        ((refused,),) = remote.generate(["prompt"], 1, PARAMS)
    # without the deadline: 3 attempts of a 3 s read timeout, about 9 s, each a timeout; the
    # margin is for a busy machine, not a measure of speed (the error's kind is the check)
    assert cut_after < 8.0
    for completion in (cut, refused):
        assert completion.error.kind == "deadline"
        assert "remote.deadline_s=0.5" in completion.error.reason
    assert hanging.requests["hang"] == 1  # the refused call was never sent
    remote_summary = budget.summary()
    assert remote_summary["deadline_reached"] and remote_summary["stopped_by_deadline"] == 2
    assert remote_summary["requests"] == 2 and remote_summary["failed_requests"] == 2
    assert remote_summary["waiting_on_failures_s"] >= 0.4  # the cut attempt's wait


def test_retries_and_timeouts_are_measured(hanging: FakeOpenAI) -> None:
    flaky = _FlakyServer()
    try:
        with remote_call_budget(None) as budget:
            ok = OpenAISampler(flaky.url, "m", 1.0, 3.0, 1, retry_backoff_s=0.2)
            ((answered,),) = ok.generate(["prompt"], 1, PARAMS)
            slow = OpenAISampler(hanging.url, "m", 1.0, 0.3, 1, retry_backoff_s=0.01)
            ((timed_out,),) = slow.generate(["prompt"], 1, PARAMS)
    finally:
        flaky.httpd.shutdown()
        flaky.httpd.server_close()
    assert answered.ok and timed_out.error.kind == "timeout"
    got = budget.summary()
    assert (got["requests"], got["failed_requests"], got["retries"], got["timeouts"]) == (
        2,
        1,
        2,
        2,
    )
    # the 503 and its 0.2 s backoff, then two 0.3 s read timeouts
    assert got["waiting_on_failures_s"] >= 0.75 and got["wall_s"] >= got["waiting_on_failures_s"]
    assert got["deadline_s"] is None and not got["deadline_reached"]
    line = describe_remote(got)
    assert line is not None
    assert line.startswith("Remote calls: 2 requests (1 failed), 2 retries, 2 timeouts;")
    assert line.endswith("no deadline.")


def _endpoint_run(tasks: Path, url: str, out: Path, *extra: str) -> list[str]:
    return [
        "--tasks", str(tasks), "--endpoint", url, "--k", "3", "--out", str(out),
        "--no-progress", "--set", "candidates.http.read_timeout_s=30", *extra,
    ]  # fmt: skip


@pytest.fixture()
def task_file(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    return path


def test_a_hung_server_fails_the_run_at_its_deadline(
    eval_cli: Cli, task_file: Path, tmp_path: Path, hanging: FakeOpenAI
) -> None:
    """Every sample is cut at the 1 s deadline, a failure the gate counts (not 30 s x 2
    attempts per batch); with the preflight on, the run stops there instead."""
    out_dir = tmp_path / "o"
    args = _endpoint_run(task_file, hanging.url, out_dir, "--set", "remote.deadline_s=1")
    start = time.monotonic()
    code, out = eval_cli([*args, "--set", "preflight.enabled=false"])
    assert time.monotonic() - start < 20
    assert code == 1, out
    assert "samples: 9 of 9 failed" in out and "remote.deadline_s=1" in out
    summary = json.loads((out_dir / "summary.json").read_text())
    remote = summary["remote"]
    assert remote["deadline_reached"] and remote["stopped_by_deadline"] == 3
    assert "deadline 1.0 s reached: 3 calls stopped" in (out_dir / "report.md").read_text()

    code, out = eval_cli(
        _endpoint_run(task_file, hanging.url, tmp_path / "p", "--set", "remote.deadline_s=1")
    )
    assert code == 1, out
    assert "preflight samples (task t/inc): 3 of 3 samples failed (deadline:" in out
    assert "change: raise remote.deadline_s" in out


def test_a_run_reports_its_remote_calls(
    eval_cli: Cli, task_file: Path, tmp_path: Path, fake_server: Callable
) -> None:
    server = fake_server()
    code, out = eval_cli(_endpoint_run(task_file, server.url, tmp_path / "o"))
    assert code == 0, out
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    remote = summary["remote"]
    assert remote["requests"] == 3 and remote["failed_requests"] == 0  # one per task
    assert remote["deadline_s"] == 12 * 3600 and not remote["deadline_reached"]
    assert "Remote calls: 3 requests (0 failed), 0 retries, 0 timeouts;" in out
    assert "deadline 12.0 h not reached." in out


@pytest.fixture()
def fake_server() -> Iterator[Callable[..., FakeOpenAI]]:
    started: list[FakeOpenAI] = []

    def start(judge: str = "answer") -> FakeOpenAI:
        started.append(FakeOpenAI(judge))
        return started[-1]

    yield start
    for server in started:
        server.close()
