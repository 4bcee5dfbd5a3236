"""Thinking's gain for generation beside its gain for verification: with
``thinking.enabled`` the benchmark samples the same k candidates per task again with the
judge's thinking budget, labels them, and reports pass@1 and pass@k with and without
thinking beside the balanced accuracy of ``pointwise_ab`` (no thinking) and
``pointwise_think`` (the same question after the same budget).

The scripted model below, worked by hand:
- without thinking it writes, per task, one right program then one wrong one (k = 2):
  pass@1 1/2, pass@k 1;
- with thinking it drafts a right program in its thinking, then answers with the right
  program for ``inc`` and with no code for ``dbl``: a program is read from the answer
  only, so pass@1 1/2 (inc 2/2, dbl 0/2) and pass@k 1/2 (reading the whole text would find
  the draft and give 1 and 1);
- its yes/no judge says "yes" (P(A) 0.6) to every candidate without thinking: balanced
  accuracy 1/2; after thinking it says yes exactly to the right programs: 1.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError
from scripted_eval import model_run_files, use_as_sampler

from pairrl.config import load_config
from pairrl.eval.config import EvalConfig
from pairrl.eval.runner import run_eval
from pairrl.eval.thinking import thinking_report_lines, thinking_summary
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
RIGHT = "def inc(x):\n    return x + 1\n\ndef dbl(x):\n    return 2 * x\n"
WRONG = "def inc(x):\n    return 0\n\ndef dbl(x):\n    return 0\n"


def _done(text: str, finish: str = "stop") -> Completion:
    return Completion(text=text, token_ids=[1], logprobs=[0.0], finish_reason=finish)


class ThinkingModel:
    """Generator and yes/no judge in one, scripted as the module docstring says; counts its
    calls by kind. ``fail_thinking_generation`` fails every thinking call of generation (a
    dead server's answer), the judge's thinking still works."""

    def __init__(self, fail_thinking_generation: bool = False, at_once: bool = False) -> None:
        self.calls: Counter[str] = Counter()
        self.fail = fail_thinking_generation
        self.at_once = at_once  # answers in the thinking phase and stops: never thinks

    def generate(self, prompts: list[Any], n: int, sampling: Any) -> list[list[Completion]]:
        return [[self._reply(p, sampling) for _ in range(n)] for p in prompts]

    def _reply(self, prompt: list[dict[str, str]], sampling: Any) -> Completion:
        user = prompt[0]["content"]
        judging = "Is this solution correct" in user
        if "</think>" in (sampling.stop or ()):  # the thinking phase, cut by its budget
            self.calls["judge thinking" if judging else "thinking"] += 1
            if self.fail and not judging:
                return Completion.failed(SamplerError("transport", "connection refused"))
            if self.at_once:
                return _done("A" if judging else f"```python\n{RIGHT}```")
            return _done(f"Draft:\n```python\n{RIGHT}```", finish="length")
        if prompt[-1]["role"] == "assistant":  # the answer after thinking
            self.calls["answer"] += 1
            return _done(f"```python\n{RIGHT}```" if "x + 1" in user else "I give up.")
        self.calls["generation"] += 1
        return _done(f"```python\n{RIGHT if self.calls['generation'] % 2 else WRONG}```")

    def next_token_logprobs(self, prompts: list[Any], candidates: list[str]) -> list[Any]:
        out = []
        for prompt in prompts:
            self.calls["judge read"] += 1
            thought = prompt[-1]["role"] == "assistant"
            right = "return x + 1" in prompt[0]["content"]
            p_yes = (0.9 if right else 0.1) if thought else 0.6
            scores = {"A": math.log(p_yes), "B": math.log(1 - p_yes)}
            out.append({c: v for c, v in scores.items() if c in candidates})
        return out


@pytest.fixture()
def scripted(monkeypatch: pytest.MonkeyPatch) -> Callable[..., ThinkingModel]:
    def install(fail_thinking_generation: bool = False, at_once: bool = False) -> ThinkingModel:
        return use_as_sampler(monkeypatch, ThinkingModel(fail_thinking_generation, at_once))

    return install


def _config(tmp_path: Path, **overrides: Any) -> EvalConfig:
    tasks, model = model_run_files(tmp_path, TASKS)
    return EvalConfig.model_validate(
        {
            "out_dir": str(tmp_path / "run"),
            "tasks": {"path": str(tasks)},
            "candidates": {"source": "model", "model": str(model), "k": 2},
            "judge": {"readout": "sampled", "thinking_budget": 8},
            "selectors": ["random", "pointwise_ab", "pointwise_think", "oracle"],
            "executor": {"workers": 1},
            "bootstrap": 100,
            "thinking": {"enabled": True},
            **overrides,
        }
    )


def test_thinking_gain_for_generation_and_verification(
    tmp_path: Path, scripted: Callable[..., ThinkingModel]
) -> None:
    model = scripted()
    outcome = run_eval(_config(tmp_path), show_progress=False)
    summary = outcome.summary
    assert summary["verdict"] == "PASS", summary["gate"]["reasons"]
    think = summary["thinking"]
    assert think["budget_tokens"] == 8
    gen = think["generation"]
    assert (gen["without"]["pass@1"], gen["without"]["pass@k"]) == (0.5, 1.0)
    assert (gen["with"]["pass@1"], gen["with"]["pass@k"]) == (0.5, 0.5)
    assert think["judge_balanced_accuracy"] == {"without": 0.5, "with": 1.0}
    assert think["gain"] == {"pass@1": 0.0, "pass@k": -0.5, "judge_balanced_accuracy": 0.5}
    # every thinking sample and judgement ran to its budget: all thought
    assert think["thought"] == {"generation": [4, 4], "judge": [4, 4]}
    # two tasks x k = 2 thinking candidates, each one thinking call and one answer call
    assert model.calls["thinking"] == 4 and model.calls["answer"] == 4
    # each sampled token counted: one per phase (the forced </think> is not sampled)
    assert gen["with"]["generation_tokens"]["output"] == 8
    stages = summary["gate"]["stages"]
    assert stages["thinking samples"]["expected"] == 4
    assert stages["thinking labels"]["expected"] == 4
    report = outcome.report_text
    assert "## Thinking: generation against verification" in report
    assert "| generation pass@1 | 50.0 | 50.0 | +0.0 |" in report
    assert "| generation pass@k | 100.0 | 50.0 | -50.0 |" in report
    assert "| judge balanced accuracy | 50.0 | 100.0 | +50.0 |" in report
    assert "4 of 4 (100%) of the samples, 4 of 4 (100%) of the judgements" in report
    records = [json.loads(x) for x in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    thinking = [r for r in records if r["kind"] == "thinking_candidate"]
    assert [r["label"]["passed"] for r in thinking] == [True, True, False, False]
    assert thinking[2]["code"] == ""  # dbl's answer holds no code; its draft is not read

    # A rerun finds the thinking candidates (and everything else) in the cache.
    again = scripted()
    rerun = run_eval(_config(tmp_path), show_progress=False)
    assert again.calls["thinking"] == again.calls["answer"] == again.calls["generation"] == 0
    assert rerun.summary["thinking"] == think


def test_a_model_that_answers_at_once_never_thinks(
    tmp_path: Path, scripted: Callable[..., ThinkingModel]
) -> None:
    """A model that answers (and stops) within the budget closed no thinking: its answer is
    the whole text, the judge reads A/B where the answer starts, and the summary says that
    nothing thought."""
    model = scripted(at_once=True)
    think = run_eval(_config(tmp_path), show_progress=False).summary["thinking"]
    assert think["thought"] == {"generation": [0, 4], "judge": [0, 4]}
    assert think["generation"]["with"]["pass@1"] == 1.0  # the right program, read whole
    assert think["judge_balanced_accuracy"] == {"without": 0.5, "with": 0.5}
    assert model.calls["answer"] == 0


def test_judge_tokens_count_the_text_when_the_latest_request_only_scored(
    tmp_path: Path,
) -> None:
    """An engine that reports usage per prompt reports the latest request; after an A/B
    answer written in the thinking phase that is the scoring request (no completion): the
    written text is counted with the tokenizer instead of a 0."""
    from pairrl.eval.cache import StageCache
    from pairrl.eval.judge_cache import CachedJudge
    from pairrl.rollout.prompt_kit import paper_prompt_kit
    from pairrl.rollout.samplers import SamplingParams

    class ScoredLast:
        def measured_usage(self, prompt: Any) -> Any:
            return SimpleNamespace(prompt_tokens=10, completion_tokens=0)

        def tokenizer(self, text: str, add_special_tokens: bool = False) -> dict[str, Any]:
            return {"input_ids": text.split()}

    judge = CachedJudge(
        identity="scripted",
        sampler=ScoredLast(),
        kit=paper_prompt_kit(),
        sampling=SamplingParams(temperature=0.0, max_tokens=8, seed=0),
        readout="sampled",
        think_tokens=8,
        pair_cache=StageCache(tmp_path, "pairwise"),
        point_cache=StageCache(tmp_path, "pointwise"),
    )
    assert judge._tokens([], "A because") == (10, 2)
    assert judge._tokens([], "") == (10, 0)  # read from log-probabilities alone: wrote none


def test_failed_thinking_samples_fail_the_gate(
    tmp_path: Path, scripted: Callable[..., ThinkingModel]
) -> None:
    scripted(fail_thinking_generation=True)
    outcome = run_eval(_config(tmp_path), show_progress=False)
    summary = outcome.summary
    assert summary["verdict"] == "FAIL"
    assert summary["gate"]["stages"]["thinking samples"]["failed"] == 4
    assert any(r.startswith("thinking samples: 4 of 4 failed") for r in summary["gate"]["reasons"])


def test_pool_source_cannot_compare_thinking() -> None:
    with pytest.raises(ValidationError, match=r"thinking\.enabled samples candidates"):
        EvalConfig.model_validate(
            {
                "tasks": {"path": "tasks.jsonl"},
                "candidates": {"source": "pool", "pool": "pool.jsonl"},
                "selectors": ["pointwise_ab", "pointwise_think"],
                "thinking": {"enabled": True},
            }
        )


def test_thinking_needs_both_yes_no_judges() -> None:
    with pytest.raises(ValidationError, match=r"add pointwise_think to selectors"):
        EvalConfig.model_validate(
            {
                "tasks": {"path": "tasks.jsonl"},
                "candidates": {"source": "model", "model": "m"},
                "selectors": ["random", "pointwise_ab"],
                "thinking": {"enabled": True},
            }
        )


def test_summary_gains_and_report_by_hand() -> None:
    without = {"pass@1": 0.25, "pass@k": 0.5, "unmeasured_labels": 0}
    with_ = {"pass@1": 0.375, "pass@k": None, "unmeasured_labels": 1}
    for side, tokens in ((without, (100, 40, 0)), (with_, (100, None, 2))):
        side["generation_tokens"] = dict(
            zip(("prompt", "output", "uncounted"), tokens, strict=True)
        )
    with_.update(thought=1, sampled=3)
    quality = {"pointwise_ab": {"balanced_accuracy": 0.5}}  # pointwise_think had no verdict
    records = [
        {"kind": "pointwise", "selector": "pointwise_think", "failure": None, "thought": False},
        {"kind": "pointwise", "selector": "pointwise_think", "failure": "truncated"},
        {"kind": "pointwise", "selector": "pointwise_ab", "failure": None},
    ]
    summary = thinking_summary(16, without, with_, quality, records)
    assert summary["gain"] == {"pass@1": 0.125, "pass@k": None, "judge_balanced_accuracy": None}
    assert summary["thought"] == {"generation": [1, 3], "judge": [0, 1]}
    lines = thinking_report_lines({"thinking": summary})
    assert "| generation pass@1 | 25.0 | 37.5 | +12.5 |" in lines
    assert "| generation pass@k | 50.0 | n/a | n/a |" in lines
    assert "| judge balanced accuracy | 50.0 | n/a | n/a |" in lines
    assert "| generation tokens (prompt/output) | 100/40 | 100/n/a + 2 not counted | |" in lines
    assert "1 of 3 (33%) of the samples, 0 of 1 (0%) of the judgements" in " ".join(lines)
    assert thinking_report_lines({}) == []


def test_tiny_config_turns_thinking_on(repo_root: Path) -> None:
    cfg = load_config(repo_root / "configs" / "eval_tiny_cpu.yaml", EvalConfig)
    assert cfg.thinking.enabled
