"""Errors a new user meets, as the CLIs print them: the file, the row and what was
expected, exit status 2, and no traceback (an exception escaping a command fails these
tests: the in-process runners re-raise it; the console-script runs look at stderr)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

PAIRRL = str(Path(sys.executable).with_name("pairrl"))
MATH_ROW = {"task_id": "m/1", "problem": "What is 1 + 1?", "answer": "2"}


def _invoke(register: Callable[[typer.Typer], None], args: list[str]) -> tuple[int, str]:
    root = typer.Typer()
    register(root)

    @root.callback()
    def _root() -> None:  # a group, so that the command is a subcommand
        return None

    result = CliRunner().invoke(root, args)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback: the test fails
    return result.exit_code, result.output


def _jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.fixture
def math_files(tmp_path: Path) -> tuple[Path, Path]:
    tasks = _jsonl(tmp_path / "tasks.jsonl", [MATH_ROW])
    pool = _jsonl(
        tmp_path / "pool.jsonl", [{"task_id": "m/1", "candidate_id": "0", "text": "\\boxed{2}"}]
    )
    return tasks, pool


def test_eval_missing_task_file(
    eval_cli: Callable[..., tuple[int, str]], math_files, tmp_path
) -> None:
    _, pool = math_files
    code, out = eval_cli(
        ["--tasks", "/missing.json", "--pool", str(pool), "--k", "1", "--out", str(tmp_path / "o")]
    )
    assert code == 2
    assert "error: /missing.json: file not found; expected a task file (JSON/JSONL" in out


def test_eval_missing_config_file(eval_cli, tmp_path: Path) -> None:
    code, out = eval_cli([str(tmp_path / "absent.yaml"), "--strict"])
    assert code == 2 and f"file not found: {tmp_path / 'absent.yaml'}" in out


def test_eval_missing_model_folders(eval_cli, math_files, tmp_path: Path) -> None:
    tasks, _ = math_files
    args = ["--tasks", str(tasks), "--k", "1", "--out", str(tmp_path / "o"), "--no-progress"]
    code, out = eval_cli([*args, "--model", str(tmp_path / "no-model")])
    assert code == 2
    assert f"error: candidates.model {tmp_path / 'no-model'}: no model folder there" in out
    (tmp_path / "empty").mkdir()
    code, out = eval_cli([*args, "--model", str(tmp_path / "empty")])
    assert code == 2 and "the folder holds no config.json" in out


def test_eval_pool_that_matches_no_task(eval_cli, math_files, tmp_path: Path) -> None:
    tasks, _ = math_files
    other = _jsonl(
        tmp_path / "other.jsonl", [{"task_id": "HumanEval/0", "candidate_id": "0", "code": "x"}]
    )
    code, out = eval_cli(
        ["--tasks", str(tasks), "--pool", str(other), "--k", "1", "--out", str(tmp_path / "o")]
    )
    assert code == 2
    assert f"error: {other}: no task id of the pool is in the task set {tasks} (1 tasks)" in out
    assert "pool ids such as ['HumanEval/0'], task ids such as ['m/1']" in out
    assert "candidates are matched to tasks by task_id" in out


def test_eval_unreadable_rows_name_file_and_row(eval_cli, math_files, tmp_path: Path) -> None:
    _, pool = math_files
    out_dir = str(tmp_path / "o")
    broken = _jsonl(tmp_path / "broken.jsonl", [MATH_ROW, "{not json"])
    code, out = eval_cli(
        ["--tasks", str(broken), "--pool", str(pool), "--k", "1", "--out", out_dir]
    )
    assert code == 2 and f"error: {broken}: line 2 is not JSON" in out
    odd = _jsonl(tmp_path / "odd.jsonl", [MATH_ROW, {"task_id": "q", "title": "?"}])
    code, out = eval_cli(["--tasks", str(odd), "--pool", str(pool), "--k", "1", "--out", out_dir])
    assert code == 2
    assert f"{odd}: row 2 (task_id 'q'): ValueError: no known task format fits the fields" in out
    bad_pool = _jsonl(tmp_path / "bad_pool.jsonl", [{"task_id": "m/1", "candidate_id": "0"}])
    code, out = eval_cli(
        [
            "--tasks",
            str(odd.with_name("tasks.jsonl")),
            "--pool",
            str(bad_pool),
            "--k",
            "1",
            "--out",
            out_dir,
        ]
    )
    assert code == 2 and f"error: {bad_pool}: unknown pool layout" in out


def test_eval_split_that_keeps_nothing(eval_cli, math_files, tmp_path: Path) -> None:
    tasks, pool = math_files
    args = ["--tasks", str(tasks), "--pool", str(pool), "--k", "1", "--out", str(tmp_path / "o")]
    code, out = eval_cli([*args, "--set", "tasks.split=mbpp_test"])
    assert code == 2 and "tasks.split 'mbpp_test' keeps tasks whose id ends in 11..510" in out


def test_eval_selection_without_candidates_says_why(eval_cli, math_files, tmp_path: Path) -> None:
    tasks = _jsonl(tmp_path / "two.jsonl", [MATH_ROW, {**MATH_ROW, "task_id": "m/2"}])
    only_second = _jsonl(
        tmp_path / "second.jsonl", [{"task_id": "m/2", "candidate_id": "0", "text": "\\boxed{2}"}]
    )
    args = ["--tasks", str(tasks), "--pool", str(only_second), "--k", "1", "--limit", "1"]
    code, out = eval_cli([*args, "--out", str(tmp_path / "o"), "--strict", "--no-progress"])
    assert code == 1 and "integrity gate: FAIL" in out
    assert (
        f"no task was evaluated: no candidate of {only_second} belongs to a task selected from "
        f"{tasks} (split all, limit 1, shard None); candidates are matched to tasks by task_id"
    ) in out


def test_eval_gate_of_a_folder_that_is_no_run(eval_cli, tmp_path: Path) -> None:
    code, out = eval_cli(["gate", str(tmp_path)])
    assert code == 2 and f"error: {tmp_path / 'config.json'}: file not found" in out


def test_execute_errors(math_files, tmp_path: Path) -> None:
    from pairrl.rewards.cli import register

    tasks, pool = math_files
    out = str(tmp_path / "verdicts.jsonl")

    def execute(task_file: Path | str, candidates: Path | str) -> tuple[int, str]:
        return _invoke(
            register,
            ["execute", "--tasks", str(task_file), "--candidates", str(candidates), "--out", out],
        )

    code, text = execute(tasks, tmp_path / "none.jsonl")
    assert (
        code == 2 and f"error: {tmp_path / 'none.jsonl'}: file not found; expected a JSONL" in text
    )
    code, text = execute(tmp_path / "gone.jsonl", pool)
    assert code == 2 and f"error: {tmp_path / 'gone.jsonl'}: file not found" in text
    rows = _jsonl(tmp_path / "rows.jsonl", [{"task_id": "m/1", "text": "\\boxed{2}"}, "[1, 2"])
    code, text = execute(tasks, rows)
    assert code == 2 and f"error: {rows}: row 2: JSONDecodeError" in text
    assert "expected a JSON object {task_id, candidate_id, code}" in text
    stray = _jsonl(tmp_path / "stray.jsonl", [{"task_id": "m/9", "text": "\\boxed{2}"}])
    code, text = execute(tasks, stray)
    assert code == 2 and f"{stray}: row 1: task_id 'm/9' is not in the tasks file" in text
    code, text = execute(tasks, pool)  # and the math candidate is judged, no sandbox needed
    assert code == 0 and "1 judged, 1 passed" in text


def test_train_errors_before_any_model_loads(tmp_path: Path) -> None:
    from pairrl.train.cli import register

    def train(config: Path, *sets: str) -> tuple[int, str]:
        args = ["train", str(config), "--dry-run"]
        return _invoke(register, [*args, *[a for s in sets for a in ("--set", s)]])

    code, text = train(tmp_path / "missing.yaml")
    assert code == 2 and f"file not found: {tmp_path / 'missing.yaml'}" in text
    config = tmp_path / "run.yaml"
    config.write_text("kind: train\nmodel: {path: m}\ndata: {source: file, path: x}\n")
    code, text = train(config, f"data.path={tmp_path / 'absent.jsonl'}")
    assert code == 2 and f"error: data.path {tmp_path / 'absent.jsonl'}: file not found" in text
    broken = _jsonl(tmp_path / "broken.jsonl", [MATH_ROW, {"task_id": "m/2", "problem": "p"}])
    code, text = train(config, f"data.path={broken}")
    assert code == 2
    assert f"error: {broken}: row 2 (task_id 'm/2'): ValueError: no known task format" in text
    code, text = train(config, f"data.path={broken}", "data.source=dataset")
    assert code == 2 and f"error: {broken}: row 2 (task_id 'm/2')" in text
    code, text = train(config, "data.source=dataset", f"data.path={tmp_path / 'no.parquet'}")
    assert code == 2 and f"error: {tmp_path / 'no.parquet'}: file not found" in text


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "--tasks", "/missing.json", "--pool", "/missing-pool.jsonl", "--k", "1"],
        ["train", "/missing/config.yaml"],
        ["execute", "--tasks", "/missing.json", "--candidates", "/c.jsonl", "--out", "/tmp/x"],
    ],
    ids=["eval", "train", "execute"],
)
def test_console_script_prints_no_traceback(args: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([PAIRRL, *args], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "/missing" in proc.stderr and "not found" in proc.stderr


def test_root_command_turns_any_input_error_into_a_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A subcommand that lets an InputError through still ends with the message and 2."""
    import pairrl.cli
    from pairrl.rewards import InputError

    app = typer.Typer()

    @app.command()
    def boom() -> None:
        raise InputError("rows.jsonl: row 3: expected a JSON object")

    @app.callback()
    def _root() -> None:
        return None

    monkeypatch.setattr(pairrl.cli, "app", app)
    monkeypatch.setattr(pairrl.cli, "_register_plugins", lambda _app: None)
    monkeypatch.setattr(sys, "argv", ["pairrl", "boom"])
    with pytest.raises(SystemExit) as exit_info:
        pairrl.cli.main()
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == "error: rows.jsonl: row 3: expected a JSON object\n"
