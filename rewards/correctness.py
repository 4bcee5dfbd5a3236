"""Rewards computed from execution (code) and from answer checking (math)."""

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


@dataclass(frozen=True)
class MathOutcome:
    """Math answer reward and why: ``status`` is pass, wrong or no_answer."""

    reward: float
    status: str


def math_answer_reward(completion: str, gold: str) -> MathOutcome:
    """1.0 when the completion's last ``\\boxed{}`` answer equals ``gold`` (math-verify)."""
    try:
        from math_verify import parse, verify
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ImportError("math answer reward needs math-verify (pip install math-verify)") from exc
    if "\\boxed" not in completion:
        return MathOutcome(0.0, "no_answer")
    answer = parse(completion)
    if not answer:
        return MathOutcome(0.0, "no_answer")
    gold_parsed = parse(gold if "\\boxed" in gold or "$" in gold else f"${gold}$")
    return MathOutcome(1.0, "pass") if verify(gold_parsed, answer) else MathOutcome(0.0, "wrong")
