"""Stopping a training run: SIGTERM (Slurm, `timeout`, `kill`) and SIGINT (Ctrl-C).

The first signal finishes the step, saves a checkpoint, writes ``run.json`` marked
interrupted, prints the line that resumes the run and exits 0. A second signal, or the
grace period passing while the step does not end, stops the process at once with status
128 + the signal's number. Real signals to real processes throughout.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path

import pytest
from test_stop_stages import job_processes

REPO = Path(__file__).resolve().parents[1]
PAIRRL = shutil.which("pairrl", path=str(Path(sys.executable).parent)) or "pairrl"
TINY_CONFIG = REPO / "configs" / "tiny_cpu.yaml"

# A transformers Trainer whose second step never ends (as a step waiting on a reward that
# never comes would), with CheckpointOnSignal wired in; it writes OUT/stuck when stuck.
STUCK_TRAINER = """
import sys, threading
from pathlib import Path
import torch
from torch import nn
from transformers import Trainer, TrainerCallback, TrainingArguments
from pairrl.train.checkpoint_on_signal import CheckpointOnSignal

out = Path(sys.argv[1])

class Line(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Linear(1, 1, bias=False)

    def forward(self, x, y):
        return {"loss": ((self.w(x) - y) ** 2).mean()}

class Rows(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return {"x": torch.tensor([float(i % 8)]), "y": torch.tensor([2.0 * (i % 8)])}

class StuckAtStep2(TrainerCallback):
    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == 1:
            (out / "stuck").write_text("")
            threading.Event().wait()

args = TrainingArguments(output_dir=str(out), max_steps=10, per_device_train_batch_size=4,
                         save_steps=100, report_to=[], use_cpu=True, disable_tqdm=True)
trainer = Trainer(model=Line(), args=args, train_dataset=Rows(),
                  callbacks=[CheckpointOnSignal(), StuckAtStep2()])
trainer.train()
print("training returned")
"""


def start_stuck_trainer(out: Path, grace_s: float | None = None) -> subprocess.Popen[str]:
    """The stuck trainer, once it is stuck in its second step."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if grace_s is not None:
        env["PAIRRL_STOP_GRACE_S"] = str(grace_s)
    proc = subprocess.Popen(
        [sys.executable, "-c", STUCK_TRAINER, str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while not (out / "stuck").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (out / "stuck").exists(), proc.communicate()[1][-3000:]
    return proc


def wait_ended(proc: subprocess.Popen[str], within_s: float) -> tuple[int, str, str]:
    try:
        stdout, stderr = proc.communicate(timeout=within_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"the process was still running {within_s:g} s later")
    return proc.returncode, stdout, stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_second_signal_stops_a_stuck_step_at_once(tmp_path: Path, sig: signal.Signals) -> None:
    proc = start_stuck_trainer(tmp_path)
    proc.send_signal(sig)
    time.sleep(1.0)
    assert proc.poll() is None, "the first signal must wait for the step to end"
    proc.send_signal(sig)
    code, stdout, stderr = wait_ended(proc, within_s=10)
    assert code == 128 + sig, stderr[-3000:]
    assert f"{sig.name} again: stopping now without a checkpoint" in stderr
    assert "Traceback" not in stderr and "training returned" not in stdout
    assert not list(tmp_path.glob("checkpoint-*"))


def test_grace_period_stops_a_stuck_step(tmp_path: Path) -> None:
    proc = start_stuck_trainer(tmp_path, grace_s=2)
    signalled = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    code, _, stderr = wait_ended(proc, within_s=30)
    assert code == 143, stderr[-3000:]
    assert time.monotonic() - signalled >= 2.0
    assert "no step ended within 2 s of SIGTERM" in stderr
    assert "Traceback" not in stderr


def test_grace_period_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from pairrl.train.checkpoint_on_signal import CheckpointOnSignal

    monkeypatch.setenv("PAIRRL_STOP_GRACE_S", "2.5")
    assert CheckpointOnSignal().grace_s == 2.5
    monkeypatch.setenv("PAIRRL_STOP_GRACE_S", "soon")
    assert CheckpointOnSignal().grace_s == 600
    assert "PAIRRL_STOP_GRACE_S='soon' is not a positive number" in capfd.readouterr().err


def interrupted_summary(run_dir: Path) -> dict:
    """What ``run_training`` returns for a run stopped by a signal after step 3."""
    return {
        "main_process": True,
        "run_dir": str(run_dir),
        "interrupted_at_step": 3,
        "global_step": 3,
        "wall_s": 1.5,
    }


def invoke_train(args: list[str]):  # type: ignore[no-untyped-def]
    import typer
    from typer.testing import CliRunner

    from pairrl.train.cli import register

    root = typer.Typer()
    register(root)

    @root.callback()
    def _root() -> None:  # a group callback, so that "train" is a subcommand
        return None

    return CliRunner().invoke(root, ["train", *args])


def test_interrupted_summary_is_reported_not_a_key_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pairrl.memory
    import pairrl.train.run

    run_dir = tmp_path / "run"
    monkeypatch.setattr(pairrl.memory, "reuse_freed_memory", lambda: None)
    monkeypatch.setattr(
        pairrl.train.run, "run_training", lambda *a, **k: interrupted_summary(run_dir)
    )
    run_dir.mkdir()
    result = invoke_train([str(TINY_CONFIG), "--out", str(run_dir), "--set", "batch.max_steps=9"])
    assert result.exit_code == 0, (result.output, result.exception)
    resume = shlex.join(["pairrl", "train", str(TINY_CONFIG), "--out", str(run_dir),
                         "--set", "batch.max_steps=9", "--resume"])  # fmt: skip
    assert f"stopped at step 3: checkpoint {run_dir / 'checkpoint-3'}" in result.output
    assert result.output.rstrip().endswith(resume)
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "interrupted" and record["interrupted_at_step"] == 3
    assert record["resume_command"] == resume


def test_ctrl_c_outside_a_step_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pairrl.memory
    import pairrl.train.run

    def interrupted(*args: object, **kwargs: object) -> dict:
        raise KeyboardInterrupt

    monkeypatch.setattr(pairrl.memory, "reuse_freed_memory", lambda: None)
    monkeypatch.setattr(pairrl.train.run, "run_training", interrupted)
    run = tmp_path / "run"
    result = invoke_train([str(TINY_CONFIG), "--out", str(run)])
    assert result.exit_code == 130
    assert result.output.strip() == (
        f"stopped (Ctrl-C) outside the run's own training step; {run} keeps the stages that "
        f"finished and the last checkpoint of each training; continue with:\n"
        f"  pairrl train {TINY_CONFIG} --out {run}"  # no checkpoint yet: not --resume
    )


def train_args(model: Path, out: Path) -> list[str]:
    """`pairrl train` on the tiny config for far more steps than the test waits for."""
    overrides = [f"model.path={model}", "model.build_tiny=false", "warm_start.steps=0",
                 "batch.max_steps=50", "batch.problems_per_step=2",
                 "checkpoint.every_steps=100", "logging.wandb=disabled"]  # fmt: skip
    args = ["train", str(TINY_CONFIG), "--out", str(out)]
    for override in overrides:
        args += ["--set", override]
    return args


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_to_pairrl_train_checkpoints_and_prints_the_resume_line(
    tiny_model_dir: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    out = tmp_path / "run"
    args = train_args(tiny_model_dir, out)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([PAIRRL, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=REPO, start_new_session=True)  # fmt: skip
    log = out / "train_log.jsonl"
    deadline = time.monotonic() + 600
    while not (log.is_file() and log.read_text().strip()) and proc.poll() is None:
        assert time.monotonic() < deadline, "no training step within 600 s"
        time.sleep(0.1)
    proc.send_signal(sig)  # step 1 has been logged: training is under way
    code, stdout, stderr = wait_ended(proc, within_s=300)

    assert code == 0, stdout[-2000:] + stderr[-3000:]
    assert "Traceback" not in stdout + stderr
    record = json.loads((out / "run.json").read_text())
    step = record["interrupted_at_step"]
    assert record["status"] == "interrupted" and 1 <= step < 50
    assert (out / f"checkpoint-{step}" / "trainer_state.json").is_file()
    assert not (out / "final").exists()
    resume = shlex.join(["pairrl", *args, "--resume"])
    assert record["resume_command"] == resume
    assert stdout.rstrip().endswith(resume)
    assert f"{sig.name}: saving a checkpoint at step {step}" in stdout


def test_sigterm_to_every_process_with_wandb_logging_keeps_the_checkpoint(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """Slurm's stop: SIGTERM to every process of the job, W&B's helper (wandb-core) among
    them. Its death must not cost the step: the checkpoint is written, exit 0."""
    out = tmp_path / "run"
    args = train_args(tiny_model_dir, out)
    args[args.index("logging.wandb=disabled")] = "logging.wandb=offline"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_DIR": str(tmp_path)}
    proc = subprocess.Popen([PAIRRL, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=REPO, start_new_session=True)  # fmt: skip
    log = out / "train_log.jsonl"
    deadline = time.monotonic() + 600
    while not (log.is_file() and log.read_text().strip()) and proc.poll() is None:
        assert time.monotonic() < deadline, "no training step within 600 s"
        time.sleep(0.1)
    for pid in job_processes(proc.pid):  # as Slurm does: every process of the job,
        with suppress(ProcessLookupError):  # wandb-core (a session of its own) included
            os.kill(pid, signal.SIGTERM)
    code, stdout, stderr = wait_ended(proc, within_s=60)

    assert code == 0, stdout[-2000:] + stderr[-3000:]
    assert "Traceback" not in stdout + stderr, stderr[-3000:]
    record = json.loads((out / "run.json").read_text())
    step = record["interrupted_at_step"]
    assert (out / f"checkpoint-{step}" / "trainer_state.json").is_file()
