"""The benchmark's sampling stage: tasks with the same prompt share one sampling, whatever
the batches, so their candidates never depend on how the work was split."""

from __future__ import annotations

from pathlib import Path

import pytest

from pairrl.eval.config import EvalConfig
from pairrl.eval.sampling import sample_candidates
from pairrl.rewards import AssertTests, Task
from pairrl.rollout.samplers import Completion


class _Recording:
    """A sampler that writes which prompts it was asked for, and how many times."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def generate(self, prompts, n, sampling):  # type: ignore[no-untyped-def]
        self.asked += [p[-1]["content"] if isinstance(p, list) else p for p in prompts]
        return [
            [Completion(text=f"```python\ndef f():\n    return {len(self.asked)}\n```",
                        token_ids=[1], logprobs=[0.0], finish_reason="stop")
             for _ in range(n)]
            for _ in prompts
        ]  # fmt: skip


def _task(task_id: str, prompt: str) -> Task:
    return Task(task_id, prompt, "f", AssertTests(("assert f() == 1",)))


@pytest.mark.parametrize("batch_size", [1, 2, 4])
def test_tasks_with_one_prompt_are_sampled_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_size: int
) -> None:
    import pairrl.eval.models

    sampler = _Recording()
    monkeypatch.setattr(pairrl.eval.models, "make_sampler", lambda *a, **k: sampler)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    cfg = EvalConfig.model_validate(
        {
            "out_dir": str(tmp_path / "out"),
            "tasks": {"path": str(tmp_path / "unread.jsonl")},  # the tasks are given below
            "candidates": {"source": "model", "model": str(model), "k": 2,
                           "batch_size": batch_size, "seed": 0},
            "selectors": ["random"],
        }
    )  # fmt: skip
    tasks = [_task("a", "add one"), _task("b", "add two"), _task("c", "add one")]
    candidates, issues = sample_candidates(cfg, tasks, tmp_path / "cache", "compute", _quiet)
    assert not issues
    assert len(sampler.asked) == 2  # "add one" once, "add two" once
    code = {(c.task_id, c.candidate_id): c.code for c in candidates}
    assert code[("a", "0")] == code[("c", "0")] and code[("a", "1")] == code[("c", "1")]


def _quiet(_stage: str, _total: int):  # type: ignore[no-untyped-def]
    return lambda _n: None
