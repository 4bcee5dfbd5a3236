"""``configs/eval_smollm2_cpu.yaml``, every comparison of the benchmark on the real model,
wired end to end: here with the tiny local model standing in for the real-model job's
SmolLM2 (which takes that job's 40 minutes to train), on two of the recipe's held-out
tasks, on the HF engine. Random weights never write rating tags, so the judge reads its
ratings from log-probabilities with the floor off (as ``configs/eval_tiny_cpu.yaml`` does);
the numbers are the plumbing's, not a result."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pairrl.config import load_config
from pairrl.eval.config import EvalConfig
from pairrl.train.config import TrainConfig

CONFIG = "configs/eval_smollm2_cpu.yaml"


def test_real_model_config_asks_for_every_comparison(repo_root: Path) -> None:
    cfg = load_config(repo_root / CONFIG, EvalConfig)
    assert cfg.candidates.source == "model" and cfg.recipe is not None
    assert {"pointwise_rating", "pointwise_ab", "pointwise_think", "swiss_2n"} <= set(cfg.selectors)
    assert cfg.rsa.enabled and cfg.thinking.enabled
    # the job's own held-out split, so the benchmark never sees a training template
    train = load_config(repo_root / "configs" / "smollm2_cpu.yaml", TrainConfig)
    for option in ("split_seed", "heldout_share"):
        assert cfg.recipe.options[option] == train.recipe.options[option]


def test_real_model_config_runs_every_comparison_on_the_tiny_model(
    eval_cli: Callable[..., tuple[int, str]], repo_root: Path, tiny_model_dir: Path, tmp_path: Path
) -> None:
    code, output = eval_cli(
        [
            str(repo_root / CONFIG),
            "--no-progress",
            *("--set", f"candidates.model={tiny_model_dir}"),
            *("--set", f"judge.model={tiny_model_dir}"),
            *("--set", "candidates.engine=hf", "--set", "judge.engine=hf"),
            *("--set", "judge.readout=forced", "--set", "judge.min_rating_mass=0"),
            *("--set", "tasks.limit=2", "--set", "bootstrap=100"),
            *("--set", f"out_dir={tmp_path / 'run'}"),
        ]
    )
    assert code == 0, output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    cfg = load_config(repo_root / CONFIG, EvalConfig)
    assert set(cfg.selectors) | {"rsa", "rsa+swiss_2n"} <= set(summary["selectors"])
    assert summary["num_tasks"] == 2
    assert [r["round"] for r in summary["rsa"]["per_round"]] == [0, 1, 2]
    assert summary["thinking"]["thought"]["generation"][1] == 8  # 2 tasks x k = 4
    assert summary["difficulty"]
    for heading in ("## Accuracy by difficulty", "## Recursive self-aggregation", "## Thinking"):
        assert heading in output
    assert "held-out tasks of pairrl.recipes.simple_functions" in output
