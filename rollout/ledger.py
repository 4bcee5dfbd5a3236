"""The running state of one tournament: it judges rounds (with the A/B coin), keeps the
incremental sums schedules pair by, gives up on candidates whose comparisons keep failing,
and builds the result."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

from pairrl.rollout.aggregation import (
    Comparison,
    Pair,
    Ratings,
    TournamentResult,
    checked_ratings,
    mean_ratings,
    rank_candidates,
    weighted_win_rates,
)

__all__ = ["JudgePairs", "Ledger", "check_args"]

JudgePairs = Callable[[list[Pair]], Sequence[Ratings | None]]


# ------------------------------------------------------------------------------ the ledger


class Ledger:
    """Running tournament state; judges rounds and keeps incremental sums for scheduling.

    ``seed`` seeds the A/B presentation coin (a stream of its own, so schedules that draw
    from their own ``random.Random(seed)`` are not perturbed by it); ``flip=False`` turns
    the coin off (for ablations only). ``give_up_after``: failed attempts, with no
    successful comparison, after which a candidate is no longer scheduled.
    """

    def __init__(
        self,
        num_candidates: int,
        judge_pairs: JudgePairs,
        budget: int,
        tau: float,
        *,
        seed: int = 0,
        flip: bool = True,
        give_up_after: int = 2,
    ):
        self.n = num_candidates
        self.judge_pairs = judge_pairs
        self.budget = budget
        self.tau = tau
        self.flip = flip
        self.give_up_after = max(1, give_up_after)
        self._flip_rng = random.Random(f"pairrl/ab-flip/{seed}")
        self.comparisons: list[Comparison] = []
        self.rounds = 0
        self.degree = [0] * num_candidates  # successful comparisons per candidate
        self.attempts = [0] * num_candidates  # comparisons sent, failed ones included
        self.failed = [0] * num_candidates  # failed comparisons per candidate
        self._rating_sum = [0.0] * num_candidates
        self.seen: set[Pair] = set()  # unordered pairs sent to the judge (failed included)
        self.failed_pairs: set[Pair] = set()  # unordered pairs whose comparison failed
        self._num = [0.0] * num_candidates
        self._den = [0.0] * num_candidates
        # model-based schedules: per successful comparison (a, b, y) with the signed
        # confidence weight y = w (2 v - 1) in [-1, 1] (A's view), and its running sum
        self.records: list[tuple[int, int, float]] = []
        self.signed = [0.0] * num_candidates

    @property
    def remaining(self) -> int:
        return self.budget - len(self.comparisons)

    def given_up(self, i: int) -> bool:
        """True once ``i`` has failed ``give_up_after`` times without one success."""
        return self.degree[i] == 0 and self.failed[i] >= self.give_up_after

    def active(self, pool: Sequence[int] | None = None) -> list[int]:
        """The candidates of ``pool`` (default: all) that schedules may still pair."""
        nodes = range(self.n) if pool is None else pool
        return [
            i for i in nodes if not (self.degree[i] == 0 and self.failed[i] >= self.give_up_after)
        ]

    def schedule_mu(self) -> list[float]:
        """mu for pairing decisions: 0.5 where no evidence yet (scheduling only, never
        reported or used to pick the winner)."""
        return [n / d if d > 0 else 0.5 for n, d in zip(self._num, self._den, strict=True)]

    def schedule_mean_rating(self) -> list[float]:
        """Mean rating received, 0.0 where no evidence (scheduling tie-breaks only)."""
        return [s / d if d else 0.0 for s, d in zip(self._rating_sum, self.degree, strict=True)]

    def play(self, pairs: list[Pair]) -> None:
        """Judge one round (truncated to the remaining budget) with one batched call.

        Each pair is shown to the judge as ``(a, b)`` or, on a seeded coin, ``(b, a)``;
        the returned ratings are mapped back to ``(r_a, r_b)`` before anything else."""
        pairs = pairs[: self.remaining]
        if not pairs:
            raise RuntimeError("internal error: a round with no pairs would loop forever")
        used: set[int] = set()
        for a, b in pairs:
            if a == b or a in used or b in used or not (0 <= a < self.n and 0 <= b < self.n):
                raise RuntimeError(f"internal error: round pairs not disjoint/valid: {pairs}")
            used.update((a, b))
        if self.flip:
            coins = self._flip_rng.getrandbits(len(pairs))
            swaps = [bool(coins >> k & 1) for k in range(len(pairs))]
        else:
            swaps = [False] * len(pairs)
        shown = [(b, a) if s else (a, b) for (a, b), s in zip(pairs, swaps, strict=True)]
        verdicts = list(self.judge_pairs(shown))
        if len(verdicts) != len(pairs):
            raise ValueError(f"judge_pairs returned {len(verdicts)} results for {len(pairs)} pairs")
        for (a, b), swapped, verdict in zip(pairs, swaps, verdicts, strict=True):
            if verdict is not None:
                ra, rb = checked_ratings(verdict)
                if swapped:
                    ra, rb = rb, ra
                verdict = (ra, rb)
                # confidence_weight and pair_outcome inlined: this loop is the hot path
                w = max(abs(ra - rb) / 9.0, self.tau)
                v = 1.0 if ra > rb else (0.5 if ra == rb else 0.0)
                self._num[a] += w * v
                self._den[a] += w
                self._num[b] += w * (1.0 - v)
                self._den[b] += w
                self.degree[a] += 1
                self.degree[b] += 1
                self._rating_sum[a] += ra
                self._rating_sum[b] += rb
                y = w * (2.0 * v - 1.0)
                self.signed[a] += y
                self.signed[b] -= y
                self.records.append((a, b, y))
            else:
                self.failed[a] += 1
                self.failed[b] += 1
                self.failed_pairs.add((a, b) if a < b else (b, a))
            self.attempts[a] += 1
            self.attempts[b] += 1
            self.comparisons.append(Comparison(self.rounds, a, b, verdict, swapped))
            self.seen.add((a, b) if a < b else (b, a))
        self.rounds += 1

    def result(
        self,
        schedule: str,
        final_pool: Sequence[int] | None = None,
        ranking: Sequence[int] | None = None,
    ) -> TournamentResult:
        """The result; the winner is ``ranking[0]`` when a schedule supplies its own
        ranking (a model-based pick), else argmax mu (within ``final_pool`` if given)."""
        mu = weighted_win_rates(self.n, self.comparisons, self.tau)
        mr = mean_ratings(self.n, self.comparisons)
        if ranking is not None:
            ranking = list(ranking)
        else:
            if final_pool is not None and all(math.isnan(mu[i]) for i in final_pool):
                final_pool = None  # no finalist has evidence: fall back to the whole field
            ranking = rank_candidates(mu, mr, final_pool)
        winner: int | None = ranking[0] if ranking else None
        reason = None
        if self.n >= 2 and (winner is None or math.isnan(mu[winner])):
            winner = None
            if not self.comparisons:
                reason = f"no comparison was made (budget {self.budget})"
            else:
                reason = f"all {len(self.comparisons)} comparisons failed"
        return TournamentResult(
            schedule=schedule,
            num_candidates=self.n,
            budget=self.budget,
            winner=winner,
            no_winner_reason=reason,
            mu=mu,
            mean_rating=mr,
            ranking=ranking,
            comparisons=list(self.comparisons),
            rounds=self.rounds,
            degree=list(self.degree),
        )


def check_args(num_candidates: int, budget: int, d_min: int, window: int, tau: float) -> None:
    if not isinstance(num_candidates, int) or num_candidates < 1:
        raise ValueError(f"num_candidates must be an integer >= 1, got {num_candidates!r}")
    if not isinstance(budget, int) or budget < 0:
        raise ValueError(f"budget must be an integer >= 0 (comparisons), got {budget!r}")
    if d_min < 0:
        raise ValueError(f"d_min must be >= 0, got {d_min!r}")
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window!r}")
    if not 0.0 < tau <= 1.0:
        raise ValueError(f"tau must lie in (0, 1], got {tau!r}")
