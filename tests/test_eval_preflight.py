"""The preflight: a few real calls before a run spends its budget.

Against a fake OpenAI-compatible server (candidates and judge), a run whose judge cannot
produce a verdict (every reply truncated, no rating tag) or whose endpoint is down stops
after the preflight's handful of calls, FAILed, with the reasons per read-out and what to
change; its calls go through the run's cache, so a run that passes spends nothing twice;
`preflight.enabled=false` turns it off and `pairrl eval gate` never makes it.
"""

from __future__ import annotations

import http.server
import json
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pairrl.eval.config import EvalConfig

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
BODIES = {"inc": ["x + 1", "x", "x + 1"], "dbl": ["x", "2 * x", "x * 2"], "neg": ["-x", "x", "0"]}
JUDGE_TEXT = {
    "answer": "Traced both.\n<rating_A>7</rating_A>\n<rating_B>3</rating_B>",
    "truncated": "Let me trace both solutions on a few inputs, starting with",
    "no_tag": "Both look fine to me.",
}


class FakeOpenAI:
    """An OpenAI-compatible chat server in a thread: code for generation prompts, the
    ``judge`` behaviour for judge prompts (``answer``, ``truncated``: cut at max_tokens,
    ``no_tag``), or ``hang`` (never answers in time) for every request. Counts requests
    by kind: sample, pairwise, pointwise."""

    def __init__(self, judge: str = "answer", hang_s: float = 0.0) -> None:
        self.requests: Counter[str] = Counter()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None  # keep pytest output free of access logs

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if hang_s:
                    owner.requests["hang"] += 1
                    time.sleep(hang_s)
                    return
                content = body["messages"][-1]["content"]
                replies = [owner.reply(content, judge, i) for i in range(body["n"])]
                owner.requests[replies[0][0]] += 1
                choices = [
                    {
                        "index": i,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": end,
                    }
                    for i, (_, text, end) in enumerate(replies)
                ]
                data = json.dumps({"choices": choices}).encode()
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
    def reply(content: str, judge: str, index: int) -> tuple[str, str, str]:
        """(kind, text, finish_reason) of choice ``index`` of the answer to a prompt (a
        different program for each choice)."""
        if "## Solution A" in content or "<rating>k</rating>" in content:
            kind = "pairwise" if "## Solution A" in content else "pointwise"
            text = JUDGE_TEXT[judge]
            if kind == "pointwise" and judge == "answer":
                text = "Traced it.\n<rating>6</rating>"
            return kind, text, "length" if judge == "truncated" else "stop"
        name = re.search(r"def (\w+)\(", content)
        code = f"def {name.group(1) if name else 'f'}(x):\n    return x + {index % 2}  # {index}\n"
        return "sample", f"Easy.\n```python\n{code}```", "stop"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def fake_server() -> Iterator[Callable[..., FakeOpenAI]]:
    started: list[FakeOpenAI] = []

    def start(judge: str = "answer", hang_s: float = 0.0) -> FakeOpenAI:
        started.append(FakeOpenAI(judge, hang_s))
        return started[-1]

    yield start
    for server in started:
        server.close()


@pytest.fixture()
def bench(tmp_path: Path) -> tuple[Path, Path]:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    rows = [
        {
            "task_id": f"t/{name}",
            "candidate_id": str(j),
            "code": f"def {name}(x):\n    return {b}\n",
        }
        for name, bodies in BODIES.items()
        for j, b in enumerate(bodies)
    ]
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tasks, pool


def _dead_endpoint() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens there once the socket is closed


def _pool_run(bench: tuple[Path, Path], url: str, out: Path, *extra: str) -> list[str]:
    tasks, pool = bench
    return [
        "--tasks", str(tasks), "--pool", str(pool), "--judge-endpoint", url, "--k", "3",
        "--out", str(out), "--selectors", "random,all_pairs,pointwise_rating", "--no-progress",
        "--set", "judge.http.max_retries=0", *extra,
    ]  # fmt: skip


def test_a_truncating_judge_stops_the_run_after_the_preflight(
    eval_cli: Cli, bench: tuple[Path, Path], tmp_path: Path, fake_server: Callable
) -> None:
    server = fake_server("truncated")
    out_dir = tmp_path / "o"
    code, out = eval_cli(_pool_run(bench, server.url, out_dir))
    assert code == 1, out
    assert "integrity gate: FAIL" in out and "stopped before spending the run's budget" in out
    for read_out in (
        "pairwise (judge.readout=sampled)",
        "pointwise_rating (judge.readout=sampled)",
    ):
        assert f"preflight {read_out}: 2 of 2 calls failed (truncated" in out, out
    assert "change: raise judge.max_tokens (now 512)" in out
    # two calls per read-out, nothing of the budget (9 comparisons, 9 ratings, controls)
    assert server.requests == {"pairwise": 2, "pointwise": 2}
    assert not (out_dir / "records.jsonl").exists()
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["verdict"] == "FAIL" and "selectors" not in summary
    checks = summary["preflight"]["checks"]
    assert [(c["calls"], c["failed"]) for c in checks] == [(2, 2), (2, 2)]
    report = (out_dir / "report.md").read_text()
    assert "| preflight pairwise (judge.readout=sampled) | 2 | 0 | 2 |" in report


def test_a_judge_without_rating_tags_stops_with_what_to_change(
    eval_cli: Cli, bench: tuple[Path, Path], tmp_path: Path, fake_server: Callable
) -> None:
    server = fake_server("no_tag")
    code, out = eval_cli(_pool_run(bench, server.url, tmp_path / "o"))
    assert code == 1, out
    assert (
        "preflight pairwise (judge.readout=sampled): 2 of 2 calls failed (missing <rating_A>" in out
    )
    assert "judge.readout=forced" in out
    assert sum(server.requests.values()) == 4


def test_preflight_off_runs_into_the_gate(
    eval_cli: Cli, bench: tuple[Path, Path], tmp_path: Path, fake_server: Callable
) -> None:
    server = fake_server("truncated")
    args = _pool_run(bench, server.url, tmp_path / "o", "--set", "preflight.enabled=false")
    code, out = eval_cli(args)
    assert code == 1, out
    assert "preflight" not in out.split("## Gate stages")[0]
    assert "all_pairs: 9 of 9 failed" in out  # the whole budget was spent on failures
    assert server.requests["pairwise"] > 9


def test_a_dead_endpoint_stops_after_one_sampling_call(
    eval_cli: Cli, bench: tuple[Path, Path], tmp_path: Path
) -> None:
    tasks, _ = bench
    url = _dead_endpoint()
    out_dir = tmp_path / "o"
    args = ["--tasks", str(tasks), "--endpoint", url, "--k", "3", "--out", str(out_dir)]
    code, out = eval_cli([*args, "--no-progress", "--set", "candidates.http.max_retries=0"])
    assert code == 1, out
    assert "preflight samples (task t/inc): 3 of 3 samples failed (transport:" in out
    assert "Connection refused" in out or "ConnectError" in out
    assert f"change: check that {url} is up and serves candidates.served_model='default'" in out
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["remote"]["requests"] == 1  # the preflight's one request, n = k
    assert "labels" not in summary["gate"]["stages"]  # nothing was labelled or judged


def test_preflight_calls_are_cached_and_the_gate_makes_none(
    eval_cli: Cli, bench: tuple[Path, Path], tmp_path: Path, fake_server: Callable
) -> None:
    """With and without the preflight, a run makes the same requests: the preflight's are
    the first of the budget, found in the cache. The replay then calls nothing."""
    tasks, _ = bench
    servers = {name: fake_server() for name in ("with", "without")}
    for name, server in servers.items():
        args = ["--tasks", str(tasks), "--endpoint", server.url, "--k", "3", "--no-progress"]
        args += ["--out", str(tmp_path / name), "--selectors", "random,all_pairs,pointwise_rating"]
        args += ["--set", f"preflight.enabled={str(name == 'with').lower()}"]
        code, out = eval_cli(args)
        assert code == 0, out
    assert servers["with"].requests == servers["without"].requests
    assert servers["with"].requests["sample"] == 3
    summary = json.loads((tmp_path / "with" / "summary.json").read_text())
    assert [c["failed"] for c in summary["preflight"]["checks"]] == [0, 0, 0]
    servers["with"].close()
    code, out = eval_cli(["gate", str(tmp_path / "with")])
    assert code == 0, out
    again = json.loads((tmp_path / "with" / "summary.json").read_text())
    assert again["preflight"] == summary["preflight"] and again["remote"] == summary["remote"]


def test_judge_change_names_the_setting_for_each_failure() -> None:
    from pairrl.eval.runner import judge_change

    cfg = EvalConfig.model_validate({"candidates": {"pool": "p"}, "judge": {"max_tokens": 64}})
    where = "http:http://127.0.0.1:9/v1:default"
    cases = {
        "truncated: the judge hit max_tokens": "raise judge.max_tokens (now 64)",
        "missing <rating> tag": "judge.readout=forced",
        "rating mass 0.010 below the floor 0.5 (...)": "judge.min_rating_mass=0.5",
        "neither A nor B among the next-token probabilities": "judge.min_rating_mass",
        "sampler failed: transport: ConnectError": f"check that the judge ({where}) is up",
        "sampler failed: deadline: the run's deadline": "raise remote.deadline_s",
    }
    for reason, change in cases.items():
        assert change in judge_change(cfg, reason, where), reason


def test_preflight_settings_have_bounds(eval_cli: Cli, bench: tuple[Path, Path]) -> None:
    tasks, pool = bench
    base = ["--tasks", str(tasks), "--pool", str(pool), "--no-progress"]
    code, out = eval_cli([*base, "--set", "preflight.judge_calls=0"], reraise=False)
    assert code == 2 and "preflight.judge_calls" in out, out
    fields = EvalConfig.model_fields["preflight"].annotation.model_fields
    assert fields["enabled"].default is True and fields["enabled"].description
