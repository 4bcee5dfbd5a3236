"""Once training has saved its final model, the trainer's model and optimiser are freed
before anything runs after training (the real-model job's experiment evaluates three models
then, and the optimiser's state alone is twice the weights)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import pytest

from pairrl.train import run


def test_the_trainers_model_and_optimiser_are_freed_after_the_final_save(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo_root: Path
) -> None:
    from pairrl.config import load_config
    from pairrl.train.config import TrainConfig
    from pairrl.train.plan import resolve_plan

    release = run.release_training_state
    seen: dict[str, Any] = {}

    def watched(trainer: Any) -> None:
        refs = {"model": weakref.ref(trainer.model), "optimizer": weakref.ref(trainer.optimizer)}
        release(trainer)
        gc.collect()
        seen.update({name: ref() is None for name, ref in refs.items()})
        seen["state"] = trainer.state.global_step

    monkeypatch.setattr(run, "release_training_state", watched)
    overrides = [
        f"model.path={tiny_model_dir}",
        "batch.max_steps=1",
        "warm_start.steps=0",
        "logging.wandb=disabled",
    ]
    cfg = load_config(repo_root / "configs" / "tiny_cpu.yaml", TrainConfig, overrides)
    summary = run.run_training(cfg, resolve_plan(cfg, out=str(tmp_path / "run")))
    assert seen == {"model": True, "optimizer": True, "state": 1}
    assert summary["global_step"] == 1  # the trainer's state outlives its model
    assert (tmp_path / "run" / "final" / "model.safetensors").is_file()
