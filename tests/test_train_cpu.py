"""`pairrl train` end to end on CPU with the tiny model: PairRL steps, W&B offline, resume.

The tiny model is warm-started once per session (a short SFT on code-shaped answers,
``pairrl.train.tiny_tasks``) so that its sampled solutions sometimes pass and sometimes fail.
The resume test kills a run after its step-2 checkpoint, resumes it, and checks that
step 3 is exactly what an uninterrupted run produced (same completions, rewards and
advantages: the weights, optimiser, data position and RNG all came back).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAIRRL = shutil.which("pairrl", path=str(Path(sys.executable).parent)) or "pairrl"
TINY_CONFIG = REPO / "configs" / "tiny_cpu.yaml"


@pytest.fixture(scope="session")
def warm_tiny_model(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model after a solution-format warm start (what the RL tests start from)."""
    from pairrl.rollout.prompt_kit import paper_prompt_kit
    from pairrl.train.tiny_tasks import tiny_code_tasks, warm_start_examples
    from pairrl.train.warm_start import warm_start

    kit = paper_prompt_kit()
    examples = warm_start_examples(
        tiny_code_tasks(),
        kit.generation,
        kit.pairwise,
        num_examples=512,
        seed=0,
        judge_every=0,
    )
    out = tmp_path_factory.mktemp("tiny-warm")
    warm_start(tiny_model_dir, examples, out, steps=80, lr=5e-3, batch_size=8)
    return out


def train_args(model: Path, out: Path, steps: int, *extra: str) -> list[str]:
    """`pairrl train` on the tiny config, shrunk for tests (2 problems x 8 rows per step)."""
    return [
        "train",
        str(TINY_CONFIG),
        "--out",
        str(out),
        "--set",
        f"model.path={model}",
        "--set",
        "model.build_tiny=false",
        "--set",
        "warm_start.steps=0",
        "--set",
        f"batch.max_steps={steps}",
        "--set",
        "batch.problems_per_step=2",
        "--set",
        "checkpoint.every_steps=2",
        "--set",
        "logging.completions_table=true",
        *extra,
    ]


def run_pairrl(args: list[str], timeout: float = 600) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline"}
    proc = subprocess.run([PAIRRL, *args], capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return run_summary(args)


def run_summary(args: list[str]) -> dict:
    """The run's summary, RUN/run.json (the console shows one line naming it)."""
    return json.loads((Path(args[args.index("--out") + 1]) / "run.json").read_text())


def kill_after_checkpoint_2(args: list[str], cut: Path) -> None:
    """Run `pairrl ARGS` into ``cut`` and SIGKILL it right after its step-2 checkpoint."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline"}
    proc = subprocess.Popen(
        [PAIRRL, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    state = cut / "checkpoint-2" / "trainer_state.json"
    deadline = time.monotonic() + 600
    while not state.is_file() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.1)  # trainer_state.json is the checkpoint's last file; let its write finish
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert state.is_file(), "the run never wrote checkpoint-2"
    assert not (cut / "final").exists(), "the run finished before it was killed"
    assert not (cut / "checkpoint-4").exists(), "the kill came too late to test resuming at 2"


def assert_same_step(run_a: Path, run_b: Path, step: int) -> None:
    """The two runs' completions tables at ``step`` agree: texts, types, labels, advantages."""
    columns = ["completion", "sample_type", "solution_correctness", "pair_verification",
               "advantage"]  # fmt: skip
    a, b = completions(run_a, step), completions(run_b, step)
    assert a[columns].astype(str).equals(b[columns].astype(str))


def completions(run_dir: Path, step: int):
    import pandas as pd

    return pd.read_parquet(run_dir / "completions" / f"completions_{step:05d}.parquet")


@pytest.mark.slow
def test_pairrl_cpu_run_metrics_wandb_and_resume(warm_tiny_model: Path, tmp_path: Path) -> None:
    ref = tmp_path / "reference"
    summary = run_pairrl(train_args(warm_tiny_model, ref, 3))
    assert summary["global_step"] == 3
    # the versions the numbers were measured with (another release can redraw them)
    assert {"python", "torch", "transformers", "trl"} <= set(summary["libraries"])

    # Some solutions pass and some fail; eligible pairs and empty slots both occur.
    import pandas as pd

    rows = pd.concat([completions(ref, s) for s in (1, 2, 3)])
    solutions = rows[rows.sample_type == "solution"]
    assert 0 < solutions.solution_correctness.sum() < len(solutions)
    assert (rows.sample_type == "judgement").any() and (rows.sample_type == "no_pair").any()
    assert (rows[rows.sample_type == "no_pair"].advantage == 0).all()

    # Checkpoints are plain save_pretrained folders (what a vLLM server loads).
    ckpt = ref / "checkpoint-2"
    for name in (
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "optimizer.pt",
        "scheduler.pt",
    ):
        assert (ckpt / name).is_file(), name
    assert (ref / "final" / "model.safetensors").is_file()

    # W&B offline run: the PairRL metrics and the completions table with the sample type.
    run = next((ref / "wandb").glob("offline-run-*"))
    data = next(run.glob("*.wandb")).read_bytes()
    for key in (b"pairrl/solution_pass_rate", b"pairrl/pairs_none", b"time/judge_s", b"exec/pass"):
        assert key in data, key
    table = json.loads(
        next((run / "files" / "media" / "table").glob("completions_*.json")).read_text()
    )
    assert "sample_type" in table["columns"] and "advantage" in table["columns"]

    # Kill a second run right after its step-2 checkpoint, then resume it. It is launched
    # for 8 steps (constant LR, so the step count changes nothing before the kill) so that it
    # cannot finish in the moment between the checkpoint appearing and the kill.
    cut = tmp_path / "interrupted"
    kill_after_checkpoint_2(train_args(warm_tiny_model, cut, 8), cut)

    resumed = run_pairrl(train_args(warm_tiny_model, cut, 3, "--resume"))
    assert resumed["global_step"] == 3 and resumed["resumed_from"].endswith("checkpoint-2")
    assert_same_step(ref, cut, 3)


def test_resume_without_checkpoint_fails_clearly(tmp_path: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")  # a model folder (never loaded)
    args = train_args(tmp_path / "model", tmp_path / "empty", 1, "--resume")
    proc = subprocess.run([PAIRRL, *args], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 2
    assert "no checkpoint-* folder" in proc.stderr


def _launch(accelerate_config: str, out: Path, model: Path, extra_env: dict[str, str]) -> dict:
    accelerate = str(Path(sys.executable).parent / "accelerate")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline", **extra_env}
    cmd = [
        accelerate,
        "launch",
        "--config_file",
        str(REPO / "configs" / "accelerate" / accelerate_config),
        PAIRRL,
    ]
    proc = subprocess.run(
        cmd + train_args(model, out, 2),
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return run_summary(train_args(model, out, 2))


@pytest.mark.slow
def test_two_cpu_processes_gloo(warm_tiny_model: Path, tmp_path: Path) -> None:
    summary = _launch("cpu_2proc.yaml", tmp_path / "gloo", warm_tiny_model, {})
    assert summary["global_step"] == 2
    # Each process held one of the 2 problems; the metrics cover both (8 solutions).
    exec_counts = {k: v for k, v in summary["last_metrics"].items() if k.startswith("exec/")}
    assert sum(exec_counts.values()) == 8
    assert (tmp_path / "gloo" / "checkpoint-2" / "model.safetensors").is_file()


@pytest.mark.slow
def test_deepspeed_zero2_on_cpu(warm_tiny_model: Path, tmp_path: Path) -> None:
    pytest.importorskip("deepspeed", reason="DeepSpeed is an extra: pip install -e .[deepspeed]")
    summary = _launch(
        "deepspeed_zero2_cpu.yaml", tmp_path / "ds", warm_tiny_model, {"DS_ACCELERATOR": "cpu"}
    )
    assert summary["global_step"] == 2
    exec_counts = {k: v for k, v in summary["last_metrics"].items() if k.startswith("exec/")}
    assert sum(exec_counts.values()) == 8
    assert (tmp_path / "ds" / "final" / "model.safetensors").is_file()
