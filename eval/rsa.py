"""Recursive self-aggregation (RSA) as a candidate source of the benchmark: its config,
the seeded subsets, the per-round metrics and its report lines.

RSA starts from a task's k candidates (round 0, the population of N = k). In each of
``rsa.rounds`` rounds, each of the N population slots shows the generator the task and a
seeded subset of ``rsa.subset_size`` candidates of the previous round, and samples one new
candidate from it (``PromptKit.aggregation``). Every round is labelled by execution.
Two rows join the selector table: ``rsa`` (a random candidate of the last round, scored by
its exact expectation as ``random`` is) and ``rsa+<selector>`` (the configured tournament,
``swiss_2n`` by default, on the last round with the run's judge). The stage itself is
``pairrl.eval.rsa_stage``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from pairrl.config import PairrlModel
from pairrl.eval.cache import content_key
from pairrl.eval.selectors import Selection
from pairrl.rollout.schedule_registry import TOURNAMENT_SELECTORS

__all__ = [
    "RSA_ROW",
    "RsaConfig",
    "check_rsa",
    "generation_tokens_cell",
    "percent_cell",
    "round_metrics",
    "rsa_random_selection",
    "rsa_report_lines",
    "rsa_rows",
    "subset_for",
]

RSA_ROW = "rsa"
TournamentName = Literal[tuple(TOURNAMENT_SELECTORS)]  # type: ignore[valid-type]


class RsaConfig(PairrlModel):
    """Recursive self-aggregation: the generator rewrites its own candidates for some
    rounds; reported per round (pass@1, pass@k, distinct programs) and as the rows ``rsa``
    and ``rsa+<selector>``. Needs a generator (candidates.source model or endpoint)."""

    enabled: bool = Field(False, description="Run RSA on every task's k candidates")
    rounds: int = Field(
        2, ge=1, le=16, description="Aggregation rounds after round 0 (the run's candidates)"
    )
    subset_size: int = Field(
        2,
        ge=2,
        le=64,
        description="Candidates of the previous round shown per new candidate (at most k)",
    )
    seed: int = Field(0, ge=0, description="Seed of the subsets and of the rounds' sampling")
    selector: TournamentName = Field(
        "swiss_2n",
        description="Tournament run on the last round with the run's judge (row rsa+NAME)",
    )


def check_rsa(rsa: RsaConfig, source: str, k: int) -> None:
    """ValueError when RSA is on but cannot run: a pool has no generator to aggregate with,
    and a subset cannot hold more candidates than the population (k)."""
    if not rsa.enabled:
        return
    if source == "pool":
        raise ValueError(
            "rsa.enabled needs a generator to write new candidates, and candidates.source="
            "'pool' has none: sample from candidates.model or candidates.endpoint, or set "
            "rsa.enabled=false"
        )
    if rsa.subset_size > k:
        raise ValueError(
            f"rsa.subset_size={rsa.subset_size} exceeds the population candidates.k={k}: "
            "a subset is drawn from one round's k candidates"
        )


def rsa_rows(rsa: RsaConfig) -> tuple[str, str]:
    """The two selector rows RSA adds: the random pick and the tournament's."""
    return RSA_ROW, f"{RSA_ROW}+{rsa.selector}"


def subset_for(
    task_id: str, seed: int, round_: int, slot: int, usable: Sequence[int], size: int
) -> list[int]:
    """The previous round's candidates (indices among ``usable``) that slot ``slot`` of
    round ``round_`` aggregates: a seeded draw without replacement, the same in any run."""
    rng = random.Random(int(content_key("rsa subset", task_id, seed, round_, slot)[:16], 16))
    return rng.sample(list(usable), min(size, len(usable)))


def round_metrics(
    round_: int,
    labels: Mapping[str, Sequence[dict[str, Any] | None]],
    programs: Mapping[str, Sequence[str]],
    unmeasured: Mapping[str, Sequence[bool]],
) -> dict[str, Any]:
    """One round over the tasks: pass@1 (mean label), pass@k (any correct) and distinct
    programs per task (a math candidate's program is its text), means over tasks; an
    unmeasured label counts as not passed and is counted. None when there is no task."""
    tids = list(labels)
    passed = {t: [bool(lab and lab["passed"]) for lab in labels[t]] for t in tids}
    return {
        "round": round_,
        "tasks": len(tids),
        "pass@1": _mean([sum(p) / len(p) for p in passed.values() if p]),
        "pass@k": _mean([float(any(p)) for p in passed.values() if p]),
        "distinct_programs": _mean([float(len(set(programs[t]))) for t in tids]),
        "unmeasured_labels": sum(sum(unmeasured[t]) for t in tids),
    }


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def rsa_random_selection(
    task_id: str, labels: Sequence[bool], reasons: Sequence[str | None]
) -> Selection:
    """A random candidate of the last round, scored by its exact expectation (the round's
    pass@1 for the task, as ``random``); failed when a label could not be measured."""
    if not labels:
        return Selection(RSA_ROW, task_id, None, 0.0, failure="no candidates")
    sel = Selection(RSA_ROW, task_id, None, sum(labels) / len(labels))
    missing = [r for r in reasons if r is not None]
    if missing:
        sel.failure = (
            f"{len(missing)} of {len(reasons)} last-round candidates have no label "
            f"(e.g. {missing[0]})"
        )
    return sel


def rsa_report_lines(summary: Mapping[str, Any]) -> list[str]:
    """The report's RSA section: its settings and one table row per round. Its generation
    tokens are RSA's own, beside the run's; the full-cost table prices the run's k
    candidates only."""
    rsa = summary.get("rsa")
    if not rsa:
        return []
    lines = [
        "",
        "## Recursive self-aggregation",
        "",
        f"Population {rsa['population']} per task, each new candidate written from "
        f"{rsa['subset_size']} candidates of the previous round, {rsa['rounds']} rounds "
        f"(round 0: the run's candidates). Rows `{rsa['rows'][0]}` (a random last-round "
        f"candidate) and `{rsa['rows'][1]}` (the tournament on the last round) are in the "
        "selector table.",
        "",
        "| round | pass@1 % | pass@k % | distinct programs per task | unmeasured labels "
        "| generation tokens (prompt/output) |",
        "|---|---|---|---|---|---|",
    ]
    for row in rsa["per_round"]:
        lines.append(
            f"| {row['round']} | {percent_cell(row['pass@1'])} | {percent_cell(row['pass@k'])} | "
            f"{_num(row['distinct_programs'])} | {row['unmeasured_labels']} | "
            f"{generation_tokens_cell(row['generation_tokens'])} |"
        )
    return lines


def generation_tokens_cell(tokens: Mapping[str, int | None]) -> str:
    """A table cell: generation tokens as prompt/output, or "not measured"; with the
    candidates whose tokens were not counted."""
    if tokens["prompt"] is None and tokens["output"] is None:
        return "not measured"
    shown = "/".join("n/a" if tokens[k] is None else f"{tokens[k]:,}" for k in ("prompt", "output"))
    return shown + (f" + {tokens['uncounted']} not counted" if tokens["uncounted"] else "")


def percent_cell(value: float | None) -> str:
    """A table cell: a share in percent with one decimal, or n/a."""
    return "n/a" if value is None else f"{100 * value:.1f}"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
