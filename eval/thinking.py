"""Thinking's gain for generation beside its gain for verification: the config, the
summary and the report lines.

With ``thinking.enabled`` a run samples a second set of k candidates per task from the same
generator, prompts and sampling settings, each with a thinking budget of
``judge.thinking_budget`` tokens (the model writes at most that many tokens of thinking,
``</think>`` is forced when the budget runs out, then it answers:
``pairrl.rollout.prompts.generate_with_thinking_budget``). They are labelled by execution
and reported as pass@1 and pass@k beside the run's own candidates (no thinking), next to
the judge's balanced accuracy on the same yes/no question without thinking
(``pointwise_ab``) and after the same budget of thinking (``pointwise_think``). A thinking
candidate's program is read from its answer, the text after ``</think>``. The thinking
candidates are only measured, never selected among. The stage itself is
``pairrl.eval.thinking_stage``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from pairrl.config import PairrlModel
from pairrl.eval.rsa import generation_tokens_cell, percent_cell

__all__ = [
    "THINKING_JUDGES",
    "ThinkingConfig",
    "check_thinking",
    "thinking_report_lines",
    "thinking_summary",
]

THINKING_JUDGES: tuple[str, str] = ("pointwise_ab", "pointwise_think")
"""The judge without thinking and the judge after thinking: the same yes/no question."""


class ThinkingConfig(PairrlModel):
    """Thinking's gain for generation beside its gain for verification. Needs a generator
    (candidates.source model or endpoint) and the selectors pointwise_ab and pointwise_think
    (the judge without and with the same budget)."""

    enabled: bool = Field(
        False,
        description="Also sample k candidates per task with a thinking budget of "
        "judge.thinking_budget tokens, label them, and report pass@1 and pass@k with and "
        "without thinking beside the judge's accuracy with and without",
    )


def check_thinking(thinking: ThinkingConfig, source: str, selectors: Sequence[str]) -> None:
    """ValueError when the comparison is on but cannot be made: a pool has no generator,
    and the judge's side needs both pointwise yes/no selectors."""
    if not thinking.enabled:
        return
    if source == "pool":
        raise ValueError(
            "thinking.enabled samples candidates with a thinking budget, and "
            "candidates.source='pool' has no generator: sample from candidates.model or "
            "candidates.endpoint, or set thinking.enabled=false"
        )
    absent = [name for name in THINKING_JUDGES if name not in selectors]
    if absent:
        raise ValueError(
            "thinking.enabled compares the judge without thinking (pointwise_ab) with the "
            f"judge after thinking (pointwise_think): add {' and '.join(absent)} to selectors"
        )


def thinking_summary(
    budget: int,
    without: Mapping[str, Any],
    with_thinking: Mapping[str, Any],
    quality: Mapping[str, Mapping[str, Any]],
    judge_records: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """summary.json's ``thinking``: the generation metrics (pass@1, pass@k, tokens) of the
    run's candidates and of the thinking candidates, the judge's balanced accuracy without
    and with thinking, each gain (with minus without; None where a side is n/a), and how
    many thinking samples and judgements thought (closed thinking, at the budget or
    themselves, before answering): a model that answers at once never uses the budget."""
    judge = {
        side: quality.get(name, {}).get("balanced_accuracy")
        for side, name in zip(("without", "with"), THINKING_JUDGES, strict=True)
    }
    generation = {"without": dict(without), "with": dict(with_thinking)}
    judged = [
        r
        for r in judge_records
        if r.get("kind") == "pointwise" and r.get("selector") == THINKING_JUDGES[1]
        and r.get("failure") is None
    ]  # fmt: skip
    return {
        "budget_tokens": budget,
        "thought": {
            "generation": [with_thinking.get("thought", 0), with_thinking.get("sampled", 0)],
            "judge": [sum(bool(r.get("thought")) for r in judged), len(judged)],
        },
        "generation": generation,
        "judge_balanced_accuracy": judge,
        "gain": {
            "pass@1": _gain(without.get("pass@1"), with_thinking.get("pass@1")),
            "pass@k": _gain(without.get("pass@k"), with_thinking.get("pass@k")),
            "judge_balanced_accuracy": _gain(judge["without"], judge["with"]),
        },
    }


def _gain(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def thinking_report_lines(summary: Mapping[str, Any]) -> list[str]:
    """The report's section on thinking: one table, generation and verification."""
    think = summary.get("thinking")
    if not think:
        return []
    gen, judge, gain = think["generation"], think["judge_balanced_accuracy"], think["gain"]
    return [
        "",
        "## Thinking: generation against verification",
        "",
        f"The same generator, prompts and sampling with a thinking budget of "
        f"{think['budget_tokens']} tokens (then `</think>` is forced and the model answers), "
        "beside the judge's balanced accuracy on the yes/no question without thinking "
        "(`pointwise_ab`) and after the same budget (`pointwise_think`). Percent; gains in "
        "points. Generation tokens count the task prompt once and every sampled token of "
        "both phases.",
        "",
        "| | without thinking | with thinking | gain |",
        "|---|---|---|---|",
        _row("generation pass@1", gen["without"]["pass@1"], gen["with"]["pass@1"], gain["pass@1"]),
        _row("generation pass@k", gen["without"]["pass@k"], gen["with"]["pass@k"], gain["pass@k"]),
        _row(
            "judge balanced accuracy",
            judge["without"],
            judge["with"],
            gain["judge_balanced_accuracy"],
        ),
        f"| generation tokens (prompt/output) | {_tokens(gen['without'])} "
        f"| {_tokens(gen['with'])} | |",
        f"| unmeasured labels | {gen['without']['unmeasured_labels']} "
        f"| {gen['with']['unmeasured_labels']} | |",
        "",
        f"Thought before answering (closed thinking, at the budget or itself): "
        f"{_share(think['thought']['generation'])} of the samples, "
        f"{_share(think['thought']['judge'])} of the judgements. A model that answers at "
        "once never uses the budget: its two sides differ only by sampling.",
    ]


def _share(counts: Sequence[int]) -> str:
    done, of = counts
    return f"{done} of {of}" + ("" if not of else f" ({100 * done / of:.0f}%)")


def _row(name: str, without: float | None, with_: float | None, gain: float | None) -> str:
    shown_gain = "n/a" if gain is None else f"{100 * gain:+.1f}"
    return f"| {name} | {percent_cell(without)} | {percent_cell(with_)} | {shown_gain} |"


def _tokens(metrics: Mapping[str, Any]) -> str:
    return generation_tokens_cell(metrics["generation_tokens"])
