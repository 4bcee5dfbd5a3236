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
    "demo.model.hidden_size=32",
    "demo.model.num_layers=1",
    "demo.model.intermediate_size=64",
    "demo.warm_start_examples=96",
    "demo.eval_problems=4",
    "demo.eval_k=4",
    "demo.eval_batch_size=64",
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
        assert metrics["best_of_k"]["swiss_comparisons"] == 4 * 2 * 4  # problems x 2k
        assert metrics["num_problems"] == 4 and metrics["k"] == 4
    # the final judge picks among the warm start's candidates: same pool, so random and
    # oracle equal the warm start's own, and Swiss spends the same 2k budget per problem
    on_warm_pool = summary["final"]["best_of_k_warm_pool"]
    for name in ("random", "oracle"):
        assert on_warm_pool[name] == summary["warm_start"]["best_of_k"][name]
    assert on_warm_pool["swiss_comparisons"] == 4 * 2 * 4
    assert summary["warm_start"]["best_of_k_warm_pool"] == summary["warm_start"]["best_of_k"]
    assert set(summary["goal"]) >= {"met", "solution_pass_rate_gain", "swiss_minus_random"}
    assert set(summary["curves"]) >= {"step", *HEADLINE}


def test_prepare_and_finish_without_rl(tmp_path: Path) -> None:
    """The demo's own stages on a config validated by the trainer's schema (RL step skipped:
    the final model is the warm start, so the held-out pass rates must agree exactly)."""
    pytest.importorskip("trl")
    import yaml

    from pairrl.recipes.toy_addition.config import DemoConfig, DemoModelConfig
    from pairrl.recipes.toy_addition.pipeline import finish_demo, prepare_demo

    data = yaml.safe_load(CONFIG.read_text())
    demo = DemoConfig.model_validate(data.pop("demo"))
    demo = demo.model_copy(
        update={
            "model": DemoModelConfig(hidden_size=32, num_layers=1, intermediate_size=64),
            "eval_problems": 4,
            "eval_k": 4,
            "warm_start_examples": 96,
            "eval_batch_size": 64,
        }
    )
    data["data"]["source"] = "tiny_code"  # validated without the demo wiring; tasks come from demo
    cfg_path = tmp_path / "cfg.yaml"
    cfg_path.write_text(yaml.safe_dump(data))
    overrides = [o for o in SHORT if not o.startswith("demo.")] + [
        f"model.path={tmp_path / 'model'}"
    ]
    cfg = load_config(cfg_path, TrainConfig, overrides)
    run_dir = tmp_path / "run"
    prepared = prepare_demo(cfg, run_dir, demo=demo)
    assert Path(prepared.policy_path, "config.json").is_file()
    assert prepared.warm_start_report["steps"] == 3
    assert {t.task_id for t in prepared.tasks}.isdisjoint(
        p.to_task().task_id for p in prepared.heldout
    )
    summary = finish_demo(
        cfg,
        run_dir,
        warm_dir=prepared.policy_path,
        final_dir=prepared.policy_path,
        log_history=[],
        timings={"warm_start": 0.0, "train": 0.0},
        demo=demo,
    )
    _check_summary(summary)
    assert summary["warm_start"]["solution_pass_rate"] == summary["final"]["solution_pass_rate"]
    on_disk = json.loads((run_dir / "summary.json").read_text())
    assert on_disk["goal"] == summary["goal"]
    assert (run_dir / "demo.png").stat().st_size > 1000


@pytest.mark.slow
def test_pairrl_train_runs_the_short_demo(tmp_path: Path) -> None:
    """`pairrl train configs/toy_cpu.yaml` with the demo wired into the trainer."""
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
