"""Math through training's rollout and the benchmark, on hand-written problems, with no
sandbox: the rollout labels solutions by their final answers through its ``label``
contract; the benchmark labels a math pool, votes by majority and skips judging where
every answer agrees; both tiny-model configs run on CPU."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pairrl.config import parse_config
from pairrl.rewards import TaskLabeller
from pairrl.rewards.answers import answer_task
from pairrl.rollout.pairrl_rollout import PairRLRollout
from pairrl.rollout.prompt_kit import math_prompt_kit
from pairrl.rollout.prompts import PAIRWISE_MATH
from pairrl.train.config import TrainConfig
from pairrl.train.row_temperatures import sample_temperatures

REPO = Path(__file__).resolve().parents[1]
PAIRRL = shutil.which("pairrl", path=str(Path(sys.executable).parent)) or "pairrl"
EOS = 0
TASKS = [
    answer_task("m/half", "What is half of one?", "\\frac{1}{2}"),
    answer_task("m/seven", "What is 3 + 4?", "7"),
]
SOLUTIONS = {  # per problem, in sampling order; labels by math-verify
    "m/half": ["so \\boxed{0.5}", "\\boxed{2}", "one half", "\\boxed{\\frac{1}{2}}"],
    "m/seven": ["\\boxed{8}", "\\boxed{6}", "\\boxed{9}", "\\boxed{5}"],
}


class _Tokens:
    """One id per distinct text: a prompt is one token, a completion one token + EOS."""

    def __init__(self) -> None:
        self.texts = ["<eos>"]

    def encode(self, text: str) -> int:
        if text not in self.texts:
            self.texts.append(text)
        return self.texts.index(text)

    def tokenize(self, messages: list[dict[str, str]]) -> list[int]:
        return [self.encode(messages[-1]["content"])]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.texts[i] for i in ids if i != EOS)


class _Generator:
    def __init__(self, tokens: _Tokens, task_of: dict[int, str]) -> None:
        self.tokens, self.task_of = tokens, task_of

    def generate(self, prompt_ids: list[list[int]], phase: str, num_generations: int) -> Any:
        if phase == "solution":
            texts = [SOLUTIONS[self.task_of[ids[0]]][k % 4] for k, ids in enumerate(prompt_ids)]
        else:
            texts = ["<rating_A>10</rating_A>\n<rating_B>1</rating_B>"] * len(prompt_ids)
        return [[self.tokens.encode(t), EOS] for t in texts], None


def test_rollout_labels_math_solutions_by_final_answer() -> None:
    cfg = parse_config(
        {"kind": "train", "model": {"path": "unused"}, "data": {"source": "tiny_code"}},
        TrainConfig,
    )
    kit, tokens = math_prompt_kit(), _Tokens()
    prompt_ids = {tokens.tokenize(kit.generation(t))[0]: t.task_id for t in TASKS}
    labeller = TaskLabeller(None)  # no executor at all: a code job would raise
    rollout = PairRLRollout(
        cfg.rollout,
        cfg.reward,
        {kit.generation(t)[-1]["content"]: t for t in TASKS},
        label=labeller.run,
        prompts=kit,
        tokenize=tokens.tokenize,
        decode=tokens.decode,
        eos_token_id=EOS,
        generator_factory=lambda _trainer: _Generator(tokens, prompt_ids),
        temperatures=sample_temperatures(0.5, 0.5),
    )
    out = rollout([kit.generation(t) for t in TASKS for _ in range(8)], trainer=None)
    records = out["pairrl_record"]
    # 0.5 and \frac{1}{2} pass, 2 is wrong, "one half" has no \boxed{} answer.
    assert [r.reward for r in records[:4]] == [1.0, 0.0, 0.0, 1.0]
    assert [r.exec_status for r in records[:4]] == ["pass", "wrong", "no_answer", "pass"]
    # m/seven: none right
    assert [r.sample_type for r in records[8:]] == ["solution"] * 4 + ["no_pair"] * 4
    # The judge's prompt is the math one and shows whole completions; A=10, B=1 earns
    # 1 for (right, wrong), 0.5 for (right, right), 0 for (wrong, right).
    expected = {(True, False): 1.0, (True, True): 0.5, (False, True): 0.0}
    for i, record in zip(range(4, 8), records[4:8], strict=True):
        assert record.sample_type == "judgement" and record.reward == expected[record.labels]
        shown = tokens.texts[out["prompt_ids"][i][0]]
        assert shown.startswith(PAIRWISE_MATH.split("{")[0])
        assert all(SOLUTIONS["m/half"][j] in shown for j in record.judged)
    assert not labeller.started


def _write_math_pool(tmp_path: Path) -> tuple[Path, Path]:
    tasks = tmp_path / "math.jsonl"
    tasks.write_text(
        "".join(
            json.dumps({"task_id": t.task_id, "problem": t.prompt, "answer": t.tests.gold}) + "\n"
            for t in TASKS
        )
    )
    pool = tmp_path / "pool.jsonl"
    texts = {
        # right in two forms (votes together), wrong twice with 3
        "m/half": ["\\boxed{3}", "\\boxed{1/2}", "\\boxed{3}", "\\boxed{0.5}", "\\boxed{\\frac12}"],
        # every candidate gives 7: one answer, nothing to judge
        "m/seven": ["\\boxed{7}", "\\boxed{7.0}", "so \\boxed{7}", "\\boxed{7}", "\\boxed{7}"],
    }
    pool.write_text(
        "".join(
            json.dumps({"task_id": tid, "candidate_id": str(j), "text": text}) + "\n"
            for tid, row in texts.items()
            for j, text in enumerate(row)
        )
    )
    return tasks, pool


def test_benchmark_labels_a_math_pool_without_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pairrl.rewards
    from pairrl.eval.config import EvalConfig
    from pairrl.eval.runner import run_eval

    def no_sandbox(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("math candidates must not start the executor")

    monkeypatch.setattr(pairrl.rewards, "Executor", no_sandbox)
    tasks, pool = _write_math_pool(tmp_path)
    cfg = EvalConfig.model_validate(
        {
            "out_dir": str(tmp_path / "run"),
            "tasks": {"path": str(tasks)},
            "candidates": {"pool": str(pool), "k": 5},
            "selectors": ["random", "first", "majority", "agreement", "oracle"],
            "bootstrap": 100,
        }
    )
    summary = run_eval(cfg, show_progress=False).summary
    assert summary["verdict"] == "PASS", summary["gate"]["reasons"]
    rows = summary["selectors"]
    # m/half: 3 of 5 right; m/seven: 5 of 5. pass@1 = (0.6 + 1) / 2.
    assert summary["pass@1"]["value"] == pytest.approx(0.8)
    assert rows["first"]["accuracy"]["value"] == 0.5  # m/half's first answer is 3
    # majority: {1/2, 0.5, \frac12} has three votes against two for 3.
    assert rows["majority"]["accuracy"]["value"] == 1.0
    assert rows["agreement"]["accuracy"]["value"] == 1.0  # the outputs are the answers
    labels = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").open()]
    statuses = [r["label"]["status"] for r in labels if r["kind"] == "candidate"]
    assert statuses == ["wrong", "pass", "wrong", "pass", "pass"] + ["pass"] * 5


def _run(args: list[str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline"}
    return subprocess.run(
        [PAIRRL, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO
    )


@pytest.mark.slow
def test_math_configs_run_on_the_tiny_model(tiny_model_dir: Path, tmp_path: Path) -> None:
    """configs/math_tiny_cpu.yaml (shortened) trains; configs/eval_math_tiny_cpu.yaml
    evaluates its final model with every listed selector and passes the gate."""
    run = tmp_path / "math_tiny"
    overrides = {
        "model.path": tiny_model_dir,
        "model.build_tiny": "false",
        "warm_start.steps": 100,
        "batch.max_steps": 2,
        "checkpoint.every_steps": 2,
    }
    sets = [arg for key, value in overrides.items() for arg in ("--set", f"{key}={value}")]
    proc = _run(["train", "configs/math_tiny_cpu.yaml", "--out", str(run), *sets])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    summary = json.loads((run / "run.json").read_text())
    assert summary["global_step"] == 2 and summary["problems"] == 8
    statuses = {
        k
        for r in map(json.loads, (run / "metrics.jsonl").open())
        for k in r
        if k.startswith("exec/")
    }
    assert statuses and statuses <= {"exec/pass", "exec/wrong", "exec/no_answer"}
    out = tmp_path / "eval"
    model = str(run / "final")
    args = ["configs/eval_math_tiny_cpu.yaml", "--strict", "--no-progress", "--model", model]
    proc = _run(["eval", *args, "--out", str(out), "--set", "candidates.k=3"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((out / "summary.json").read_text())
    assert result["verdict"] == "PASS" and result["num_tasks"] == 8
    assert {"majority", "swiss_2n", "swiss_2n+sv"} <= set(result["selectors"])
    assert result["selectors"]["swiss_2n"]["cost"]["judge_tokens"] > 0
    assert (out / "cost.png").stat().st_size > 0


def test_math_candidates_given_as_code_are_labelled_by_that_text(tmp_path: Path) -> None:
    """A pool that puts a math completion under `code` is labelled per candidate (the
    label cache is keyed by the completion, never by an empty text)."""
    from pairrl.eval.cache import StageCache
    from pairrl.eval.candidates import Candidate
    from pairrl.eval.labels import label_candidates
    from pairrl.rewards import label_jobs

    class MathOnly:
        def run(self, jobs: list[Any]) -> list[Any]:
            return label_jobs(jobs, None)

    cands = [Candidate("m/half", "0", "\\boxed{0.5}"), Candidate("m/half", "1", "\\boxed{3}")]
    cache = StageCache(tmp_path, "labels")
    labels = label_candidates({"m/half": TASKS[0]}, cands, MathOnly(), cache, 3.0)
    assert [labels[("m/half", i)]["status"] for i in "01"] == ["pass", "wrong"]
