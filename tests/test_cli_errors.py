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


def test_binary_config_file_is_one_message(tmp_path: Path) -> None:
    binary = tmp_path / "image.yaml"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for args in (["train", str(binary), "--dry-run"], ["slurm", "render", str(binary)]):
        proc = subprocess.run([PAIRRL, *args], capture_output=True, text=True, env=env)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr
        assert "not a YAML text file: byte 0x89 at offset 0 is not UTF-8" in proc.stderr


def test_set_keeps_the_text_typed_for_a_text_field(tmp_path: Path) -> None:
    from pairrl.config import apply_overrides
    from pairrl.train.cli import register
    from pairrl.train.config import TrainConfig

    sets = ["logging.run_name=007", "seed=007", "model.path=12", "data.path=null",
            "model.lora.target_modules=[q_proj, v_proj]"]  # fmt: skip
    assert apply_overrides({}, sets, TrainConfig) == {
        "logging": {"run_name": "007"},  # str: the text as typed
        "seed": 7,  # int: read as YAML reads it
        "model": {"path": "12", "lora": {"target_modules": ["q_proj", "v_proj"]}},
        "data": {"path": None},  # str | None: null is a value the field takes
    }
    config = tmp_path / "run.yaml"
    config.write_text("kind: train\nmodel: {path: m}\ndata: {source: tiny_code}\n")
    code, text = _invoke(
        register, ["train", str(config), "--dry-run", "--json", "--set", "logging.run_name=007"]
    )
    assert code == 0, text
    assert json.loads(text)["output_dir"] == "runs/007"


def test_empty_task_file_is_refused_by_every_command(tmp_path: Path) -> None:
    from pairrl.rewards.cli import register as register_execute
    from pairrl.train.cli import register as register_train

    candidates = _jsonl(tmp_path / "c.jsonl", [{"task_id": "m/1", "text": "\\boxed{2}"}])
    config = tmp_path / "run.yaml"
    config.write_text("kind: train\nmodel: {path: m}\ndata: {source: file}\n")
    for name, content in (("empty.jsonl", ""), ("blank.jsonl", "\n\n"), ("list.json", "[]")):
        empty = tmp_path / name
        empty.write_text(content)
        expected = f"error: {empty}: holds no task; expected a task file"
        code, text = _invoke(
            register_train, ["train", str(config), "--dry-run", "--set", f"data.path={empty}"]
        )
        assert code == 2 and expected in text, text
        args = ["--tasks", str(empty), "--candidates", str(candidates), "--out", "o.jsonl"]
        code, text = _invoke(register_execute, ["execute", *args])
        assert code == 2 and expected in text, text


def test_execute_refuses_an_empty_candidate_file(math_files, tmp_path: Path) -> None:
    from pairrl.rewards.cli import register

    tasks, _ = math_files
    empty = _jsonl(tmp_path / "none.jsonl", [])
    args = ["--tasks", str(tasks), "--candidates", str(empty), "--out", str(tmp_path / "o")]
    code, text = _invoke(register, ["execute", *args])
    assert code == 2 and f"error: {empty}: holds no candidate; expected a JSONL file" in text


def test_execute_checks_its_output_path_before_running(
    math_files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pairrl.rewards.cli
    from pairrl.rewards.cli import register

    def run_nothing(*_args: object) -> None:
        raise AssertionError("the candidates ran although --out cannot be written")

    monkeypatch.setattr(pairrl.rewards.cli, "_label_with_progress", run_nothing)
    tasks, pool = math_files
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    for out, message in (
        (not_a_folder / "v.jsonl", f"its folder {not_a_folder} cannot be created"),
        (tmp_path, "is a folder; expected a file path"),
    ):
        args = ["--tasks", str(tasks), "--candidates", str(pool), "--out", str(out)]
        code, text = _invoke(register, ["execute", *args])
        assert code == 2 and f"error: --out {out}: {message}" in text, text


def test_export_of_damaged_checkpoints_is_one_message(tiny_model_dir: Path, tmp_path: Path) -> None:
    import shutil

    from pairrl.train.cli import register

    unfinished = tmp_path / "run_a" / "checkpoint-4"
    unfinished.mkdir(parents=True)
    (unfinished / "config.json").write_text('{"hidden_size": 8}')
    truncated = tmp_path / "run_b" / "final"
    shutil.copytree(tiny_model_dir, truncated)
    weights = truncated / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    # a checkpoint whose save did not finish is passed over without loading it
    out = tmp_path / "run_a-export"
    code, text = _invoke(register, ["export", str(tmp_path / "run_a"), "--out", str(out)])
    assert code == 2, text
    assert "holds no model" in text and "checkpoint-4: no trainer_state.json" in text
    assert not out.exists()
    # a final model whose weights are cut short fails to load: one message, nothing written
    out = tmp_path / "run_b-export"
    code, text = _invoke(register, ["export", str(tmp_path / "run_b"), "--out", str(out)])
    assert code == 2, text
    assert f"error: {truncated} cannot be loaded as a model (" in text
    assert "give another checkpoint folder of the run" in text
    assert not out.exists()  # nothing is written from a model that does not load
