"""``pairrl select --method pointwise_rating``: the paper's pointwise baseline on one problem.

Each candidate is shown once to the judge with the pointwise 1-10 prompt
(``pairrl.rollout.prompts.pointwise_messages``), all in one batched judge call, and its
rating is read as ``--readout`` says (``pairrl.rollout.judges.rating_verdicts``: the
parsed ``<rating>`` tag, its expectation over the rating tokens, or the forced read-out).
The highest rating wins, ties broken as the tournaments break them
(``pairrl.rollout.judges.pointwise_ranking``). A failed rating (no tag, truncated output,
rating mass below the floor, sampler error) is reported with its reason and never counted
as a rating; with no rating at all there is no winner.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import typer

POINTWISE_METHOD = "pointwise_rating"
METHODS: tuple[str, ...] = ("pairwise", POINTWISE_METHOD)
"""``pairrl select --method``: a pairwise tournament (``--schedule``) or the pointwise
1-10 rating."""


@dataclass(frozen=True)
class JudgeSettings:
    """How ``pairrl select`` asks its judge and reads the ratings, either method."""

    readout: str  # sampled, expected or forced
    domain: str
    sampling: Any  # SamplingParams
    think_tokens: int | None
    min_rating_mass: float


def check_method(method: str, schedule: str | None, budget: int | None) -> None:
    """``--method``'s value, and the tournament options that the pointwise method rules
    out (usage errors); ``schedule`` is None unless the user gave one."""
    if method not in METHODS:
        raise typer.BadParameter(
            f"{method!r}; allowed: {', '.join(METHODS)}", param_hint="--method"
        )
    if method != POINTWISE_METHOD:
        return
    for name, value in (("--schedule", schedule), ("--budget", budget)):
        if value is not None:
            raise typer.BadParameter(
                f"{name} applies to pairwise tournaments; {POINTWISE_METHOD} rates each "
                "candidate once (N judgements)",
                param_hint=name,
            )


@dataclass(frozen=True)
class PointwiseSelection:
    """One problem's candidates rated once each: ``ratings`` per candidate (None where the
    rating failed, its reason in ``failures``), ``ranking`` best first, ``winner`` None
    only when every rating failed; ``judge_calls`` counts the batched judge calls."""

    ratings: list[float | None]
    ranking: list[int]
    winner: int | None
    judge_calls: int
    failures: list[tuple[int, str]] = field(default_factory=list)

    @property
    def num_rated(self) -> int:
        """Candidates with a rating."""
        return sum(r is not None for r in self.ratings)


def run_pointwise_selection(
    sampler: Any,
    problem: str,
    solutions: Sequence[str],
    settings: JudgeSettings,
) -> PointwiseSelection:
    """Rate every solution (as the judge is shown it) once, in one batch, and pick the
    highest rating (see the module docstring)."""
    from pairrl.rollout.judges import JudgeFailure, pointwise_ranking, rating_verdicts
    from pairrl.rollout.prompts import pointwise_messages

    prompts = [pointwise_messages(problem, s, settings.domain) for s in solutions]  # type: ignore[arg-type]
    verdicts = rating_verdicts(
        sampler,
        prompts,
        settings.readout,
        settings.sampling,
        settings.think_tokens,
        settings.min_rating_mass,
    )
    ratings: list[float | None] = []
    failures: list[tuple[int, str]] = []
    for index, verdict in enumerate(verdicts):
        if isinstance(verdict, JudgeFailure):
            ratings.append(None)
            failures.append((index, verdict.reason))
        else:
            ratings.append(float(verdict.value))
    ranking = pointwise_ranking(ratings)
    winner = None if len(failures) == len(ratings) else ranking[0]
    return PointwiseSelection(ratings, ranking, winner, 1 if prompts else 0, failures)


def failure_counts(reasons: Sequence[str]) -> list[tuple[str, int]]:
    """Failures grouped by reason (retry counts and long tails cut), most frequent first."""
    return Counter(reason.split(" (after ")[0][:160] for reason in reasons).most_common()


def print_pointwise_report(selection: PointwiseSelection, candidate_ids: Sequence[str]) -> None:
    """The ratings table (or, with no rating, the failures by reason), the counts, every
    failure with its reason, and the winner with its rating."""
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    asked, rated = len(selection.ratings), selection.num_rated
    if rated:
        _print_ratings_table(console, selection, candidate_ids)
    console.print(
        f"ratings asked {asked}, rated {rated}, failed {asked - rated}, "
        f"judge calls {selection.judge_calls}"
    )
    for index, reason in selection.failures:
        console.print(f"[red]failure[/] [{index}] {escape(candidate_ids[index])}: {escape(reason)}")
    if selection.winner is None:
        for reason, count in failure_counts([r for _, r in selection.failures]):
            console.print(f"  {count} x {escape(reason)}")
        console.print(
            f"[red]no winner[/]: every rating failed ({asked - rated} of {asked}); "
            "no ranking to show"
        )
        return
    winner = selection.winner
    console.print(
        f"[green]winner[/]: [{winner}] {escape(candidate_ids[winner])}, "
        f"rating {_fmt(selection.ratings[winner])}"
    )


def _fmt(rating: float | None) -> str:
    """A rating as shown: '-' for a failed one; expected ratings keep 3 decimals."""
    if rating is None:
        return "-"
    return str(int(rating)) if rating == int(rating) else f"{rating:.3f}"


def _print_ratings_table(
    console: Any, selection: PointwiseSelection, candidate_ids: Sequence[str]
) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"pairrl select: {POINTWISE_METHOD}")
    for column in ("rank", "candidate", "rating"):
        table.add_column(column)
    for rank, index in enumerate(selection.ranking, start=1):
        rating = selection.ratings[index]
        table.add_row(
            str(rank) if rating is not None else "-",
            escape(f"[{index}] {candidate_ids[index]}"),
            _fmt(rating) if rating is not None else "FAILED",
        )
    console.print(table)


def select_pointwise(
    sampler: Any, problem: str, candidates: Sequence[Any], settings: JudgeSettings
) -> bool:
    """``pairrl select``'s pointwise path: rate ``candidates`` (``select_cli.Candidate``
    rows) as the judge is shown them and print the report; True when there is a winner."""
    from pairrl.rollout.prompts import solution_for_judge

    shown = [solution_for_judge(c.text, settings.domain) for c in candidates]  # type: ignore[arg-type]
    selection = run_pointwise_selection(sampler, problem, shown, settings)
    print_pointwise_report(selection, [c.candidate_id for c in candidates])
    return selection.winner is not None
