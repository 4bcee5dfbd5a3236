"""The toy demo end to end, shortened: build, warm start, (train,) evaluate, summarise, plot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pairrl.config import load_config
from pairrl.train.config import TrainConfig

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "configs" / "toy_cpu.yaml"

# A few seconds of everything: a very small model, 3 SFT steps, 2 RL steps, 4 held-out
# problems with k = 4.
SHORT = [
    "model.tiny.hidden_size=32",
    "model.tiny.num_layers=1",
    "model.tiny.intermediate_size=64",
    "recipe.options.warm_start_examples=96",
    "recipe.options.eval_problems=4",
    "recipe.options.eval_k=4",
    "recipe.options.eval_batch_size=64",
    "warm_start.steps=3",
    "warm_start.batch_size=8",
    "batch.problems_per_step=2",
    "batch.max_steps=2",
    "logging.wandb=disabled",
    "checkpoint.every_steps=2",
]

HEADLINE = ("solution_pass_rate", "judge_balanced_accuracy")
PICKERS = ("random", "swiss", "majority", "oracle")


def _check_summary(summary: dict) -> None:
    for stage in ("warm_start", "final"):
        metrics = summary[stage]
        for key in HEADLINE:
            value = metrics[key]
            assert value is None or 0.0 <= value <= 1.0, (stage, key, value)
        assert metrics["solution_pass_rate"] is not None
        for name in PICKERS:
            assert 0.0 <= metrics["best_of_k"][name] <= 1.0
        # a pick can only be right when some candidate is
        assert metrics["best_of_k"]["swiss"] <= metrics["best_of_k"]["oracle"]
        assert metrics["best_of_k"]["random"] <= metrics["best_of_k"]["oracle"]
        # the 2k budget per problem is spent, unless failing comparisons stopped a
        # tournament early (a candidate whose judgements keep failing is given up)
        bok = metrics["best_of_k"]
        assert bok["swiss_comparisons"] <= 4 * 2 * 4  # problems x 2k
        assert bok["swiss_comparisons"] == 4 * 2 * 4 or bok["swiss_failed_comparisons"] > 0
        assert metrics["num_problems"] == 4 and metrics["k"] == 4
    # the final judge picks among the warm start's candidates: same pool, so random and
    # oracle equal the warm start's own, and Swiss spends the same 2k budget per problem
    on_warm_pool = summary["final"]["best_of_k_warm_pool"]
    for name in ("random", "oracle"):
        assert on_warm_pool[name] == summary["warm_start"]["best_of_k"][name]
    assert on_warm_pool["swiss_comparisons"] <= 4 * 2 * 4
    assert summary["warm_start"]["best_of_k_warm_pool"] == summary["warm_start"]["best_of_k"]
    assert set(summary["goal"]) >= {"met", "solution_pass_rate_gain", "swiss_minus_random"}
    assert set(summary["curves"]) >= {"step", *HEADLINE}


def test_prepare_and_finish_without_rl(tmp_path: Path) -> None:
    """The recipe's stages through the trainer's public interface (RL step skipped: the
    final model is the warm start, so the held-out pass rates must agree exactly)."""
    pytest.importorskip("trl")
    from accelerate import PartialState

    from pairrl.recipes.toy_addition.tasks import split_problems
    from pairrl.train.policy import prepare_policy
    from pairrl.train.recipe import FinishedRun, resolve_recipe

    cfg = load_config(CONFIG, TrainConfig, [*SHORT, f"model.path={tmp_path / 'model'}"])
    loaded = resolve_recipe(cfg.recipe)
    recipe, options = loaded.recipe, loaded.options
    tasks = recipe.training_tasks(options)
    run_dir = tmp_path / "run"
    policy = prepare_policy(
        cfg,
        run_dir,
        PartialState(),
        lambda: recipe.warm_start_conversations(options, cfg.seed, tasks),
    )
    assert Path(policy.path, "config.json").is_file()
    assert policy.warm_start_report["steps"] == 3
    _, heldout = split_problems(options.heldout_problems, options.split_seed)
    assert {t.task_id for t in tasks}.isdisjoint(p.to_task().task_id for p in heldout)
    run_dir.mkdir(parents=True, exist_ok=True)
    finished = FinishedRun(
        run_dir=run_dir,
        warm_start_dir=policy.warm_start_dir,
        final_dir=policy.warm_start_dir,
        log_history=[],
        wall_s={"warm_start": 0.0, "train": 0.0},
    )
    recipe.after_training(cfg, options, finished)
    summary = json.loads((run_dir / "summary.json").read_text())
    _check_summary(summary)
    assert summary["warm_start"]["solution_pass_rate"] == summary["final"]["solution_pass_rate"]
    on_disk = json.loads((run_dir / "summary.json").read_text())
    assert on_disk["goal"] == summary["goal"]
    assert (run_dir / "demo.png").stat().st_size > 1000


@pytest.mark.slow
def test_pairrl_train_runs_the_short_demo(tmp_path: Path) -> None:
    """`pairrl train configs/toy_cpu.yaml` with the recipe plugged into the trainer."""
    out = tmp_path / "run"
    cmd = [
        str(Path(sys.executable).with_name("pairrl")),
        "train",
        str(CONFIG),
        "--out",
        str(out),
        f"--set=model.path={tmp_path / 'model'}",
        *(f"--set={o}" for o in SHORT),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    _check_summary(summary)
    assert summary["curves"]["step"], "no training step was logged"
    assert (out / "demo.png").is_file()
