"""The run folder is checked before any work and locked while a job writes it.

``pairrl train`` (and its ``--dry-run``) refuses, in one line and before any library
loads, a ``--out`` that is a file, one below a file, one where nothing can be created,
and a ``model.path`` ``.gguf`` that is missing or is no GGUF file. A second job started
into a folder a job holds is refused, naming the holder; the lock goes with its process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pairrl.errors import InputError
from pairrl.train.run_folder import LOCK_FILE, check_run_folder, lock_run_folder

REPO = Path(__file__).resolve().parents[1]
PAIRRL = str(Path(sys.executable).with_name("pairrl"))
TINY_CONFIG = str(REPO / "configs" / "tiny_cpu.yaml")


def test_a_new_nested_folder_passes_and_nothing_is_created(tmp_path: Path) -> None:
    check_run_folder(tmp_path / "a" / "b")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: _file(d / "run"), r"--out .*/run is a file, not a folder"),
        (lambda d: _file(d / "f") / "run", r"--out .*/f/run: .*/f is a file"),
        (lambda d: Path("/proc/pairrl-run"), r"--out /proc/pairrl-run: cannot write in /proc"),
    ],
)
def test_an_unwritable_run_folder_is_refused(tmp_path: Path, make, message: str) -> None:
    with pytest.raises(InputError, match=message):
        check_run_folder(make(tmp_path))


def _file(path: Path) -> Path:
    path.write_text("x")
    return path


def test_a_locked_folder_is_refused_naming_the_holder_until_it_is_released(tmp_path: Path):
    lock = lock_run_folder(tmp_path)
    with pytest.raises(InputError, match=rf"in use by another pairrl job \(pid {os.getpid()} on "):
        lock_run_folder(tmp_path)  # another open file: flock refuses it, even in one process
    lock.release()
    lock_run_folder(tmp_path).release()
    assert (tmp_path / LOCK_FILE).is_file()


def _train(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [PAIRRL, "train", TINY_CONFIG, *args], capture_output=True, text=True, env=env, timeout=120
    )


def _one_line_error(proc: subprocess.CompletedProcess[str], expected: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and expected in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and expected in lines[0]


@pytest.mark.parametrize("dry_run", [True, False])
def test_train_refuses_bad_paths_before_any_work(tmp_path: Path, dry_run: bool) -> None:
    extra = ["--dry-run"] if dry_run else []
    run_file = _file(tmp_path / "run")
    _one_line_error(_train("--out", str(run_file), *extra), "is a file, not a folder")
    _one_line_error(_train("--out", "/proc/pairrl-run", *extra), "cannot write in /proc")
    missing = tmp_path / "missing.gguf"
    proc = _train(
        "--out", str(tmp_path / "ok"), "--set", f"model.path={missing}",
        "--set", "model.build_tiny=false", *extra,
    )  # fmt: skip
    _one_line_error(proc, f"{missing}: no such GGUF file")
    not_gguf = _file(tmp_path / "weights.gguf")
    proc = _train(
        "--out", str(tmp_path / "ok"), "--set", f"model.path={not_gguf}",
        "--set", "model.build_tiny=false", *extra,
    )  # fmt: skip
    _one_line_error(proc, "is not a GGUF file")
    assert not (tmp_path / "ok").exists()


def test_a_second_job_into_a_held_folder_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    lock = lock_run_folder(run)  # this process stands for a job that is training into it
    try:
        proc = _train("--out", str(run), "--set", "logging.wandb=disabled")
    finally:
        lock.release()
    _one_line_error(proc, f"is in use by another pairrl job (pid {os.getpid()} on ")
    assert sorted(p.name for p in run.iterdir()) == [LOCK_FILE]  # nothing written


def test_float16_on_cpu_is_refused_before_any_work(tmp_path: Path) -> None:
    proc = _train("--out", str(tmp_path / "run"), "--set", "model.dtype=float16", "--dry-run")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "model.dtype" in proc.stderr and "float16 on CPU" in proc.stderr


def test_bf16_mixed_precision_on_cpu_is_refused_before_any_work(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here: bf16 mixed precision is allowed")
    proc = _train("--out", str(tmp_path / "run"), "--set", "batch.bf16=true", "--dry-run")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "batch.bf16" in proc.stderr and "model.dtype" in proc.stderr
