"""The main job's baselines on a run started again: one that ran to its end with the same
config is reused, one stopped before its end is trained again, and one trained with
another config is refused with what to do (nothing of it removed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pairrl.config import load_config
from pairrl.recipes.comparison import experiment
from pairrl.train.config import TrainConfig
from pairrl.train.task_family import resolve_recipe

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "toy_cpu.yaml"
LOG = [{"step": 1, "loss": 0.5}]


def _main_job(tmp_path: Path) -> tuple[TrainConfig, Any, Path, Path]:
    cfg = load_config(CONFIG, TrainConfig)
    options = resolve_recipe(cfg.recipe).options
    assert options.baselines == ["grpo"]
    return cfg, options, tmp_path / "run", tmp_path / "run" / "warm_start"


resumed: list[Path] = []  # the folders the fake trainer continued from a checkpoint


def _fake_training(calls: list[Path]):
    """Stands in for the trainer: writes what a finished run writes."""

    def run_training(cfg: TrainConfig, plan: Any, resume: bool = False) -> dict[str, Any]:
        folder = Path(plan.output_dir)
        calls.append(folder)
        if resume:
            assert list(folder.glob("checkpoint-*")), "resumed without a checkpoint"
            resumed.append(folder)
        (folder / "final").mkdir(parents=True)
        (folder / "final" / "config.json").write_text("{}")  # the saved model's
        (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in LOG))
        return {"final_model": str(folder / "final")}

    return run_training


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The folders the (fake) trainer was asked to train, in order."""
    import pairrl.train.run

    asked: list[Path] = []
    monkeypatch.setattr(pairrl.train.run, "run_training", _fake_training(asked))
    return asked


def test_a_finished_baseline_is_reused_and_a_stopped_one_trained_again(
    calls: list[Path], tmp_path: Path
) -> None:
    cfg, options, run_dir, warm = _main_job(tmp_path)
    folder = run_dir / "baselines" / "grpo"
    (folder / "checkpoint-20").mkdir(parents=True)  # stopped at step 20
    first = experiment.train_baselines(cfg, options, run_dir, warm)
    assert calls == [folder]  # trained again, from nothing
    assert not (folder / "checkpoint-20").exists()
    assert first["grpo"]["log_history"] == LOG
    # started again after the baseline finished: reused, with its recorded wall time
    again = experiment.train_baselines(cfg, options, run_dir, warm)
    assert calls == [folder]
    assert again == first
    # a finished baseline whose model is gone is trained again
    (folder / "final" / "config.json").unlink()
    experiment.train_baselines(cfg, options, run_dir, warm)
    assert calls == [folder, folder]


def test_a_stopped_baseline_the_trainer_can_resume_is_continued(
    calls: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pairrl.train.resume

    cfg, options, run_dir, warm = _main_job(tmp_path)
    folder = run_dir / "baselines" / "grpo"
    (folder / "checkpoint-3").mkdir(parents=True)  # stopped at step 3, with its checkpoint
    checked: list[Path] = []
    monkeypatch.setattr(
        pairrl.train.resume, "resume_point", lambda cfg, folder: checked.append(folder)
    )
    resumed.clear()
    experiment.train_baselines(cfg, options, run_dir, warm)
    assert calls == [folder] and checked == [folder] and resumed == [folder]
    assert (folder / "checkpoint-3").is_dir()  # continued, not deleted


def test_a_baseline_trained_with_another_config_is_refused(
    calls: list[Path], tmp_path: Path
) -> None:
    cfg, options, run_dir, warm = _main_job(tmp_path)
    experiment.train_baselines(cfg, options, run_dir, warm)
    other = cfg.model_copy(update={"seed": cfg.seed + 1})
    with pytest.raises(RuntimeError, match="another config: remove that folder"):
        experiment.train_baselines(other, options, run_dir, warm)
    assert len(calls) == 1
    assert (run_dir / "baselines" / "grpo" / "final").is_dir()


def test_a_finished_baseline_is_reused_however_the_run_folder_is_spelled(
    calls: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg, options, run_dir, warm = _main_job(tmp_path)
    experiment.train_baselines(cfg, options, run_dir, warm)  # absolute
    monkeypatch.chdir(tmp_path)
    relative = Path("./run")
    moved = cfg.checkpoint.model_copy(update={"output_dir": "./" + cfg.checkpoint.output_dir})
    spelled = cfg.model_copy(update={"checkpoint": moved})
    again = experiment.train_baselines(spelled, options, relative, relative / "warm_start")
    assert len(calls) == 1
    assert again["grpo"]["final_dir"].resolve() == (run_dir / "baselines/grpo/final")


def test_a_marker_without_its_config_is_checked_against_the_trainers_record(
    calls: list[Path], tmp_path: Path
) -> None:
    cfg, options, run_dir, warm = _main_job(tmp_path)
    experiment.train_baselines(cfg, options, run_dir, warm)
    folder = run_dir / "baselines" / "grpo"
    (folder / experiment.BASELINE_DONE).write_text(json.dumps({"wall_s": 1.0}))
    trained = experiment.baseline_config(cfg, options, "grpo", warm)
    (folder / "config.json").write_text(json.dumps(trained.model_dump()))  # the trainer's
    assert experiment.train_baselines(cfg, options, run_dir, warm)["grpo"]["wall_s"] == 1.0
    other = cfg.model_copy(update={"seed": cfg.seed + 1})
    with pytest.raises(RuntimeError, match="another config"):
        experiment.train_baselines(other, options, run_dir, warm)
    (folder / "config.json").unlink()  # nothing says how it was trained: trained again
    experiment.train_baselines(cfg, options, run_dir, warm)
    assert len(calls) == 2 and (folder / "final").is_dir()


def test_evaluation_only_options_keep_a_finished_baseline(
    calls: list[Path], tmp_path: Path
) -> None:
    from pairrl.recipes.comparison.options import EVALUATION_ONLY

    cfg, options, run_dir, warm = _main_job(tmp_path)
    assert set(type(options).model_fields) >= EVALUATION_ONLY  # names fields that exist
    experiment.train_baselines(cfg, options, run_dir, warm)
    evaluated = options.model_copy(update={"eval_k": 4, "side_by_side": False})
    experiment.train_baselines(cfg, evaluated, run_dir, warm)  # reused
    assert len(calls) == 1
    trained_otherwise = options.model_copy(update={"split_seed": options.split_seed + 1})
    with pytest.raises(RuntimeError, match="another config"):
        experiment.train_baselines(cfg, trained_otherwise, run_dir, warm)
