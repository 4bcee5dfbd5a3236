"""PairRL training with vLLM colocated (TRL's colocate mode) on vLLM's CPU build.

`pairrl train configs/tiny_cpu.yaml --set engine.kind=vllm_colocate` for a few steps, as
a user runs it: the trainer builds TRL's in-process engine with pairrl's CPU settings and
syncs the weights through the CPU route (``pairrl.train.vllm_cpu``). After every sync
the run logs vLLM's and transformers' log-probabilities of one fixed conversation
(``vllm/sync_max_abs_logprob_diff``); they must agree while the weights move.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from vllm_support import require_vllm

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
STEPS = 3


def test_pairrl_steps_with_vllm_colocate_keep_engines_in_sync(tmp_path: Path) -> None:
    require_vllm()
    from pairrl.rollout.samplers.vllm import installed_vllm

    if not installed_vllm().cpu:
        pytest.skip("this test runs the CPU build's colocate route; a GPU runs TRL's own")
    run = tmp_path / "run"
    command = [
        str(Path(sys.executable).with_name("pairrl")),
        "train",
        str(REPO / "configs" / "tiny_cpu.yaml"),
        "--out",
        str(run),
        "--set", "engine.kind=vllm_colocate",
        "--set", f"batch.max_steps={STEPS}",
        "--set", "warm_start.steps=60",  # enough for some solutions to pass: a real gradient
        "--set", f"model.path={tmp_path / 'model'}",
        "--set", "logging.wandb=disabled",
    ]  # fmt: skip
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=900, cwd=tmp_path,
        env=dict(os.environ, OMP_NUM_THREADS="1"),
    )  # fmt: skip
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    steps = [json.loads(line) for line in (run / "metrics.jsonl").open()]
    steps = [s for s in steps if "vllm/sync_max_abs_logprob_diff" in s]
    assert len(steps) == STEPS, steps
    diffs = [s["vllm/sync_max_abs_logprob_diff"] for s in steps]
    assert max(diffs) < 1e-3, diffs
    probes = [s["vllm/sync_probe_mean_logprob"] for s in steps]
    assert len(set(probes)) == STEPS, f"the weights did not move between syncs: {probes}"
    passed = [s.get("pairrl/solution_pass_rate") for s in steps]
    assert all(p is not None for p in passed), steps
