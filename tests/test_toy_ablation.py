"""benchmarks/toy_ablation.py --evaluate-from: it finds a finished ablation's models where
the main job trained them, and names the ones that are missing instead of evaluating
anything."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pairrl.config import load_config
from pairrl.recipes.comparison.experiment import trained_models
from pairrl.train.config import TrainConfig
from pairrl.train.task_family import resolve_recipe

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "toy_cpu.yaml"


def _finished_seed(source: Path, missing: str | None) -> None:
    """An ablation seed's folder as the main job leaves it: its config and every model."""
    cfg = load_config(CONFIG, TrainConfig, ["recipe.options.baselines=[pointrl,grpo@4,grpo]"])
    run = source / "seed3"
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps(cfg.model_dump()))
    models = trained_models(cfg, resolve_recipe(cfg.recipe).options, run)
    assert sorted(models) == ["grpo", "grpo@4", "pairrl", "pointrl", "warm_start"]
    assert models["grpo@4"] == run / "baselines" / "grpo-g4" / "final"
    for name, folder in models.items():
        if name != missing:
            folder.mkdir(parents=True)
            (folder / "config.json").write_text("{}")


def test_a_missing_model_is_named_before_anything_runs(
    load_benchmark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ablation = load_benchmark("toy_ablation.py")
    _finished_seed(tmp_path / "source", missing="grpo@4")
    with pytest.raises(SystemExit, match=r"seed 3: no trained model in .*grpo-g4/final"):
        ablation.evaluate_seed(tmp_path / "source", tmp_path / "out", 3)
    assert not (tmp_path / "out").exists()


def test_a_child_evaluating_one_seed_writes_no_tables(
    load_benchmark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --jobs N runs each seed in a child with --no-report; only the parent writes the tables
    # (children writing them too raced each other on ablation.md)
    ablation = load_benchmark("toy_ablation.py")
    metrics = {"solution_pass_rate": 0.5, "judge_balanced_accuracy": 0.6}
    metrics |= {"best_of_k": {"random": 0.5, "majority": 0.5, "swiss": 0.7, "oracle": 1.0}}
    metrics |= {"shared_pool": {"swiss": 0.7, "random": 0.5}}
    out = tmp_path / "out"
    (out / "seed3").mkdir(parents=True)
    summary = {"models": {"pairrl": metrics}, "verification_gain": {}, "wall_s": {"eval": 2.0}}
    (out / "seed3" / "summary.json").write_text(json.dumps(summary))  # evaluated: read back
    argv = ["toy_ablation.py", "--evaluate-from", str(tmp_path / "src"), "--out", str(out)]
    monkeypatch.setattr("sys.argv", [*argv, "--seeds", "3", "--no-report"])
    assert ablation.main() == 0
    assert not (out / "ablation.md").exists() and not (out / "ablation.json").exists()
    monkeypatch.setattr("sys.argv", [*argv, "--seeds", "3"])
    assert ablation.main() == 0
    assert "| solution pass rate | 50.0 |" in (out / "ablation.md").read_text()


def test_the_children_of_jobs_n_are_told_to_write_no_tables(
    load_benchmark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ablation = load_benchmark("toy_ablation.py")
    children: list[list[str]] = []

    def run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
        children.append(cmd)
        seed = cmd[cmd.index("--seeds") + 1]
        (tmp_path / "out" / f"seed{seed}").mkdir(parents=True)
        (tmp_path / "out" / f"seed{seed}" / "summary.json").write_text('{"models": {}}')
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(ablation.subprocess, "run", run)
    done = ablation.evaluate_seeds(tmp_path / "src", tmp_path / "out", [3, 4], 2, {})
    assert sorted(done) == [3, 4]
    assert len(children) == 2 and all("--no-report" in cmd for cmd in children)
