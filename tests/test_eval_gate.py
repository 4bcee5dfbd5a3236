"""The integrity gate's negative controls, end to end through `pairrl eval`.

Each control must print FAIL, exit non-zero and print no score: a closed-port endpoint, a
cache with one comparison deleted, a judge whose every output is unparseable, and reported
selections that were edited. The positive control (a judge that answers) must PASS with
its verdict before any score, and sharded runs must merge into the unsharded result.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

TASKS = [
    {
        "task_id": "t/add_one",
        "prompt": 'def add_one(x):\n    """Return x + 1.\n    >>> add_one(1)\n    2\n    """\n',
        "entry_point": "add_one",
        "test": "def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(-5) == -4\n",
    },
    {
        "task_id": "t/double",
        "prompt": 'def double(x):\n    """Return 2 * x.\n    >>> double(3)\n    6\n    """\n',
        "entry_point": "double",
        "test": "def check(candidate):\n    assert candidate(3) == 6\n    assert candidate(0) == 0\n",
    },
    {
        "task_id": "t/neg",
        "prompt": 'def neg(x):\n    """Return -x.\n    >>> neg(2)\n    -2\n    """\n',
        "entry_point": "neg",
        "test": "def check(candidate):\n    assert candidate(2) == -2\n",
    },
]
# Per task: one wrong, one right (marked GOOD so the fake judge can "see" it), one wrong.
BODIES = {
    "add_one": ["return x + 2", "return x + 1  # GOOD", "return x"],
    "double": ["return x * 3", "return x * 2  # GOOD", "return x + x + 1"],
    "neg": ["return -x  # GOOD", "return x", "return -x  # GOOD"],
}


@pytest.fixture()
def bench_files(tmp_path: Path) -> tuple[Path, Path]:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    pool = tmp_path / "pool.jsonl"
    rows = []
    for task in TASKS:
        for j, body in enumerate(BODIES[task["entry_point"]]):
            code = f"def {task['entry_point']}(x):\n    {body}\n"
            rows.append({"task_id": task["task_id"], "candidate_id": str(j), "code": code})
    pool.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tasks, pool


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _judge_text(content: str, garbage: bool) -> str:
    if garbage:
        return "I think both are fine, hard to say."
    sol_a = content.split("## Solution A", 1)[1].split("## Solution B", 1)[0]
    sol_b = content.split("## Solution B", 1)[1]
    ra, rb = (9 if "GOOD" in s else 2 for s in (sol_a, sol_b))
    return f"Traced both.\n<rating_A>{ra}</rating_A>\n<rating_B>{rb}</rating_B>"


@pytest.fixture()
def fake_judge() -> Iterator[callable]:
    """Start fake OpenAI-compatible judges; the factory returns a base URL."""
    import uvicorn
    from fastapi import FastAPI

    servers: list[uvicorn.Server] = []

    def start(garbage: bool) -> str:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        def chat(body: dict) -> dict:
            text = _judge_text(body["messages"][-1]["content"], garbage)
            choices = [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
                for i in range(int(body.get("n", 1)))
            ]
            return {"object": "chat.completion", "choices": choices}

        port = _free_port()
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        )
        threading.Thread(target=server.run, daemon=True).start()
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.started, "fake judge did not start"
        servers.append(server)
        return f"http://127.0.0.1:{port}/v1"

    yield start
    for server in servers:
        server.should_exit = True


SCORE = re.compile(r"\d+\.\d+ \[|\d+\.\d %|n/a \[|accuracy|pass@1|oracle pass@k")


def _verdict_before_scores(output: str, verdict: str) -> None:
    """The verdict is printed; a PASS prints no score before it, a FAIL none at all."""
    assert f"integrity gate: {verdict}" in output
    first_score = SCORE.search(output)
    if verdict == "FAIL":
        assert first_score is None, output
    elif first_score:
        assert output.index(f"integrity gate: {verdict}") < first_score.start()


RUN = ["--k", "3", "--no-progress"]
JUDGE_SELECTORS = "random,first,agreement,oracle,all_pairs,swiss_2n"


def test_closed_port_endpoint_fails(
    eval_cli: Callable[..., tuple[int, str]], bench_files: tuple[Path, Path], tmp_path: Path
) -> None:
    tasks, _ = bench_files
    url = f"http://127.0.0.1:{_free_port()}/v1"
    code, out = eval_cli(
        [
            "--tasks",
            str(tasks),
            "--endpoint",
            url,
            "--limit",
            "2",
            "--out",
            str(tmp_path / "o"),
            "--strict",
            *RUN,
            "--set",
            "candidates.http.max_retries=0",
        ]
    )
    assert code != 0
    _verdict_before_scores(out, "FAIL")
    assert "Connection refused" in out or "ConnectError" in out
    assert "PASS" not in out


def test_answering_judge_passes_then_deleted_comparison_fails(
    eval_cli: Callable[..., tuple[int, str]],
    bench_files: tuple[Path, Path],
    tmp_path: Path,
    fake_judge: callable,
) -> None:
    tasks, pool = bench_files
    out_dir = tmp_path / "run"
    url = fake_judge(False)
    args = [
        "--tasks",
        str(tasks),
        "--pool",
        str(pool),
        "--judge-endpoint",
        url,
        "--out",
        str(out_dir),
        "--selectors",
        JUDGE_SELECTORS,
        "--strict",
        *RUN,
    ]
    code, out = eval_cli(args)
    assert code == 0, out
    _verdict_before_scores(out, "PASS")
    summary = json.loads((out_dir / "summary.json").read_text())
    # pass@1 = (1/3 + 1/3 + 2/3) / 3 = 4/9; the fake judge sees the GOOD marker, so the
    # tournaments pick a correct candidate on every task.
    assert summary["pass@1"]["value"] == pytest.approx(4 / 9)
    assert summary["selectors"]["all_pairs"]["accuracy"]["value"] == 1.0
    assert summary["selectors"]["all_pairs"]["cost"]["judge_calls"] == 9  # 3 pairs x 3 tasks
    assert summary["judge_quality"]["pairwise"]["swap_consistency"] == 1.0
    assert (out_dir / "selectors.png").stat().st_size > 1000
    assert (out_dir / "judge_quality.png").stat().st_size > 1000

    # Delete one comparison from the cache: the gate's replay must notice.
    lines = (out_dir / "cache" / "pairwise.jsonl").read_text().splitlines()
    (out_dir / "cache" / "pairwise.jsonl").write_text("\n".join(lines[1:]) + "\n")
    code, out = eval_cli(["gate", str(out_dir), "--strict"])
    assert code != 0
    _verdict_before_scores(out, "FAIL")
    assert "missing from the cache" in out
    assert json.loads((out_dir / "summary.json").read_text())["verdict"] == "FAIL"


def test_unparseable_judge_fails(
    eval_cli: Callable[..., tuple[int, str]],
    bench_files: tuple[Path, Path],
    tmp_path: Path,
    fake_judge: callable,
) -> None:
    tasks, pool = bench_files
    url = fake_judge(True)
    code, out = eval_cli(
        [
            "--tasks",
            str(tasks),
            "--pool",
            str(pool),
            "--judge-endpoint",
            url,
            "--out",
            str(tmp_path / "o"),
            "--selectors",
            "random,all_pairs,swiss_1n",
            "--strict",
            *RUN,
            "--set",
            "preflight.enabled=false",  # the gate's control: failures past the preflight
        ]
    )
    assert code != 0
    _verdict_before_scores(out, "FAIL")
    assert "all_pairs: 9 of 9 failed" in out
    assert "| all_pairs | 3 of 3 |" in out  # the failure counts, where they failed
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    # Failed comparisons are failures, never ties: no winner, score 0, reason kept; with
    # no task measured the selector's accuracy is n/a, never 0.
    assert summary["selectors"]["all_pairs"]["failed_tasks"] == 3
    assert summary["selectors"]["all_pairs"]["accuracy"]["value"] is None
    rows = map(json.loads, (tmp_path / "o" / "records.jsonl").read_text().splitlines())
    picks = [r for r in rows if r["kind"] == "selection" and r["selector"] == "all_pairs"]
    assert [(p["chosen"], p["score"]) for p in picks] == [(None, 0.0)] * 3
    assert all(p["failure"] for p in picks)


def test_edited_records_fail_and_shards_merge(
    eval_cli: Callable[..., tuple[int, str]], bench_files: tuple[Path, Path], tmp_path: Path
) -> None:
    tasks, pool = bench_files
    base = [
        "--tasks",
        str(tasks),
        "--pool",
        str(pool),
        "--selectors",
        "random,first,agreement,oracle",
        *RUN,
    ]
    code, out = eval_cli([*base, "--out", str(tmp_path / "whole"), "--strict"])
    assert code == 0, out
    whole = json.loads((tmp_path / "whole" / "summary.json").read_text())
    # agreement: add_one outputs on add_one(1) are 3, 2, 1 (three clusters, first wins,
    # wrong); double on double(3): 9, 6, 7 (wrong); neg on neg(2): -2, 2, -2 -> right.
    assert whole["selectors"]["agreement"]["accuracy"]["value"] == pytest.approx(1 / 3)

    for shard in ("0/2", "1/2"):
        code, out = eval_cli(
            [*base, "--out", str(tmp_path / "sharded"), "--shard", shard, "--strict"]
        )
        assert code == 0, out
    # a pool makes no remote call; give each shard the figures an endpoint run would write
    shard_remote = (
        {"requests": 3, "failed_requests": 1, "retries": 1, "timeouts": 0, "wall_s": 2.5,
         "waiting_on_failures_s": 0.5, "stopped_by_deadline": 0},
        {"requests": 2, "failed_requests": 2, "retries": 2, "timeouts": 2, "wall_s": 1.25,
         "waiting_on_failures_s": 1.0, "stopped_by_deadline": 1},
    )  # fmt: skip
    shard_dirs = sorted((tmp_path / "sharded" / "shards").glob("*of*"))
    for shard_dir, figures in zip(shard_dirs, shard_remote, strict=True):
        summary_file = shard_dir / "summary.json"
        written = json.loads(summary_file.read_text())
        reached = figures["stopped_by_deadline"] > 0
        written["remote"] = {**figures, "deadline_s": 43200.0, "deadline_reached": reached}
        summary_file.write_text(json.dumps(written))
    code, out = eval_cli(["merge", str(tmp_path / "sharded"), "--strict"])
    assert code == 0, out
    merged = json.loads((tmp_path / "sharded" / "summary.json").read_text())
    assert merged["num_tasks"] == 3
    # the shards' remote calls, summed by hand: 3 + 2 requests, 1 + 2 failed, ...
    assert merged["remote"] == {
        "requests": 5, "failed_requests": 3, "retries": 3, "timeouts": 2, "wall_s": 3.75,
        "waiting_on_failures_s": 1.5, "stopped_by_deadline": 1, "deadline_s": 43200.0,
        "deadline_reached": True, "shards": 2,
    }  # fmt: skip
    assert "Remote calls: 5 requests (3 failed), 3 retries, 2 timeouts;" in out
    assert "summed over 2 shards." in out
    for name in ("random", "first", "agreement", "oracle"):
        assert merged["selectors"][name]["accuracy"] == whole["selectors"][name]["accuracy"]

    records = tmp_path / "whole" / "records.jsonl"
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    for row in rows:
        if row["kind"] == "selection" and row["selector"] == "first":
            row["chosen"], row["score"] = 1, 1.0  # claim a better pick than the run made
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out = eval_cli(["gate", str(tmp_path / "whole"), "--strict"])
    assert code != 0
    assert "first: 3 reported selections differ from the replay" in out
