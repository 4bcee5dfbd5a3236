"""A task whose own tests loop ends as a ``timeout`` verdict within its deadline.

The tests run in the trusted driver, outside the sandbox's limits; without a deadline of
their own a ``while True: pass`` in a test case held an executor thread forever, so
``pairrl execute`` and a training step's reward never returned.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pairrl.rewards import AssertTests, ExecJob, Executor, Task, correctness_reward

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

TIMEOUT_S = 1.0
OK = "def add(a, b):\n    return a + b\n"
FAST = Task("t/fast", "", "add", AssertTests(cases=("assert add(1, 2) == 3",)))
CHECK_THEN_LOOP = (
    "def check(candidate):\n    assert candidate(1, 2) == 3\n    while True:\n        pass\n"
)
# name: (test cases, setup, check_call)
LOOPING_TESTS = {
    # the case: a bare loop, which never starts a new line (no line events)
    "case": (("assert add(1, 2) == 3", "while True: pass", "assert add(2, 2) == 4"), "", False),
    "check": ((CHECK_THEN_LOOP,), "", True),
    "helper": (
        ("assert add(1, 2) == 3\nspin()",),
        "def spin():\n    while True:\n        pass",
        False,
    ),
    "swallows_exceptions": (
        ("try:\n    while True: pass\nexcept Exception:\n    pass",),
        "",
        False,
    ),
}


def looping_task(name: str) -> Task:
    cases, setup, check_call = LOOPING_TESTS[name]
    return Task(
        f"t/loop-{name}", "", "add", AssertTests(cases=cases, setup=setup, check_call=check_call)
    )


@pytest.fixture(scope="module")
def executor():
    with Executor(workers=2, timeout_s=TIMEOUT_S) as ex:
        yield ex


@pytest.mark.parametrize("name", sorted(LOOPING_TESTS))
def test_looping_tests_are_a_timeout_in_the_reward(executor: Executor, name: str) -> None:
    completion = f"```python\n{OK}```"
    started = time.monotonic()
    [outcome] = correctness_reward(executor, looping_task(name), [completion])
    elapsed = time.monotonic() - started
    assert outcome.reward == 0.0
    assert outcome.result.status == "timeout", outcome.result
    assert elapsed < TIMEOUT_S + 5.0, elapsed
    # The worker is intact: the next candidate on it is judged as usual.
    assert [r.status for r in executor.run([ExecJob(FAST, OK, "next")] * 2)] == ["pass", "pass"]


def test_looping_setup_is_a_timeout_for_every_candidate(executor: Executor) -> None:
    task = Task(
        "t/loop-setup",
        "",
        "add",
        AssertTests(
            cases=("assert add(1, 2) == 3",), setup="def spin():\n    while 1: pass\nspin()"
        ),
    )
    jobs = [ExecJob(task, OK, "a"), ExecJob(task, OK + "\n", "b")]
    started = time.monotonic()
    results = executor.run(jobs)
    assert time.monotonic() - started < 10.0 + 5.0  # the setup's limit, once per task
    assert [r.status for r in results] == ["timeout", "timeout"]
    assert "setup ran past" in (results[0].first_failure or "")


def test_passing_tests_still_pass_under_the_deadline(executor: Executor) -> None:
    # A helper and a loop in the tests, ending in time: the deadline changes nothing.
    task = Task(
        "t/loop-ends",
        "",
        "add",
        AssertTests(
            cases=(
                "total = 0\nfor i in range(2000):\n    total += twice(i)\nassert add(total, 0) == total",
            ),
            setup="def twice(x):\n    return 2 * x",
        ),
    )
    [result] = executor.run([ExecJob(task, OK, "ok")])
    assert result.status == "pass", result


def test_cli_execute_ends_a_looping_test(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    row = {"task_id": 7, "code": OK, "test_list": ["assert add(1, 2) == 3", "while True: pass"]}
    tasks.write_text(json.dumps(row) + "\n")
    candidates = tmp_path / "candidates.jsonl"
    candidates.write_text(json.dumps({"task_id": 7, "candidate_id": "a", "code": OK}) + "\n")
    out = tmp_path / "verdicts.jsonl"
    cmd = [sys.executable, "-c", "from pairrl.cli import main; main()", "execute",
           "--tasks", str(tasks), "--candidates", str(candidates), "--out", str(out),
           "--timeout", "1", "--workers", "1"]  # fmt: skip
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert time.monotonic() - started < 60
    [verdict] = [json.loads(line) for line in out.read_text().splitlines()]
    assert verdict["status"] == "timeout" and not verdict["passed"]
    assert "1 judged, 0 passed; timeout 1" in proc.stdout
