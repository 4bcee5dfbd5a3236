"""Pairing rules for ``pairrl.rollout.tournament`` (pure functions of plain data).

Every function returns one round: a list of disjoint ``(a, b)`` pairs.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Collection, Sequence
from typing import Protocol

Pair = tuple[int, int]


def _key(a: int, b: int) -> Pair:
    return (a, b) if a < b else (b, a)


def random_matching(nodes: Sequence[int], rng: random.Random) -> list[Pair]:
    """A uniformly random disjoint pairing of ``nodes`` (one sits out when odd)."""
    order = list(nodes)
    rng.shuffle(order)
    return [(order[k], order[k + 1]) for k in range(0, len(order) - 1, 2)]


def round_robin_rounds(num_candidates: int) -> list[list[Pair]]:
    """All N(N-1)/2 pairs as rounds of disjoint pairs (circle method): N-1 rounds for
    even N, N rounds for odd N (one candidate rests per round)."""
    if num_candidates < 2:
        return []
    dummy = -1
    ring = list(range(num_candidates)) + ([dummy] if num_candidates % 2 else [])
    m = len(ring)
    rounds: list[list[Pair]] = []
    for _ in range(m - 1):
        pairs = [(ring[i], ring[m - 1 - i]) for i in range(m // 2)]
        rounds.append([p for p in pairs if dummy not in p])
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return rounds


def swiss_phase1_pairs(
    degree: Sequence[int],
    mu: Sequence[float],
    seen: set[Pair],
    d_min: int,
    rng: random.Random,
    failed: Sequence[int] | None = None,
    skip: Collection[int] = (),
) -> list[Pair]:
    """Phase 1 after the opening random pairing: candidates that still need a comparison,
    lowest degree first (random among equals), each meet the unpaired partner that is
    unseen if possible, then of closest mu, then of lowest degree.

    A candidate needs a comparison while it has fewer than ``d_min`` successful ones and,
    when ``failed`` is given, fewer than ``d_min`` failed attempts: phase 1 gives up on a
    candidate whose comparisons keep failing instead of spending the budget on it.
    Candidates in ``skip`` (given up) are never paired."""
    n = len(degree)
    tiebreak = [rng.random() for _ in range(n)]
    order = sorted(range(n), key=lambda i: (degree[i], tiebreak[i]))
    paired: set[int] = set(skip)
    pairs: list[Pair] = []
    for u in order:
        if degree[u] >= d_min:
            break  # sorted by degree: everyone after u has enough comparisons too
        if u in paired or (failed is not None and failed[u] >= d_min):
            continue
        best = None
        best_key: tuple[bool, float, int, float] | None = None
        for v in range(n):
            if v == u or v in paired:
                continue
            k = (_key(u, v) in seen, abs(mu[u] - mu[v]), degree[v], tiebreak[v])
            if best_key is None or k < best_key:
                best, best_key = v, k
        if best is not None:
            pairs.append((u, best))
            paired.update((u, best))
    return pairs


def swiss_phase1_needs(degree: Sequence[int], failed: Sequence[int], d_min: int) -> bool:
    """Whether some candidate still needs a phase-1 comparison (see swiss_phase1_pairs)."""
    return any(d < d_min and f < d_min for d, f in zip(degree, failed, strict=True))


def swiss_phase2_pairs(
    mu: Sequence[float], seen: set[Pair], window: int, nodes: Sequence[int] | None = None
) -> list[Pair]:
    """Phase 2: walk candidates (``nodes``, default all) in mu order (desc, then index);
    each unpaired one meets, among the next ``window`` unpaired candidates in that order,
    an unseen partner if there is one, closest in mu (earliest in order among equals)."""
    order = sorted(range(len(mu)) if nodes is None else nodes, key=lambda i: (-mu[i], i))
    paired: set[int] = set()
    pairs: list[Pair] = []
    for pos, u in enumerate(order):
        if u in paired:
            continue
        window_nodes: list[int] = []
        for v in order[pos + 1 :]:
            if v not in paired:
                window_nodes.append(v)
                if len(window_nodes) == window:
                    break
        if not window_nodes:
            continue
        best = min(window_nodes, key=lambda v: (_key(u, v) in seen, abs(mu[u] - mu[v])))
        pairs.append((u, best))
        paired.update((u, best))
    return pairs


# ------------------------------------------------------------------- sequential halving
#
# Why a different schedule. The Swiss schedule ranks *everyone*: in phase 2 every
# candidate meets its mu-neighbour, so about half of the budget is spent ordering the
# bottom half of the field, which can never win. Selection only needs the top. That is a
# fixed-budget best-arm identification problem, for which sequential halving (Karnin,
# Koren and Somekh, ICML 2013) is the standard near-optimal answer: split the budget into
# ceil(log2 N) stages, sample the surviving arms evenly within a stage, then drop the
# worse half. Here an "arm pull" is a duel inside the surviving pool, so as the pool
# shrinks, each stage's duels are between ever stronger candidates, and the final
# comparisons (repeated head-to-heads of the last two) are exactly the ones that decide
# the pick. A knock-out tree would also focus on the top, but one bad verdict (20% of the
# time at an 80%-accurate judge) eliminates a correct candidate for good; halving on mu
# keeps every stage's cut based on several verdicts, and nothing is cut on one duel
# unless the budget is that small. Aggregation is the paper's (confidence-weighted mu,
# computed over all of a candidate's comparisons); only the final pick is restricted to
# the surviving pool, because a candidate cut early with one lucky win can hold a high mu
# on little evidence. Cost: more, smaller rounds than Swiss (~log2 N * B/N rounds, e.g.
# 10 batched calls instead of 4 at N = 16, B = 2N), which is latency, not judge tokens.
# Measured in benchmarks/selection.py against Swiss, random pairing and all pairs.


class Ledger(Protocol):
    """What the halving plan needs from a running tournament (pairrl.rollout.ledger.Ledger)."""

    n: int
    attempts: list[int]
    seen: set[Pair]

    def active(self, pool: Sequence[int] | None = None) -> list[int]: ...

    @property
    def remaining(self) -> int: ...

    def schedule_mu(self) -> list[float]: ...

    def schedule_mean_rating(self) -> list[float]: ...

    def play(self, pairs: list[Pair]) -> None: ...


def halving_stage_sizes(num_candidates: int) -> list[int]:
    """Pool size per stage: N, ceil(N/2), ... down to 2 (empty for N < 2)."""
    if num_candidates < 2:
        return []
    sizes = [num_candidates]
    while sizes[-1] > 2:
        sizes.append(math.ceil(sizes[-1] / 2))
    return sizes


def halving_rounds_per_stage(sizes: Sequence[int], budget: int) -> list[int]:
    """Rounds of disjoint pairs per stage: the same number r = B // C in every stage
    (C = comparisons one round of every stage costs), the leftover spent one extra round per
    stage from the last stage backwards, any rest on the final head-to-head. When B < C,
    stages are funded in order, first stage first, so no cut is ever made on no evidence."""
    cost = [s // 2 for s in sizes]
    if not sizes or budget <= 0:
        return [0] * len(sizes)
    per_stage = budget // sum(cost)
    if per_stage == 0:
        rounds, left = [0] * len(sizes), budget
        for s, c in enumerate(cost):
            if left <= 0:
                break
            rounds[s] = 1
            left -= c
        return rounds
    rounds = [per_stage] * len(sizes)
    left = budget - per_stage * sum(cost)
    for s in reversed(range(len(sizes))):
        if left >= cost[s]:
            rounds[s] += 1
            left -= cost[s]
    rounds[-1] += left // cost[-1]
    return rounds


def pool_matching(
    pool: Sequence[int], attempts: Sequence[int], seen: set[Pair], rng: random.Random
) -> list[Pair]:
    """Disjoint pairs inside ``pool``: candidates with the fewest comparisons so far go
    first (so whoever sat out last round plays), each meets an unseen partner if one is
    left, else the least-compared one; remaining ties are broken at random."""
    tiebreak = {i: rng.random() for i in pool}
    free = sorted(pool, key=lambda i: (attempts[i], tiebreak[i]))
    pairs: list[Pair] = []
    while len(free) >= 2:
        u = free.pop(0)
        # ``free`` is in (attempts, tiebreak) order, so the first unseen partner in it is
        # the least-compared unseen one; with none unseen, the least-compared of all.
        k = next((k for k, v in enumerate(free) if _key(u, v) not in seen), 0)
        pairs.append((u, free.pop(k)))
    return pairs


def sequential_halving_plan(
    ledger: Ledger, rng: random.Random, cut_scores: Callable[[], list[float]] | None = None
) -> list[int]:
    """Play the halving schedule on ``ledger`` and return the final pool (winner's pool).
    Each cut keeps the pool's best by ``cut_scores()`` (higher is better) when given, else
    by mu, then mean rating. Given-up candidates (comparisons that keep failing) are not
    paired and are cut first; budget a shrunken pool leaves unspent goes to more rounds
    of the final pool."""
    sizes = halving_stage_sizes(ledger.n)
    rounds = halving_rounds_per_stage(sizes, ledger.remaining)
    pool = list(range(ledger.n))
    for stage, (size, n_rounds) in enumerate(zip(sizes, rounds, strict=True)):
        if ledger.remaining <= 0 or n_rounds == 0:
            break
        if stage > 0:
            if cut_scores is None:
                mu, rating = ledger.schedule_mu(), ledger.schedule_mean_rating()
                keys = [(-m, -r) for m, r in zip(mu, rating, strict=True)]
            else:
                keys = [(-x, 0.0) for x in cut_scores()]
            tiebreak = {i: rng.random() for i in pool}
            live = set(ledger.active(pool))
            pool = sorted(pool, key=lambda i: (i not in live, keys[i], tiebreak[i]))[:size]
        for _ in range(n_rounds):
            live_pool = ledger.active(pool)
            if ledger.remaining <= 0 or len(live_pool) < 2:
                break
            ledger.play(pool_matching(live_pool, ledger.attempts, ledger.seen, rng))
    while ledger.remaining > 0:
        live_pool = ledger.active(pool)
        if len(live_pool) < 2:
            break
        ledger.play(pool_matching(live_pool, ledger.attempts, ledger.seen, rng))
    return pool


# ----------------------------------------------------------------------- evidence ladder
#
# Why another schedule. Sequential halving spends the budget evenly inside shrinking
# pools and cuts on mu, an *average*: after two comparisons a candidate with two wins and
# one with six wins in seven look alike, and the last stages (repeated head-to-heads of
# two finalists) settle a question that is usually already settled. Where it fails (at
# N = 16, B = 2N with an 80%-accurate judge) is almost always a problem with one or two
# correct candidates: a needle that must be found, not a ranking to refine. For one
# needle, the posterior that candidate i is the correct one depends on
#
#     evidence_i = sum over i's comparisons of (y - margin),   y = w (2 v - 1) in [-1, 1]
#
# (the log-likelihood ratio of "i is correct, its opponents are not" against "none of
# them is", under y ~ N(+-2 margin, sigma^2) for a correct-incorrect pair and N(0,
# sigma^2) otherwise; sigma only scales it, so the ranking needs no noise estimate). It
# is a *sum*: consistent wins add up, and each comparison that only breaks even costs
# `margin`, so a candidate that is not clearly ahead sinks below the unexplored ones and
# the next challenger comes up. A one-step look-ahead (knowledge-gradient) policy on the
# exact needle posterior, one pair per round, turned out to play "leader against the
# best-ranked other candidate" almost every round and misses 11.5% of needles at B = 32
# (halving: 19%); pairing ranks 1-2, 3-4, ... by evidence in rounds of two pairs misses
# 12%. The same rule holds up when several candidates are correct, because they meet
# each other and keep the top of the ladder occupied by correct ones.
#
# The schedule: one random matching (everyone seen once), then rounds of
# ladder_round_size disjoint pairs, ranks 1-2, 3-4, ... by evidence (random among equal
# evidence); repeats are allowed (a leader and its runner-up may meet again: that is the
# comparison that decides). The pick uses margin_strengths (below) rather than the
# evidence: the evidence is right for one needle but penalises correct candidates that
# broke even against each other, while the margin model is opponent-adjusted.
# Cost: ~13 small rounds (2 pairs at N = 16) instead of Swiss's 4 and halving's 10.


def ladder_evidence(signed: Sequence[float], degree: Sequence[int], margin: float) -> list[float]:
    """Evidence per candidate: sum of signed weights minus ``margin`` per successful
    comparison (failed comparisons count for nothing)."""
    return [s - margin * d for s, d in zip(signed, degree, strict=True)]


def ladder_round_size(num_candidates: int, remaining: int, rounds_target: int) -> int:
    """Pairs per ladder round: the budget left spread over ``rounds_target`` rounds, at
    least 1 and at most N/4 (at most half the field in play: larger rounds drift toward
    Swiss and lose the focus that makes the ladder work)."""
    cap = max(1, num_candidates // 4)
    return max(1, min(cap, math.ceil(remaining / rounds_target)))


def ladder_pairs(
    evidence: Sequence[float],
    nodes: Sequence[int],
    num_pairs: int,
    rng: random.Random,
    avoid: Collection[Pair] = (),
) -> list[Pair]:
    """``num_pairs`` disjoint pairs: ``nodes`` ranked by evidence (desc, random among
    equals) meet in order, ranks 1-2, 3-4, ...; a pair in ``avoid`` (unordered, e.g. one
    whose comparison failed) is skipped for the next candidate down when there is one, so
    a candidate that fails with everyone cannot take a good partner down with it."""
    tiebreak = [rng.random() for _ in nodes]
    order = [
        i for _, _, i in sorted(zip((-evidence[i] for i in nodes), tiebreak, nodes, strict=True))
    ]
    pairs: list[Pair] = []
    while len(pairs) < num_pairs and len(order) >= 2:
        u = order.pop(0)
        k = next((k for k, v in enumerate(order) if _key(u, v) not in avoid), 0)
        pairs.append((u, order.pop(k)))
    return pairs
