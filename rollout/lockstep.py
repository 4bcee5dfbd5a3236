"""Tournaments of many problems in lock-step, so each round of every problem is judged in
one batch.

A tournament (``pairrl.rollout.tournament``) calls its ``judge_pairs`` once per round.
Run one problem after another and every round is a small batch (N/2 pairs); a local
model then spends its time in per-call overhead. Here every problem's tournament runs in
its own thread and blocks at its round; when all running tournaments have posted their
round, the last to arrive judges all of them as one batch (``LockstepJudge``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["LockstepJudge", "run_lockstep", "run_lockstep_swiss"]

Pair = tuple[int, int]
Verdict = tuple[float, float] | None


class LockstepJudge:
    """Collects one round of pairs from every running tournament, judges them as one batch.

    ``judge_batch(requests)`` gets ``[(problem_index, (a, b)), ...]`` and returns one
    verdict per request. Each tournament runs in its own thread and calls the function
    returned by :meth:`for_problem`; the last thread to arrive runs the batch.
    """

    def __init__(
        self,
        num_problems: int,
        judge_batch: Callable[[list[tuple[int, Pair]]], list[Verdict]],
    ) -> None:
        self._judge_batch = judge_batch
        self._active = num_problems
        self._waiting: dict[int, list[Pair]] = {}
        self._answers: dict[int, list[Verdict]] = {}
        self._cond = threading.Condition()
        self._error: BaseException | None = None
        self.batches = 0

    def _flush_locked(self) -> None:
        requests = [(p, pair) for p, pairs in sorted(self._waiting.items()) for pair in pairs]
        try:
            verdicts = self._judge_batch(requests) if requests else []
            if len(verdicts) != len(requests):
                raise RuntimeError(
                    f"judge returned {len(verdicts)} verdicts for {len(requests)} pairs"
                )
        except BaseException as err:  # hand the failure to every waiting thread
            self._error = err
            self._cond.notify_all()
            return
        self.batches += 1
        k = 0
        for p, pairs in sorted(self._waiting.items()):
            self._answers[p] = verdicts[k : k + len(pairs)]
            k += len(pairs)
        self._waiting.clear()
        self._cond.notify_all()

    def for_problem(self, problem: int) -> Callable[[list[Pair]], list[Verdict]]:
        """The ``judge_pairs`` callback of one problem's tournament."""

        def judge_pairs(pairs: list[Pair]) -> list[Verdict]:
            with self._cond:
                self._waiting[problem] = list(pairs)
                if len(self._waiting) == self._active:
                    self._flush_locked()
                while problem not in self._answers and self._error is None:
                    self._cond.wait()
                if self._error is not None:
                    raise RuntimeError("judge batch failed") from self._error
                return self._answers.pop(problem)

        return judge_pairs

    def finished(self) -> None:
        """A tournament ended; flush if every remaining one is already waiting."""
        with self._cond:
            self._active -= 1
            if self._active and len(self._waiting) == self._active:
                self._flush_locked()


def run_lockstep(
    schedule: Callable[..., Any],
    num_candidates: Sequence[int],
    judge_batch: Callable[[list[tuple[int, Pair]]], list[Verdict]],
    *,
    budgets: Sequence[int | None],
    seeds: Sequence[int],
) -> list[Any]:
    """``schedule(N_p, judge, budgets[p], seed=seeds[p])`` for every problem p, in lock-step;
    the tournament results in problem order. ``judge_batch`` gets one batch per round."""
    judge = LockstepJudge(len(num_candidates), judge_batch)
    results: list[Any] = [None] * len(num_candidates)
    errors: list[BaseException] = []

    def play(p: int) -> None:
        try:
            results[p] = schedule(
                num_candidates[p], judge.for_problem(p), budgets[p], seed=seeds[p]
            )
        except BaseException as err:  # re-raised in the caller
            errors.append(err)
        finally:
            judge.finished()

    threads = [
        threading.Thread(target=play, args=(p,), daemon=True) for p in range(len(num_candidates))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def run_lockstep_swiss(
    num_candidates: Sequence[int],
    judge_batch: Callable[[list[tuple[int, Pair]]], list[Verdict]],
    *,
    budget_per_candidate: int = 2,
    seed: int = 0,
) -> list[Any]:
    """Swiss tournaments (budget ``budget_per_candidate * N``, seed ``seed + p``) for every
    problem p; results in order."""
    from pairrl.rollout.tournament import swiss_tournament

    return run_lockstep(
        swiss_tournament,
        num_candidates,
        judge_batch,
        budgets=[budget_per_candidate * n for n in num_candidates],
        seeds=[seed + p for p in range(len(num_candidates))],
    )
