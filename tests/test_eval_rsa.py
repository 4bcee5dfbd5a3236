"""Recursive self-aggregation as a candidate source of the benchmark: its rounds are
sampled through the cache (a rerun calls no model, the gate replays them), labelled,
reported per round, and selected on by the rows ``rsa`` and ``rsa+<tournament>``; a pool
cannot run it. The generator and judge here are scripted: round 0 writes distinct wrong
programs, aggregation writes one right one, and the judge rates Solution A higher."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from scripted_eval import model_run_files, use_as_sampler

from pairrl.config import load_config
from pairrl.eval.config import EvalConfig
from pairrl.eval.rsa import subset_for
from pairrl.eval.runner import run_eval
from pairrl.rewards import AssertTests, Task
from pairrl.rollout.prompt_kit import PromptKit, math_prompt_kit, paper_prompt_kit
from pairrl.rollout.samplers import Completion
from pairrl.rollout.samplers.base import SamplerError

TASKS = [
    {
        "task_id": f"t/{name}",
        "prompt": f'def {name}(x):\n    """Return {doc}."""\n',
        "entry_point": name,
        "test": f"def check(candidate):\n    assert candidate(3) == {value}\n",
    }
    for name, doc, value in (("inc", "x + 1", 4), ("dbl", "2 * x", 6))
]
WRONG = "def inc(x):\n    return -{n}\n\ndef dbl(x):\n    return -{n}\n"  # a new one per call
RIGHT = "def inc(x):\n    return x + 1\n\ndef dbl(x):\n    return 2 * x\n"


class ScriptedModel:
    """Generator and judge in one: counts its calls by kind; ``fail_aggregation`` makes
    every aggregation call fail as a dead server's would."""

    def __init__(self, fail_aggregation: bool = False) -> None:
        self.calls = {"generation": 0, "aggregation": 0, "judge": 0}
        self.fail_aggregation = fail_aggregation
        self.aggregation_prompts: list[str] = []

    def generate(self, prompts: list[Any], n: int, sampling: Any) -> list[list[Completion]]:
        return [[self._reply(p[-1]["content"]) for _ in range(n)] for p in prompts]

    def _reply(self, text: str) -> Completion:
        if "expert code reviewer" in text:
            self.calls["judge"] += 1
            reply = "<rating_A>8</rating_A>\n<rating_B>3</rating_B>"
        elif "Below are candidate solutions" in text:
            self.calls["aggregation"] += 1
            self.aggregation_prompts.append(text)
            if self.fail_aggregation:
                return Completion.failed(SamplerError("transport", "connection refused"))
            reply = f"```python\n{RIGHT}```"
        else:
            self.calls["generation"] += 1
            reply = f"```python\n{WRONG.format(n=self.calls['generation'])}```"
        return Completion(text=reply, token_ids=[1], logprobs=[0.0], finish_reason="stop")


@pytest.fixture()
def scripted(monkeypatch: pytest.MonkeyPatch) -> Callable[..., ScriptedModel]:
    def install(fail_aggregation: bool = False) -> ScriptedModel:
        return use_as_sampler(monkeypatch, ScriptedModel(fail_aggregation))

    return install


def _config(tmp_path: Path, **rsa: Any) -> EvalConfig:
    tasks, model = model_run_files(tmp_path, TASKS)
    return EvalConfig.model_validate(
        {
            "out_dir": str(tmp_path / "run"),
            "tasks": {"path": str(tasks)},
            "candidates": {"source": "model", "model": str(model), "k": 3},
            "judge": {"readout": "sampled"},
            "selectors": ["random", "oracle"],
            "executor": {"workers": 1},
            "bootstrap": 100,
            "rsa": {"enabled": True, "rounds": 2, "subset_size": 2, **rsa},
        }
    )


def test_rsa_rounds_rows_and_report(tmp_path: Path, scripted: Callable[..., ScriptedModel]) -> None:
    model = scripted()
    outcome = run_eval(_config(tmp_path), show_progress=False)
    summary = outcome.summary
    assert summary["verdict"] == "PASS", summary["gate"]["reasons"]
    rounds = summary["rsa"]["per_round"]
    assert [r["round"] for r in rounds] == [0, 1, 2]
    assert [r["pass@1"] for r in rounds] == [0.0, 1.0, 1.0]
    assert [r["pass@k"] for r in rounds] == [0.0, 1.0, 1.0]
    assert [r["distinct_programs"] for r in rounds] == [3.0, 1.0, 1.0]  # diversity collapses
    rows = summary["selectors"]
    assert rows["random"]["accuracy"]["value"] == 0.0
    assert rows["rsa"]["accuracy"]["value"] == 1.0
    assert rows["rsa+swiss_2n"]["accuracy"]["value"] == 1.0
    assert rows["rsa+swiss_2n"]["cost"]["judge_calls"] > 0
    # 2 tasks x 3 slots x 2 rounds, each written from a prompt holding 2 candidates
    assert model.calls["aggregation"] == 12
    shown = [p.count("## Candidate ") for p in model.aggregation_prompts]
    assert shown == [2] * 12
    # round 1 shows round 0's wrong programs, round 2 round 1's right ones
    assert all("return -" in p for p in model.aggregation_prompts[:6])
    assert all("return x + 1" in p for p in model.aggregation_prompts[6:])
    stages = summary["gate"]["stages"]
    assert stages["rsa samples"]["expected"] == 12 and stages["rsa labels"]["expected"] == 12
    assert stages["rsa+swiss_2n"]["expected"] == rows["rsa+swiss_2n"]["cost"]["judge_calls"]
    assert model.calls["judge"] > 0
    assert "## Recursive self-aggregation" in outcome.report_text
    # one output token per scripted completion; the scripted model counts no prompt
    assert rounds[2]["generation_tokens"] == {"prompt": None, "output": 6, "uncounted": 0}
    assert "| 2 | 100.0 | 100.0 | 1.00 | 0 | n/a/6 |" in outcome.report_text
    records = [json.loads(x) for x in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    assert sum(r["kind"] == "rsa_candidate" for r in records) == 12

    # A rerun finds every round and judgement in the cache: no model call.
    again = scripted()
    rerun = run_eval(_config(tmp_path), show_progress=False)
    assert again.calls == {"generation": 0, "aggregation": 0, "judge": 0}
    assert rerun.summary["selectors"]["rsa+swiss_2n"] == rows["rsa+swiss_2n"]


def test_failed_aggregation_calls_fail_the_gate(
    tmp_path: Path, scripted: Callable[..., ScriptedModel]
) -> None:
    scripted(fail_aggregation=True)
    summary = run_eval(_config(tmp_path, rounds=1), show_progress=False).summary
    assert summary["verdict"] == "FAIL"
    assert summary["gate"]["stages"]["rsa samples"]["failed"] == 6
    assert any(r.startswith("rsa samples: 6 of 6 failed") for r in summary["gate"]["reasons"])
    assert summary["selectors"]["rsa"]["failed_tasks"] == 2


def test_pool_source_cannot_run_rsa(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"rsa\.enabled needs a generator"):
        EvalConfig.model_validate(
            {
                "tasks": {"path": "tasks.jsonl"},
                "candidates": {"source": "pool", "pool": "pool.jsonl"},
                "rsa": {"enabled": True},
            }
        )


def test_pool_source_with_rsa_is_a_config_error(
    tmp_path: Path, eval_cli: Callable[..., tuple[int, str]]
) -> None:
    args = ["--tasks", "tasks.jsonl", "--pool", "pool.jsonl", "--k", "3"]
    code, out = eval_cli([*args, "--out", str(tmp_path), "--set", "rsa.enabled=true"])
    assert code == 2, out
    assert "rsa.enabled needs a generator" in out and "candidates.model" in out
    assert "Traceback" not in out


def test_subset_larger_than_population_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"rsa\.subset_size=4 exceeds"):
        EvalConfig.model_validate(
            {
                "tasks": {"path": "tasks.jsonl"},
                "candidates": {"source": "model", "model": "m", "k": 3},
                "rsa": {"enabled": True, "subset_size": 4},
            }
        )


def test_subsets_are_seeded_and_distinct_per_slot() -> None:
    first = [subset_for("t", 0, 1, s, [0, 1, 2, 3, 4], 3) for s in range(8)]
    assert first == [subset_for("t", 0, 1, s, [0, 1, 2, 3, 4], 3) for s in range(8)]
    assert all(len(set(sub)) == 3 for sub in first)
    assert len({tuple(sub) for sub in first}) > 1
    assert subset_for("t", 0, 1, 0, [2, 4], 3) in ([2, 4], [4, 2])


def test_tiny_config_turns_rsa_on(repo_root: Path) -> None:
    cfg = load_config(repo_root / "configs" / "eval_tiny_cpu.yaml", EvalConfig)
    assert cfg.rsa.enabled and cfg.rsa.rounds >= 1
    assert cfg.rsa.subset_size <= cfg.candidates.k


def test_rsa_selector_must_be_a_tournament() -> None:
    with pytest.raises(ValidationError, match=r"rsa\.selector"):
        EvalConfig.model_validate(
            {
                "tasks": {"path": "tasks.jsonl"},
                "candidates": {"source": "model", "model": "m", "k": 3},
                "rsa": {"enabled": True, "selector": "random"},
            }
        )


def test_aggregation_prompt_per_kit() -> None:
    task = Task("t", "def f(x):\n    pass\n", "f", AssertTests(("assert f(1) == 1",)))
    code = paper_prompt_kit().aggregation(task, ["first try", "second try"])[0]["content"]
    assert "first try" in code and "second try" in code and "```python" in code
    math = math_prompt_kit().aggregation(task, ["x"])[0]["content"]
    assert "\\boxed{}" in math and "```python" not in math
    # a kit built without an aggregation prompt (a recipe's) gets the code wording
    bare = PromptKit(*[paper_prompt_kit().generation] * 5)
    assert bare.aggregation(task, ["first try", "second try"])[0]["content"] == code


@pytest.mark.slow
def test_tiny_config_reports_rsa_rows_and_thinking(
    eval_cli: Callable[..., tuple[int, str]],
    repo_root: Path,
    shared_data_dir: Path,
    tiny_model_dir: Path,
    tmp_path: Path,
) -> None:
    """``pairrl eval configs/eval_tiny_cpu.yaml`` reports RSA per round and its two rows,
    and thinking's gain for generation beside the judge's."""
    code, output = eval_cli(
        [
            str(repo_root / "configs" / "eval_tiny_cpu.yaml"),
            "--no-progress",
            "--strict",
            "--set",
            f"candidates.model={tiny_model_dir}",
            "--set",
            f"tasks.path={shared_data_dir / 'mbpp_sanitized.json'}",
            "--set",
            f"out_dir={tmp_path / 'run'}",
        ]
    )
    assert code == 0, output
    assert "## Recursive self-aggregation" in output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [r["round"] for r in summary["rsa"]["per_round"]] == [0, 1, 2]
    assert summary["selectors"]["rsa+swiss_2n"]["cost"]["judge_calls"] > 0
    assert summary["gate"]["stages"]["rsa samples"]["expected"] == 18
    assert summary["selectors"]["rsa"]["failed_tasks"] == 0
    assert "## Thinking: generation against verification" in output
    assert summary["gate"]["stages"]["thinking samples"]["expected"] == 9
    assert set(summary["thinking"]["judge_balanced_accuracy"]) == {"without", "with"}
