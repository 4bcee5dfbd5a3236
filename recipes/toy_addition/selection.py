"""Best-of-k pickers for the demo's held-out evaluation (pure, apart from the judge call).

``random``  the expected accuracy of a uniformly random pick: the mean correct share per
            problem (an exact expectation, not one noisy draw).
``swiss``   the project's Swiss tournament (``pairrl.rollout.tournament.swiss_tournament``) with
            the model itself as pairwise judge. Tournaments of all problems advance in
            lock-step so that each round of every problem is judged in one batch.
``majority`` the most common return value of ``f()`` among candidates that returned one
            (ties: the value first seen); the execution-agreement baseline.
``oracle``  1 when any candidate is correct.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Any

__all__ = ["LockstepJudge", "majority_pick", "run_lockstep_swiss"]

Pair = tuple[int, int]
Verdict = tuple[int, int] | None


def majority_pick(values: Sequence[Hashable | None]) -> int | None:
    """Index of the first candidate holding the most common non-None value; None if none.

    >>> majority_pick([105, 115, 115, None, 105, 115])
    1
    >>> majority_pick([None, None]) is None
    True
    """
    counts = Counter(v for v in values if v is not None)
    if not counts:
        return None
    best = max(counts.values())
    for i, value in enumerate(values):
        if value is not None and counts[value] == best:
            return i
    return None  # unreachable: some value reached the best count


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


def run_lockstep_swiss(
    num_candidates: Sequence[int],
    judge_batch: Callable[[list[tuple[int, Pair]]], list[Verdict]],
    *,
    budget_per_candidate: int = 2,
    seed: int = 0,
) -> list[Any]:
    """Swiss tournaments (budget ``budget_per_candidate * N``) for every problem; results in order."""
    from pairrl.rollout.tournament import swiss_tournament

    judge = LockstepJudge(len(num_candidates), judge_batch)
    results: list[Any] = [None] * len(num_candidates)
    errors: list[BaseException] = []

    def play(p: int) -> None:
        try:
            n = num_candidates[p]
            results[p] = swiss_tournament(
                n, judge.for_problem(p), budget_per_candidate * n, seed=seed + p
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
