"""`--resume` is exact and guards the run's record.

Fast: each pass over the problems gets the uninterrupted run's shuffle after a resume
(``PassSeededSampler``); a resume with a changed config is refused naming the fields, the
fields that may change are let through and reported; damaged checkpoints (truncated
weights, an empty optimiser file, a cut-off trainer state, a missing shard) are found
from their headers and passed over for the previous intact one, or refused when none is
intact; checkpoints are staged and renamed into place (a save cut off leaves none, a
damaged one of the same step is replaced); a warm start is reused only when its recorded
settings match, and the summary says which one was used.
Slow: a run killed right after its end-of-pass checkpoint (8 tasks, 4 per step) and
resumed, past a damaged newer checkpoint, equals an uninterrupted run bit for bit.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from contextlib import nullcontext
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import test_train_cpu as train_cpu
import torch
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import Trainer, TrainingArguments
from trl.trainer.utils import RepeatSampler

from pairrl.config import load_config
from pairrl.errors import InputError
from pairrl.train.checkpoints import (
    STAGING_DIR,
    AtomicCheckpoints,
    checkpoint_problem,
    last_intact_checkpoint,
)
from pairrl.train.config import TrainConfig
from pairrl.train.policy import prepare_policy
from pairrl.train.resume import PassSeededSampler, resume_point
from pairrl.train.warm_start import WARM_START_RECORD

TINY_CONFIG = train_cpu.TINY_CONFIG
warm_tiny_model = train_cpu.warm_tiny_model  # the session's warm-started tiny model


def tiny_cfg(*overrides: str) -> TrainConfig:
    base = ["model.path=unused-model", "model.build_tiny=false", "warm_start.steps=0"]
    return load_config(TINY_CONFIG, TrainConfig, [*base, *overrides])


# ---- the problem order of each pass --------------------------------------------------------


def test_a_fresh_sampler_gives_each_pass_the_uninterrupted_order() -> None:
    def trl_sampler() -> RepeatSampler:  # as TRL builds it: 8 problems, 4 per step, G = 2
        return RepeatSampler(range(8), mini_repeat_count=2, batch_size=4, shuffle=True, seed=0)

    plain = trl_sampler()
    uninterrupted = [list(plain) for _ in range(3)]  # one process iterating pass after pass
    assert uninterrupted[0] != uninterrupted[1] != uninterrupted[2]
    # a resumed process starts its sampler afresh; TRL's alone repeats the first pass
    assert list(trl_sampler()) == uninterrupted[0]
    for done in range(3):
        resumed = PassSeededSampler(trl_sampler(), lambda done=done: done)
        assert list(resumed) == uninterrupted[done] and len(resumed) == len(plain)
    # the same sampler, iterated pass after pass as a run does, is TRL's order unchanged
    current = {"pass": 0}
    seeded = PassSeededSampler(trl_sampler(), lambda: current["pass"])
    for done in range(3):
        current["pass"] = done
        assert list(seeded) == uninterrupted[done]


# ---- checkpoints: intact or not ------------------------------------------------------------


def fake_checkpoint(run_dir: Path, step: int) -> Path:
    """A checkpoint's files, small: weights, optimiser, RNG, trainer state."""
    folder = run_dir / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    save_file({"w": torch.arange(64, dtype=torch.float32)}, folder / "model.safetensors")
    torch.save({"state": {0: torch.ones(8)}}, folder / "optimizer.pt")
    torch.save({"python": 1}, folder / "rng_state.pth")
    (folder / "config.json").write_text('{"model_type": "qwen3"}')
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    return folder


def truncate(path: Path, keep: int) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:keep])


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda f: truncate(f / "model.safetensors", 200), "model.safetensors is 200 bytes"),
        (lambda f: truncate(f / "model.safetensors", 4), "model.safetensors is cut short"),
        (lambda f: truncate(f / "optimizer.pt", 0), "optimizer.pt is empty"),
        (lambda f: truncate(f / "optimizer.pt", 100), "optimizer.pt is not a whole torch file"),
        (lambda f: truncate(f / "trainer_state.json", 5), "trainer_state.json is not valid JSON"),
        (lambda f: (f / "trainer_state.json").unlink(), "no trainer_state.json"),
        (lambda f: (f / "model.safetensors").unlink(), "no model weights"),
        (
            lambda f: (f / "model.safetensors.index.json").write_text(
                json.dumps({"weight_map": {"w": "model-00002-of-00002.safetensors"}})
            ),
            "names missing shards: model-00002-of-00002.safetensors",
        ),
    ],
)
def test_a_damaged_checkpoint_is_passed_over_for_the_previous_intact_one(
    tmp_path: Path, damage: Any, reason: str
) -> None:
    intact = fake_checkpoint(tmp_path, 2)
    damaged = fake_checkpoint(tmp_path, 4)
    assert checkpoint_problem(damaged) is None
    damage(damaged)
    assert reason in (checkpoint_problem(damaged) or "")
    found, skipped = last_intact_checkpoint(tmp_path)
    assert found == intact and len(skipped) == 1 and skipped[0].startswith("checkpoint-4: ")


def test_resume_refuses_when_no_checkpoint_is_intact(tmp_path: Path) -> None:
    cfg = tiny_cfg()
    (tmp_path / "config.json").write_text(json.dumps(cfg.model_dump()))
    truncate(fake_checkpoint(tmp_path, 2) / "model.safetensors", 100)
    with pytest.raises(InputError, match=r"no intact checkpoint in .*checkpoint-2: model"):
        resume_point(cfg, tmp_path)


def test_resume_refuses_a_checkpoint_past_max_steps(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(tiny_cfg().model_dump()))
    fake_checkpoint(tmp_path, 4)
    assert resume_point(tiny_cfg("batch.max_steps=4"), tmp_path).step == 4
    with pytest.raises(
        InputError, match=r"checkpoint-4 holds 4 steps, more than batch.max_steps=3"
    ):
        resume_point(tiny_cfg("batch.max_steps=3"), tmp_path)


# ---- the config on resume ------------------------------------------------------------------


def test_resume_refuses_a_changed_config_naming_the_fields(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(tiny_cfg().model_dump()))
    fake_checkpoint(tmp_path, 2)
    changed = tiny_cfg("rollout.mode=grpo", "optim.lr=0.001", "seed=3", "batch.max_steps=9")
    with pytest.raises(InputError) as err:
        resume_point(changed, tmp_path)
    message = str(err.value)
    for field in ("rollout.mode 'pairrl' (now 'grpo')", "optim.lr 0.0001 (now 0.001)", "seed 0"):
        assert field in message
    assert "batch.max_steps 4" not in message  # allowed: named only among those that may change
    assert "\n" not in message


def test_resume_lets_through_the_fields_that_may_change_and_reports_them(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(tiny_cfg().model_dump()))
    fake_checkpoint(tmp_path, 2)
    changed = tiny_cfg(
        "batch.max_steps=9",
        "logging.console=dicts",
        "checkpoint.every_steps=3",
        "engine.server_host=10.0.0.7",
        "executor.workers=1",
        "heldout_probe.every_steps=2",
        "heldout_probe.pairs_file=p.jsonl",
    )
    point = resume_point(changed, tmp_path)
    assert point.checkpoint == tmp_path / "checkpoint-2" and point.skipped == []
    assert point.changes["batch.max_steps"] == {"recorded": 4, "now": 9}
    assert set(point.changes) == {
        "batch.max_steps",
        "logging.console",
        "checkpoint.every_steps",
        "engine.server_host",
        "executor.workers",
        "heldout_probe.every_steps",
        "heldout_probe.pairs_file",
    }


def test_pairrl_train_resume_with_a_changed_config_exits_2_and_keeps_the_record(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")  # a model folder (never loaded)
    args = train_cpu.train_args(tmp_path / "model", run, 4, "--resume")
    recorded = load_config(TINY_CONFIG, TrainConfig, args_overrides(args))
    (run / "config.json").parent.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps(recorded.model_dump(), indent=2))
    before = (run / "config.json").read_text()
    fake_checkpoint(run, 2)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [train_cpu.PAIRRL, *args, "--set", "optim.lr=0.5", "--set", "rollout.mode=pointrl"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --resume: "), proc.stderr[-2000:]
    assert "optim.lr 0.0001 (now 0.5)" in lines[0] and "rollout.mode 'pairrl'" in lines[0]
    assert (run / "config.json").read_text() == before


def args_overrides(args: list[str]) -> list[str]:
    """The ``--set`` values of a ``pairrl train`` argument list."""
    return [args[i + 1] for i, a in enumerate(args) if a == "--set"]


# ---- staged checkpoint saves ---------------------------------------------------------------


class _Regression(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Linear(1, 1, bias=False)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"loss": ((self.w(x) - y) ** 2).mean()}


class _Rows(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"x": torch.tensor([float(i % 8)]), "y": torch.tensor([2.0 * (i % 8)])}


class StagedTrainer(AtomicCheckpoints, Trainer):
    """A plain Trainer with staged checkpoints, as PairRLTrainer has them."""


def staged_trainer(out: Path, steps: int) -> StagedTrainer:
    args = TrainingArguments(
        output_dir=str(out), max_steps=steps, per_device_train_batch_size=4, save_steps=2,
        save_total_limit=2, logging_steps=100, report_to=[], use_cpu=True, learning_rate=0.01,
        seed=0, disable_tqdm=True, dataloader_num_workers=0,
    )  # fmt: skip
    return StagedTrainer(model=_Regression(), args=args, train_dataset=_Rows())


def test_checkpoints_are_renamed_into_place_whole_and_rotated(tmp_path: Path) -> None:
    staged_trainer(tmp_path, 6).train()
    names = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("checkpoint-"))
    assert names == ["checkpoint-4", "checkpoint-6"]  # save_total_limit 2 on the run folder
    assert all(checkpoint_problem(tmp_path / n) is None for n in names)
    assert not (tmp_path / STAGING_DIR).exists()


def test_a_save_cut_off_leaves_no_checkpoint_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trainer = staged_trainer(tmp_path, 4)
    real = Trainer._save_rng_state

    def disk_full_at_step_4(self: Trainer, output_dir: str) -> None:
        if self.state.global_step == 4:
            raise OSError(28, "No space left on device")
        real(self, output_dir)

    monkeypatch.setattr(Trainer, "_save_rng_state", disk_full_at_step_4)
    with pytest.raises(OSError, match="No space left"):
        trainer.train()
    assert not (tmp_path / "checkpoint-4").exists()  # written in place, it would be half there
    assert checkpoint_problem(tmp_path / "checkpoint-2") is None
    assert last_intact_checkpoint(tmp_path) == (tmp_path / "checkpoint-2", [])


def test_a_damaged_checkpoint_of_the_same_step_is_replaced(tmp_path: Path) -> None:
    damaged = fake_checkpoint(tmp_path, 4)
    truncate(damaged / "model.safetensors", 10)
    staged_trainer(tmp_path, 4).train()
    assert checkpoint_problem(tmp_path / "checkpoint-4") is None
    assert not (tmp_path / STAGING_DIR).exists()


# ---- the warm start ------------------------------------------------------------------------


def one_process() -> Any:
    return SimpleNamespace(is_main_process=True, main_process_first=nullcontext)


@pytest.fixture
def fake_sft(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """``warm_start`` stood in for by a stub that writes a model file; the calls it got."""
    calls: list[Path] = []

    def warm_start(model_dir: str, examples: list, out_dir: Path, **kw: Any) -> dict[str, Any]:
        calls.append(Path(out_dir))
        Path(out_dir).mkdir(parents=True)
        (Path(out_dir) / "config.json").write_text("{}")
        return {"steps": kw["steps"], "first_loss": 3.0, "last_loss": 0.5, "wall_s": 1.5}

    monkeypatch.setattr("pairrl.train.warm_start.warm_start", warm_start)
    return calls


def test_a_warm_start_is_recorded_then_reused_only_with_the_same_settings(
    tmp_path: Path, fake_sft: list[Path]
) -> None:
    run = tmp_path / "run"
    cfg = tiny_cfg(f"model.path={tmp_path}", "warm_start.steps=120")
    conversations = lambda: [[{"role": "user", "content": "q"}]]  # noqa: E731
    first = prepare_policy(cfg, run, one_process(), conversations)
    assert len(fake_sft) == 1 and first.path == str(run / "warm_start")
    assert first.warm_start_report == {
        "reused": False,
        "steps": 120,
        "first_loss": 3.0,
        "last_loss": 0.5,
        "wall_s": 1.5,
        "out_dir": str(run / "warm_start"),
    }
    record = json.loads((run / "warm_start" / WARM_START_RECORD).read_text())
    assert record["settings"]["warm_start.steps"] == 120 and record["base_model"] == str(tmp_path)
    assert [p.name for p in run.iterdir()] == ["warm_start"]  # the staging folder is gone

    again = prepare_policy(cfg, run, one_process(), conversations)
    assert len(fake_sft) == 1, "the recorded warm start is reused, not trained again"
    assert again.warm_start_report == {
        "reused": True,
        "out_dir": str(run / "warm_start"),
        "steps": 120,
        "first_loss": 3.0,
        "last_loss": 0.5,
        "trained_wall_s": 1.5,
    }

    other = tiny_cfg(f"model.path={tmp_path}", "warm_start.steps=40", "warm_start.lr=0.01")
    with pytest.raises(InputError) as err:
        prepare_policy(other, run, one_process(), conversations)
    assert "warm_start.steps 120 (now 40)" in str(err.value)
    assert "warm_start.lr 0.003 (now 0.01)" in str(err.value) and len(fake_sft) == 1


def test_a_warm_start_without_its_record_is_refused(tmp_path: Path, fake_sft: list[Path]) -> None:
    run = tmp_path / "run"
    (run / "warm_start").mkdir(parents=True)
    (run / "warm_start" / "config.json").write_text("{}")
    cfg = tiny_cfg(f"model.path={tmp_path}", "warm_start.steps=120")
    with pytest.raises(InputError, match="holds no readable record of the settings"):
        prepare_policy(cfg, run, one_process(), list)
    assert fake_sft == []


# ---- end to end ----------------------------------------------------------------------------


def pass_args(model: Path, out: Path, steps: int, *extra: str) -> list[str]:
    """The tiny config's shape: 8 tasks, 4 per step, so every second step ends a pass."""
    args = train_cpu.train_args(model, out, steps, *extra)
    args[args.index("batch.problems_per_step=2")] = "batch.problems_per_step=4"
    return [*args, "--set", "logging.wandb=disabled"]


def metric_rows(run_dir: Path) -> list[dict[str, Any]]:
    """The per-step rows of ``metrics.jsonl`` without their wall times (the end-of-training
    row is transformers' summary of the launch: its runtime and its steps' mean loss)."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    timed = ("time/", "step_time")
    return [
        {k: v for k, v in row.items() if not k.startswith(timed)}
        for row in rows
        if "train_runtime" not in row
    ]


@pytest.mark.slow
def test_kill_and_resume_at_the_end_of_a_pass_is_exact(warm_tiny_model: Path, tmp_path: Path):
    ref = tmp_path / "reference"
    train_cpu.run_pairrl(pass_args(warm_tiny_model, ref, 4))

    cut = tmp_path / "interrupted"
    train_cpu.kill_after_checkpoint_2(pass_args(warm_tiny_model, cut, 8), cut)
    # a newer checkpoint whose weights were cut short (copied by hand, a full disk)
    damaged = cut / "checkpoint-4"
    shutil.copytree(cut / "checkpoint-2", damaged)
    (damaged / "trainer_state.json").write_text(json.dumps({"global_step": 4}))
    truncate(damaged / "model.safetensors", 1000)

    args = pass_args(warm_tiny_model, cut, 4, "--resume")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([train_cpu.PAIRRL, *args], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "passing over checkpoint-4: model.safetensors is cut short (1000 bytes" in proc.stderr
    assert "missing keys" not in proc.stderr  # the tied head is saved once, not missing
    summary = train_cpu.run_summary(args)
    assert summary["resumed_from"] == str(cut / "checkpoint-2") and summary["global_step"] == 4
    assert summary["resume_changes"] == {"batch.max_steps": {"recorded": 8, "now": 4}}
    assert json.loads((cut / "config.json").read_text())["batch"]["max_steps"] == 8

    for step in (3, 4):
        train_cpu.assert_same_step(ref, cut, step)
    assert metric_rows(cut) == metric_rows(ref)
    ref_weights = load_file(ref / "final" / "model.safetensors")
    cut_weights = load_file(cut / "final" / "model.safetensors")
    assert ref_weights.keys() == cut_weights.keys()
    assert all(torch.equal(ref_weights[k], cut_weights[k]) for k in ref_weights)
    assert checkpoint_problem(cut / "checkpoint-4") is None  # the damaged one was replaced


@pytest.mark.slow
def test_resume_after_the_last_step_trains_no_further(warm_tiny_model: Path, tmp_path: Path):
    """A run that reached max_steps mid-pass (1 problem a step, 8 problems), resumed: the
    Trainer's loop would take one more step before checking max_steps; the resume loads
    the last checkpoint instead, and the final model is that checkpoint's."""
    run = tmp_path / "run"
    args = pass_args(warm_tiny_model, run, 2)
    args[args.index("batch.problems_per_step=4")] = "batch.problems_per_step=1"
    first = train_cpu.run_pairrl(args)
    assert first["global_step"] == 2
    again = train_cpu.run_pairrl([*args, "--resume"])
    assert again["global_step"] == 2 and again["resumed_from"] == str(run / "checkpoint-2")
    assert not (run / "checkpoint-3").exists()
    kept = load_file(run / "checkpoint-2" / "model.safetensors")
    final = load_file(run / "final" / "model.safetensors")
    assert kept.keys() == final.keys() and all(torch.equal(kept[k], final[k]) for k in kept)
    assert not (run / ".final-staging").exists()


def test_a_stop_during_the_final_save_leaves_no_final_folder(tmp_path: Path) -> None:
    """``final/`` is whole or absent: a stop while its files are written leaves none (the
    next launch writes it again, from the checkpoint at max_steps), and a later save
    publishes every file and no staging folder."""
    from pairrl.train.checkpoint_on_signal import StopRequested
    from pairrl.train.run import _save_final

    def cut_short(folder: str) -> None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / "config.json").write_text("{}")
        raise StopRequested(15)  # SIGTERM before the weights are written

    def whole(folder: str) -> None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        for name in ("config.json", "model.safetensors"):
            (Path(folder) / name).write_text(name)

    accelerator = SimpleNamespace(wait_for_everyone=lambda: None)
    final = tmp_path / "final"
    with pytest.raises(StopRequested):
        _save_final(
            SimpleNamespace(accelerator=accelerator, save_model=cut_short), final, True, None
        )
    assert not final.exists()
    _save_final(SimpleNamespace(accelerator=accelerator, save_model=whole), final, True, None)
    assert sorted(p.name for p in final.iterdir()) == ["config.json", "model.safetensors"]
    assert [p.name for p in tmp_path.iterdir()] == ["final"]
