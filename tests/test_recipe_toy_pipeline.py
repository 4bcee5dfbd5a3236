"""The main job end to end, shortened: warm start, PairRL and its GRPO baseline from that
warm start, every model through the selection benchmark, summary, table and plot; run as
two processes side by side or as one, the same numbers; and ``pairrl eval`` on a saved
benchmark config reproduces the main job's numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "configs" / "toy_cpu.yaml"

# A few seconds of everything: a very small model, 3 SFT steps, 2 RL steps per mode,
# 4 held-out problems with k = 4.
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
MODELS = ("warm_start", "grpo", "pairrl")
METRICS = ("solution_pass_rate", "judge_balanced_accuracy", "best_of_k", "shared_pool")


def _check_summary(summary: dict, run: Path) -> None:
    assert list(summary["models"]) == list(MODELS)
    for name, model in summary["models"].items():
        assert set(METRICS) <= set(model), name
        assert set(model["best_of_k"]) == {"random", "majority", "swiss", "oracle"}
        assert set(model["shared_pool"]) == {"random", "swiss", "oracle"}
        value = model["judge_balanced_accuracy"]
        assert value is None or 0.0 <= value <= 1.0
        for key, v in (*model["best_of_k"].items(), *model["shared_pool"].items()):
            assert v is None or 0.0 <= v <= 1.0, (name, key)  # None: measured on no task
        # a pick can only be right when some candidate is
        swiss = model["best_of_k"]["swiss"]
        assert swiss is None or swiss <= model["best_of_k"]["oracle"]
    # every judge faced the same pool: the warm start's candidates (random and oracle agree)
    shared = {
        (m["shared_pool"]["random"], m["shared_pool"]["oracle"]) for m in summary["models"].values()
    }
    assert len(shared) == 1
    assert summary["heldout"]["problems"] == 4 and summary["heldout"]["k"] == 4
    assert set(summary["wall_s"]) >= {"warm_start", "train_pairrl", "train_grpo", "eval", "total"}
    assert summary["wall_s"]["total"] >= summary["wall_s"]["eval"]
    assert {"pairrl", "grpo"} <= set(summary["curves"])
    assert summary["curves"]["pairrl"]["step"], "no training step was logged"
    assert "judge_balanced_accuracy_vs_grpo" in summary["verification_gain"]
    assert {"python", "torch", "transformers", "trl"} <= set(summary["libraries"])
    for name in MODELS:
        for suffix in ("", "-shared"):
            assert (run / "eval" / f"{name}{suffix}" / "summary.json").is_file()
    assert (run / "demo.png").stat().st_size > 1000
    assert "Pairwise verification added over GRPO" in (run / "table.txt").read_text()


def _records(eval_run: Path) -> list[dict]:
    """A benchmark run's records and candidates, less what differs between two identical
    runs: wall times, and cache keys (they name the judge by its folder)."""
    rows = []
    for name in ("candidates.jsonl", "records.jsonl"):
        path = eval_run / name
        for line in path.read_text().splitlines() if path.is_file() else []:
            row = json.loads(line)
            row.pop("key", None)
            rows.append(_without_wall_times(row))
    assert rows, eval_run
    return rows


def _without_wall_times(value: object) -> object:
    """``value`` with every ``wall_s`` removed, at any depth (a candidate's label and a
    record's cost each time their work)."""
    if isinstance(value, dict):
        return {k: _without_wall_times(v) for k, v in value.items() if k != "wall_s"}
    if isinstance(value, list):
        return [_without_wall_times(v) for v in value]
    return value


def _half_of(cache: Path, into: Path) -> None:
    """Every other entry of each of a benchmark cache's stage files, copied into ``into``."""
    into.mkdir(parents=True)
    for stage in cache.glob("*.jsonl"):
        (into / stage.name).write_text("".join(stage.read_text().splitlines(True)[::2]))


def _main_job(tmp_path: Path, out: Path, threads: int, *extra: str) -> dict:
    pairrl = str(Path(sys.executable).with_name("pairrl"))
    cmd = [
        pairrl,
        "experiment",
        str(CONFIG),
        "--out",
        str(out),
        f"--set=model.path={tmp_path / 'm'}",
    ]
    cmd += [f"--set={o}" for o in (*SHORT, *extra)]
    # the threads asked for, and no GPU (side by side is for CPU runs)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    env["CUDA_VISIBLE_DEVICES"] = ""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "warm start" in proc.stdout and "PairRL" in proc.stdout  # the table was printed
    assert "'loss'" not in proc.stdout  # TRL's step dicts go to the log, not the console
    return json.loads((out / "summary.json").read_text())


@pytest.mark.slow
def test_main_job_end_to_end_and_eval_reproduces_it(tmp_path: Path) -> None:
    pairrl = str(Path(sys.executable).with_name("pairrl"))
    out = tmp_path / "run"
    # two threads: the baselines and the warm start's evaluation run in a second process
    summary = _main_job(tmp_path, out, 2)
    assert summary["side_by_side"] is True
    _check_summary(summary, out)
    # the final model's pool run went to the second process, beside its own run: its own cache
    pool_cfg = json.loads((out / "eval" / "pairrl-shared" / "config.json").read_text())
    assert Path(pool_cfg["cache_dir"]).name == "pairrl-shared"
    assert (out / "train_log.jsonl").read_text().strip()
    # one after the other in one process: the same numbers, model by model
    alone = _main_job(tmp_path, tmp_path / "alone", 2, "recipe.options.side_by_side=false")
    assert alone["side_by_side"] is False
    assert alone["models"] == summary["models"]
    # (a model this short writes mostly nothing right, so compare what it wrote: every
    # sampled candidate and judgement, and the baseline's weights)
    for name in MODELS:
        for run in (name, f"{name}-shared"):
            assert _records(out / "eval" / run) == _records(tmp_path / "alone" / "eval" / run)
    # the baseline's weights, and the run's own (each trained on the same planned thread
    # count in both runs, so bit for bit on any CPU)
    for weights in ("baselines/grpo/final/model.safetensors", "final/model.safetensors"):
        assert (out / weights).read_bytes() == (tmp_path / "alone" / weights).read_bytes()
    # Each benchmark run the main job made is a plain `pairrl eval` config: rerunning it
    # with half its model's cache (the rest recomputed in other batches than the first
    # time; a pool run's without its model's own run before it) writes the same records.
    for run in ("pairrl", "pairrl-shared"):
        config = json.loads((out / "eval" / run / "config.json").read_text())
        config["out_dir"] = str(tmp_path / "again" / run)
        config["cache_dir"] = str(tmp_path / "again" / run / "cache")
        _half_of(Path(json.loads((out / "eval" / run / "config.json").read_text())["cache_dir"]),
                 Path(config["cache_dir"]))  # fmt: skip
        again_cfg = tmp_path / f"again-{run}.json"
        again_cfg.write_text(json.dumps(config))
        rerun = subprocess.run(
            [pairrl, "eval", str(again_cfg), "--no-progress"],
            capture_output=True, text=True, timeout=600, cwd=tmp_path,
        )  # fmt: skip
        assert rerun.returncode in (0, 1), rerun.stderr[-3000:]  # 1: the gate's FAIL
        assert _records(tmp_path / "again" / run) == _records(out / "eval" / run), run
        first = json.loads((out / "eval" / run / "summary.json").read_text())
        second = json.loads((tmp_path / "again" / run / "summary.json").read_text())
        assert _without_wall_times(second["selectors"]) == _without_wall_times(first["selectors"])
