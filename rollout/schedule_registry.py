"""The selection schedules by name: the one table that ``pairrl select``, the benchmark's
config and tournament selectors (``pairrl.eval``) and benchmarks/selection.py read.

``SCHEDULES``: a schedule's name is the one its results carry
(``TournamentResult.schedule``); every schedule has the common signature of
``pairrl.rollout.tournament``: ``run(num_candidates, judge_pairs, budget, *, seed=0, ...)``.

``TOURNAMENT_SELECTORS``: a tournament selector is a schedule at a budget proportional to
the field, named as the benchmark's configs and ``summary.json`` name it: ``swiss_2n`` is
Swiss with 2N comparisons, ``rated_halving_2n`` rated halving (the project's default
schedule) with 2N, ``halving_2n`` sequential halving with 2N, ``all_pairs`` every pair once.

>>> list(SCHEDULES)
['swiss', 'sequential_halving', 'rated_halving', 'ladder', 'random_pairing', 'all_pairs']
>>> halving = get_tournament_selector("rated_halving_2n")
>>> halving.schedule, halving.budget(16)
('rated_halving', 32)
>>> get_tournament_selector("all_pairs").budget(16) is None
True
>>> get_schedule("elo")
Traceback (most recent call last):
...
ValueError: unknown schedule 'elo'; allowed: swiss, sequential_halving, rated_halving, ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from pairrl.rollout.ledger import JudgePairs
from pairrl.rollout.tournament import (
    TournamentResult,
    all_pairs_tournament,
    ladder_tournament,
    random_pairing_tournament,
    rated_halving_tournament,
    sequential_halving_tournament,
    swiss_tournament,
)

__all__ = [
    "SCHEDULES",
    "TOURNAMENT_SELECTORS",
    "Tournament",
    "TournamentSelector",
    "get_schedule",
    "get_tournament_selector",
]

Tournament = Callable[..., TournamentResult]
"""``run(num_candidates, judge_pairs, budget, *, seed=0, ...) -> TournamentResult``."""

SCHEDULES: dict[str, Tournament] = {
    "swiss": swiss_tournament,
    "sequential_halving": sequential_halving_tournament,
    "rated_halving": rated_halving_tournament,
    "ladder": ladder_tournament,
    "random_pairing": random_pairing_tournament,
    "all_pairs": all_pairs_tournament,
}
"""Every schedule by name (the project's default is ``rated_halving``)."""


_T = TypeVar("_T")


def _lookup(kind: str, table: Mapping[str, _T], name: str) -> _T:
    try:
        return table[name]
    except KeyError:
        allowed = ", ".join(table)
        raise ValueError(f"unknown {kind} {name!r}; allowed: {allowed}") from None


def get_schedule(name: str) -> Tournament:
    """The schedule called ``name``; a ValueError naming the allowed names otherwise."""
    return _lookup("schedule", SCHEDULES, name)


@dataclass(frozen=True)
class TournamentSelector:
    """A schedule (a key of ``SCHEDULES``) at ``budget_per_candidate`` x N comparisons;
    ``None``: every pair once (the schedule is run with ``budget=None``)."""

    name: str
    schedule: str
    budget_per_candidate: int | None

    def __post_init__(self) -> None:
        get_schedule(self.schedule)  # a selector names a schedule that exists
        if self.budget_per_candidate is not None and self.budget_per_candidate < 1:
            raise ValueError(f"{self.name}: budget_per_candidate must be >= 1 or None")

    def budget(self, num_candidates: int) -> int | None:
        """Comparisons allowed for a field of ``num_candidates`` (None: every pair)."""
        if self.budget_per_candidate is None:
            return None
        return self.budget_per_candidate * num_candidates

    def run(self, num_candidates: int, judge_pairs: JudgePairs, *, seed: int) -> TournamentResult:
        """The schedule on ``num_candidates`` candidates at this selector's budget."""
        tournament = SCHEDULES[self.schedule]
        return tournament(num_candidates, judge_pairs, self.budget(num_candidates), seed=seed)


TOURNAMENT_SELECTORS: dict[str, TournamentSelector] = {
    s.name: s
    for s in (
        TournamentSelector("all_pairs", "all_pairs", None),
        TournamentSelector("swiss_1n", "swiss", 1),
        TournamentSelector("swiss_2n", "swiss", 2),
        TournamentSelector("swiss_3n", "swiss", 3),
        TournamentSelector("random_pairing_2n", "random_pairing", 2),
        TournamentSelector("rated_halving_2n", "rated_halving", 2),
        TournamentSelector("halving_2n", "sequential_halving", 2),
        TournamentSelector("ladder_2n", "ladder", 2),
    )
}
"""The benchmark's tournament selectors by name, in the order its reports list them."""


def get_tournament_selector(name: str) -> TournamentSelector:
    """The tournament selector called ``name``; a ValueError naming the allowed names
    otherwise."""
    return _lookup("tournament selector", TOURNAMENT_SELECTORS, name)
