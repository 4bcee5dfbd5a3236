"""The code reward: 1/0 from running hidden tests (math answers: ``pairrl.rewards.answers``)."""

from __future__ import annotations

from dataclasses import dataclass

from pairrl.rewards.code_extract import extract_code
from pairrl.rewards.executor import Executor
from pairrl.rewards.results import ExecJob, ExecResult
from pairrl.rewards.tasks import Task


@dataclass(frozen=True)
class CorrectnessOutcome:
    """The 1/0 reward of one completion and the verdict behind it (``no_code`` included)."""

    reward: float
    result: ExecResult


def correctness_reward(
    executor: Executor, task: Task, completions: list[str], candidate_prefix: str = "c"
) -> list[CorrectnessOutcome]:
    """1.0 for a completion whose last code block passes every hidden test, else 0.0.

    A completion with no fenced code block is judged ``no_code`` (reward 0) without
    touching the sandbox; ``sandbox_error`` also earns 0 and is visible in ``result``.
    """
    jobs = [
        ExecJob(task, extract_code(text), f"{candidate_prefix}{index}")
        for index, text in enumerate(completions)
    ]
    return [CorrectnessOutcome(1.0 if r.passed else 0.0, r) for r in executor.run(jobs)]
