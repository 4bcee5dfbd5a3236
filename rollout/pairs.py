"""Training pairs for pairwise verification, from one problem's labelled candidates.

Rules (docs/design.md, "Facts from the paper"):

* only correct-incorrect and correct-correct pairs; incorrect-incorrect pairs are never
  built (they teach the "empty solution loop");
* A/B order is a fair coin per pair, so position carries no label information;
* distinct pairs first: no unordered pair repeats until every eligible pair has been
  used once (then the eligible pairs are reused in a fresh random order, and so on);
* the same labels, ``num_pairs`` and ``seed`` always give the same plan;
* when no pair is eligible (fewer than two candidates, or no correct one) the plan is
  empty and says so (``no_eligible_pair`` with a ``reason``): those verification slots
  carry no gradient and the caller counts them.

``mixed_only`` narrows the rule to correct-incorrect pairs: every judgement then holds one
candidate of each label, so the verification reward cannot be earned by rating everything
correct. A problem whose group is all correct has no eligible pair. It is for policies
that solve most problems, where the paper's pairs are mostly correct-correct and a judge
drifts towards "always correct" (docs/experiments.md); the paper's rule is the default.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

PairKind = Literal["correct_incorrect", "correct_correct"]


@dataclass(frozen=True)
class PairPlan:
    """Pairs to judge, in (A, B) order, with their kinds; empty with a reason if none."""

    pairs: list[tuple[int, int]] = field(default_factory=list)
    kinds: list[PairKind] = field(default_factory=list)
    no_eligible_pair: bool = False
    reason: str | None = None
    num_eligible: int = 0

    @property
    def num_repeated(self) -> int:
        """Pairs beyond the distinct eligible ones (reuse forced by ``num_pairs``)."""
        return max(0, len(self.pairs) - self.num_eligible)


def eligible_pairs(
    labels: Sequence[bool], mixed_only: bool = False
) -> list[tuple[int, int, PairKind]]:
    """Every unordered pair (i < j) with at least one correct candidate, and its kind.

    >>> eligible_pairs([True, True, False])
    [(0, 1, 'correct_correct'), (0, 2, 'correct_incorrect'), (1, 2, 'correct_incorrect')]
    >>> eligible_pairs([True, True, False], mixed_only=True)
    [(0, 2, 'correct_incorrect'), (1, 2, 'correct_incorrect')]
    """
    out: list[tuple[int, int, PairKind]] = []
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            if labels[i] and labels[j]:
                if not mixed_only:
                    out.append((i, j, "correct_correct"))
            elif labels[i] or labels[j]:
                out.append((i, j, "correct_incorrect"))
    return out


def build_training_pairs(
    labels: Sequence[bool], num_pairs: int, seed: int, *, mixed_only: bool = False
) -> PairPlan:
    """Choose ``num_pairs`` verification pairs for one problem (rules in the module doc).

    ``labels[i]`` is whether candidate i passed all hidden tests. Pairs are drawn
    uniformly from the eligible ones without replacement, cycling through fresh shuffles
    when ``num_pairs`` exceeds their number.

    Example (hand-worked): labels [True, False, False] give the eligible pairs (0, 1) and
    (0, 2), both correct_incorrect; with num_pairs 3 the plan holds both once, then one of
    them again (``num_repeated`` 1). With ``mixed_only``, labels [True, True] have no
    eligible pair.
    """
    if not isinstance(num_pairs, int) or num_pairs < 0:
        raise ValueError(f"num_pairs must be an integer >= 0, got {num_pairs!r}")
    labels = [bool(y) for y in labels]
    pool = eligible_pairs(labels, mixed_only)
    if not pool:
        if len(labels) < 2:
            reason = f"{len(labels)} candidate(s): a pair needs two"
        elif mixed_only and any(labels):
            reason = f"all {len(labels)} candidates correct: no correct-incorrect pair"
        else:
            reason = f"no correct candidate among {len(labels)}: only incorrect-incorrect pairs"
        return PairPlan(no_eligible_pair=True, reason=reason)
    rng = random.Random(seed)
    pairs: list[tuple[int, int]] = []
    kinds: list[PairKind] = []
    while len(pairs) < num_pairs:
        order = list(pool)
        rng.shuffle(order)
        for i, j, kind in order[: num_pairs - len(pairs)]:
            pairs.append((i, j) if rng.random() < 0.5 else (j, i))
            kinds.append(kind)
    return PairPlan(pairs=pairs, kinds=kinds, num_eligible=len(pool))
