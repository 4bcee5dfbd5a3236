"""Pairwise selection tournaments: pick the best of N candidates with a pairwise judge.

Entry points (one signature, so callers and ablations can swap them; by name in
``pairrl.rollout.schedule_registry``):

    swiss_tournament(num_candidates, judge_pairs, budget, *, d_min=2, window=8, tau=0.1, seed=0)
    random_pairing_tournament(...)   # same signature, random disjoint pairs each round
    all_pairs_tournament(...)        # same signature, every pair once (budget caps it)
    sequential_halving_tournament(...)   # aimed at finding the best; argued in
                                         # pairrl.rollout.schedules
    rated_halving_tournament(...)        # halving whose cuts and pick read the ratings
                                         # through a rating model (the "rated_halving_2n"
                                         # selector); pairrl.rollout.strengths
    ladder_tournament(...)               # model-based: evidence ladder + margin-model pick,
                                         # argued in pairrl.rollout.schedules

``judge_pairs(pairs)`` judges one round of disjoint ``(a, b)`` pairs as ONE batch and
returns, per pair, the two ratings ``(r_a, r_b)`` (real numbers in [1, 10]: integer
ratings, or expected ratings from the judge's log-probs) or ``None`` for a failed
comparison. Every tournament calls it once per round.

Presentation order. The judge sees each pair in an order decided by a seeded coin per
comparison (owned by the ledger, derived from the tournament seed): with probability 1/2
it is asked about ``(b, a)`` and its ratings are mapped back. Schedules put pairs in a
systematic order (Swiss phase 2: the higher-mu candidate first), so without the coin a
judge that favours position A (or B) would favour the leader (or the challenger) and
steer the pick; with it, a position bias is noise that is the same for every candidate.
Comparisons are recorded in the schedule's order, ratings mapped back, with ``swapped``
saying whether the judge saw them the other way round.

Failures. A candidate whose comparisons keep failing is *given up* once it has
``max(d_min, 1)`` failed attempts and no successful one: no schedule pairs it again, so
it cannot drain the budget. A schedule stops early when fewer than two candidates can
still be paired; every round sends at least one pair, so no schedule loops forever.

Aggregation (the paper's, shared by every schedule; ``pairrl.rollout.aggregation``):

* winner = argmax mu (the weighted win rate); ties by mean rating received, then lowest index (sequential
  halving takes the argmax within its final pool, or the whole field if no finalist has
  a successful comparison). The ladder schedule picks differently, by the posterior mean
  strength of a margin model fitted to the same signed weights ``w (2 v - 1)`` (see
  ``ladder_tournament``); ``mu`` is still reported for every schedule.

Failed comparisons (``None``) never enter mu: they are recorded, counted and reported,
never turned into ties. A candidate with no successful comparison has ``mu = nan`` (no
evidence, not a neutral 0.5) and cannot win while another candidate has evidence. When
no comparison succeeds at all (N >= 2) there is no winner and ``no_winner_reason`` says
why. N = 1 needs no comparison: candidate 0 wins with ``mu = [nan]``.
"""

from __future__ import annotations

import math
import random

from pairrl.rollout.aggregation import (
    RATING_MAX,
    RATING_MIN,
    Comparison,
    TournamentResult,
    confidence_weight,
    mean_ratings,
    pair_outcome,
    rank_candidates,
    weighted_win_rates,
)
from pairrl.rollout.ledger import JudgePairs, Ledger, check_args
from pairrl.rollout.schedules import (
    ladder_evidence,
    ladder_pairs,
    ladder_round_size,
    random_matching,
    round_robin_rounds,
    sequential_halving_plan,
    swiss_phase1_needs,
    swiss_phase1_pairs,
    swiss_phase2_pairs,
)
from pairrl.rollout.strengths import margin_strengths, rating_strengths

__all__ = [
    "RATING_MAX",
    "RATING_MIN",
    "Comparison",
    "JudgePairs",
    "TournamentResult",
    "all_pairs_tournament",
    "confidence_weight",
    "ladder_tournament",
    "mean_ratings",
    "pair_outcome",
    "random_pairing_tournament",
    "rank_candidates",
    "rated_halving_tournament",
    "sequential_halving_tournament",
    "swiss_tournament",
    "weighted_win_rates",
]


# ------------------------------------------------------------------------------ schedules


def swiss_tournament(
    num_candidates: int,
    judge_pairs: JudgePairs,
    budget: int,
    *,
    d_min: int = 2,
    window: int = 8,
    tau: float = 0.1,
    seed: int = 0,
) -> TournamentResult:
    """The paper's Swiss schedule (docs/design.md, section "Swiss schedule"): phase 1
    gives every candidate ``d_min`` successful comparisons (a random disjoint pairing, then
    lowest-degree candidates meet the unseen partner of closest mu); phase 2 pairs
    candidates in mu order with the closest-mu partner among the next ``window``,
    preferring unseen pairs, until ``budget`` comparisons have been sent. Winner: argmax
    mu, ties by mean rating, then index.

    Failures: phase 1 stops asking for a candidate's ``d_min`` successes once it has
    ``d_min`` failed attempts, and a candidate with no success after ``max(d_min, 1)``
    failed attempts is not paired again (phase 1 or 2), so one candidate whose
    comparisons always fail costs about ``d_min`` comparisons, not the budget."""
    check_args(num_candidates, budget, d_min, window, tau)
    rng = random.Random(seed)
    led = Ledger(num_candidates, judge_pairs, budget, tau, seed=seed, give_up_after=d_min)
    if num_candidates >= 2 and budget > 0:
        if d_min > 0:
            led.play(random_matching(list(range(num_candidates)), rng))
        while led.remaining > 0 and swiss_phase1_needs(led.degree, led.failed, d_min):
            skip = set(range(num_candidates)) - set(led.active())
            pairs = swiss_phase1_pairs(
                led.degree, led.schedule_mu(), led.seen, d_min, rng, led.failed, skip
            )
            if not pairs:
                break  # the only candidates still in need have no partner left
            led.play(pairs)
        while led.remaining > 0:
            nodes = led.active()
            if len(nodes) < 2:
                break
            led.play(swiss_phase2_pairs(led.schedule_mu(), led.seen, window, nodes))
    return led.result("swiss")


def random_pairing_tournament(
    num_candidates: int,
    judge_pairs: JudgePairs,
    budget: int,
    *,
    d_min: int = 2,
    window: int = 8,
    tau: float = 0.1,
    seed: int = 0,
) -> TournamentResult:
    """Ablation: each round a fresh uniformly random disjoint pairing, until ``budget``.
    ``d_min`` and ``window`` are accepted for a common signature and unused."""
    check_args(num_candidates, budget, d_min, window, tau)
    rng = random.Random(seed)
    led = Ledger(num_candidates, judge_pairs, budget, tau, seed=seed, give_up_after=d_min)
    while led.remaining > 0:
        nodes = led.active()
        if len(nodes) < 2:
            break
        led.play(random_matching(nodes, rng))
    return led.result("random_pairing")


def all_pairs_tournament(
    num_candidates: int,
    judge_pairs: JudgePairs,
    budget: int | None = None,
    *,
    d_min: int = 2,
    window: int = 8,
    tau: float = 0.1,
    seed: int = 0,
) -> TournamentResult:
    """Ablation: every unordered pair judged once, in round-robin rounds of disjoint pairs
    (N-1 rounds for even N, N for odd N). ``budget=None`` means all N(N-1)/2 pairs; a
    smaller budget stops after that many pairs (rounds in a seeded random order, so the
    cut does not always fall on the same pairs). ``d_min``/``window`` are unused."""
    total = num_candidates * (num_candidates - 1) // 2 if num_candidates >= 1 else 0
    budget = total if budget is None else budget
    check_args(num_candidates, budget, d_min, window, tau)
    rng = random.Random(seed)
    led = Ledger(num_candidates, judge_pairs, budget, tau, seed=seed)
    rounds = round_robin_rounds(num_candidates)
    rng.shuffle(rounds)
    for pairs in rounds:
        if led.remaining <= 0:
            break
        led.play(pairs)
    return led.result("all_pairs")


def sequential_halving_tournament(
    num_candidates: int,
    judge_pairs: JudgePairs,
    budget: int,
    *,
    d_min: int = 2,
    window: int = 8,
    tau: float = 0.1,
    seed: int = 0,
) -> TournamentResult:
    """Our schedule, aimed at *finding the best* rather than ranking everyone (the
    argument is in pairrl.rollout.schedules): stages over pools of N, N/2, ..., 2 candidates,
    an equal number of rounds of disjoint duels inside the pool per stage, then the lower
    half by mu is cut. Same aggregation as Swiss; the winner is the argmax of mu within the
    final pool. ``d_min`` and ``window`` are accepted for a common signature and unused."""
    check_args(num_candidates, budget, d_min, window, tau)
    rng = random.Random(seed)
    led = Ledger(num_candidates, judge_pairs, budget, tau, seed=seed, give_up_after=d_min)
    pool = sequential_halving_plan(led, rng)
    return led.result("sequential_halving", final_pool=pool)


def rated_halving_tournament(
    num_candidates: int,
    judge_pairs: JudgePairs,
    budget: int,
    *,
    d_min: int = 2,
    window: int = 8,
    tau: float = 0.1,
    seed: int = 0,
    prior_ratings: float = 1.0,
) -> TournamentResult:
    """Sequential halving that reads the ratings themselves (the project's default
    schedule): the same stages and duels as ``sequential_halving_tournament``,
    but each cut, and the pick within the final pool, is by the candidates' levels under
    the rating model of ``pairrl.rollout.strengths.rating_strengths``: every rating is the
    rated candidate's level plus noise plus an effect shared by the pair, whose size is
    estimated from the tournament's own comparisons. Where the judge's ratings are
    absolute (a correct solution rated high whatever it is paired with, which is what the
    verification reward trains), a comparison tells about both candidates' levels, not
    only their difference; where a pair effect dominates, the model falls back to rating
    differences. ``prior_ratings``: the prior's worth, in ratings, at the field's mean.

    Candidates without a successful comparison rank last and cannot win; the final pool
    falls back to the whole field if none of it has one. ``mu`` is still reported.
    ``d_min`` (failed attempts before a candidate is given up) as in every schedule;
    ``window`` is accepted for the common signature and unused."""
    check_args(num_candidates, budget, d_min, window, tau)
    rng = random.Random(seed)
    led = Ledger(num_candidates, judge_pairs, budget, tau, seed=seed, give_up_after=d_min)

    def levels() -> list[float]:
        rated = [(c.a, c.b, *c.ratings) for c in led.comparisons if c.ratings is not None]
        return rating_strengths(num_candidates, rated, prior_ratings)

    pool = sequential_halving_plan(led, rng, cut_scores=levels)
    if not any(led.degree[i] for i in pool):
        pool = list(range(num_candidates))
    level = levels()
    ranking = rank_candidates(
        [x if led.degree[i] else math.nan for i, x in enumerate(level)],
        led.schedule_mean_rating(),
        pool,
    )
    return led.result("rated_halving", ranking=ranking)


LADDER_MARGIN = 1.0 / 6.0
"""Evidence cost per comparison, in signed-weight units: half the signed weight of a typical
verdict between a correct and an incorrect candidate (a 3-point rating gap is 3/9)."""
LADDER_ROUNDS = 16
"""Rounds after the coverage round the ladder aims for (latency knob; see ladder_round_size)."""
LADDER_KAPPA = 2.0
"""Ridge prior of the margin model used for the ladder's pick (in comparisons' worth)."""


def ladder_tournament(
    num_candidates: int,
    judge_pairs: JudgePairs,
    budget: int,
    *,
    d_min: int = 2,
    window: int = 8,
    tau: float = 0.1,
    seed: int = 0,
    rounds_target: int = LADDER_ROUNDS,
    margin: float = LADDER_MARGIN,
    kappa: float = LADDER_KAPPA,
) -> TournamentResult:
    """Evidence ladder (model-based; the argument is in pairrl.rollout.schedules, "evidence
    ladder"): one random matching so that every candidate is seen once, then small rounds
    in which the candidates with the most *evidence of being correct* meet each other --
    ranks 1-2, 3-4, ... -- until the budget is spent.

    Evidence of i = sum over its successful comparisons of ``y - margin``, where
    ``y = w (2 v - 1)`` is the paper's confidence weight signed by the outcome; it is the
    log-likelihood ratio (up to scale) of "i is correct" against "i is not", for a judge
    whose signed weight between a correct and an incorrect candidate is about
    ``2 * margin`` plus Gaussian noise. Unlike mu (an average) it grows with consistent
    wins and falls by ``margin`` for every uninformative comparison, so a leader who keeps
    winning keeps being tested while one who only breaks even sinks and lets the next
    candidate up: the leader meets a stream of fresh challengers, which is where the
    budget decides the pick.

    Round size: ``ladder_round_size`` pairs (about (budget left after coverage) /
    ``rounds_target``, between 1 and N/4), so ~``rounds_target + 1`` batched calls (16 + 1 by default, about what halving takes at
    B = 3N; 13 at N = 16, B = 2N, where the budget runs out first).

    Pick: argmax of the posterior mean strength of a Gaussian margin model fitted to all
    successful comparisons (``y_ab ~ N(s_a - s_b, sigma^2)``, ridge prior worth ``kappa``
    comparisons, i.e. Massey ratings with shrinkage): opponent-adjusted, and a candidate
    with one lucky win is shrunk toward the field; ties by mean rating, then index.
    Candidates without a successful comparison rank last and cannot win.

    Failures: a failed comparison adds nothing (the candidate keeps its evidence and its
    place, so it is retried, with another partner when there is one); a candidate with no
    success after ``max(d_min, 1)`` failed attempts is given up. ``window`` is accepted for the common signature and unused.
    """
    check_args(num_candidates, budget, d_min, window, tau)
    if rounds_target < 1:
        raise ValueError(f"rounds_target must be >= 1, got {rounds_target!r}")
    rng = random.Random(seed)
    led = Ledger(num_candidates, judge_pairs, budget, tau, seed=seed, give_up_after=d_min)
    if num_candidates >= 2 and budget > 0:
        led.play(random_matching(list(range(num_candidates)), rng))
        per_round = ladder_round_size(num_candidates, led.remaining, rounds_target)
        while led.remaining > 0:
            nodes = led.active()
            if len(nodes) < 2:
                break
            evidence = ladder_evidence(led.signed, led.degree, margin)
            led.play(ladder_pairs(evidence, nodes, per_round, rng, led.failed_pairs))
    strength = margin_strengths(num_candidates, led.records, kappa)
    ranking = rank_candidates(
        [s if d else math.nan for s, d in zip(strength, led.degree, strict=True)],
        led.schedule_mean_rating(),
    )
    return led.result("ladder", ranking=ranking)
