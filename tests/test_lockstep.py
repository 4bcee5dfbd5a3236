"""Lock-step batching under a stop: a signal that raises in the caller (a job's SIGTERM
outside a training step) returns only once no worker thread runs, so that no model call
outlives the caller (one still running when the interpreter exits aborts the process)."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from pairrl.rollout.lockstep import LockstepBatcher, run_in_lockstep
from pairrl.rollout.tournament import swiss_tournament


class Stop(BaseException):
    pass


def test_a_stop_in_the_caller_ends_every_worker_before_it_propagates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started, ended, cancelling = threading.Event(), threading.Event(), threading.Event()
    batches: list[int] = []
    waited: list[bool] = []  # whether the caller began cancelling while the batch ran

    main = threading.main_thread().ident
    cancel = LockstepBatcher.cancel

    def cancel_seen(self: LockstepBatcher, why: BaseException) -> None:
        cancelling.set()
        cancel(self, why)

    monkeypatch.setattr(LockstepBatcher, "cancel", cancel_seen)

    def batch(requests: list) -> list:
        batches.append(len(requests))
        if not started.is_set():
            started.set()
            signal.pthread_kill(main, signal.SIGALRM)  # the stop, while this call runs
            # a model call under way until the caller has begun cancelling, however late
            # the loaded machine lets the main thread take the signal
            waited.append(cancelling.wait(timeout=60))
            time.sleep(0.2)
        ended.set()
        return [item * 2 for _, item in requests]

    def work(p: int, ask) -> list:  # type: ignore[no-untyped-def]
        return [ask([p, p + 1]) for _ in range(1000)]  # many rounds: still working at the stop

    def raise_stop(signum: int, frame: object) -> None:
        raise Stop

    before = set(threading.enumerate())
    previous = signal.signal(signal.SIGALRM, raise_stop)
    try:
        with pytest.raises(Stop):
            run_in_lockstep(4, work, batch)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert waited == [True]  # the stop came while the first batch ran
    assert started.is_set() and ended.is_set()  # the batch under way finished first
    assert not set(threading.enumerate()) - before  # and no worker runs on
    assert batches == [8]  # nor any batch after the stop (4 workers x 2 items, once)


def test_without_a_stop_every_worker_gets_its_own_answers() -> None:
    def batch(requests: list) -> list:
        return [(worker, item * 10) for worker, item in requests]

    def work(p: int, ask) -> list:  # type: ignore[no-untyped-def]
        return ask([p, p + 1]) + ask([p])

    assert run_in_lockstep(3, work, batch) == [
        [(0, 0), (0, 10), (0, 0)],
        [(1, 10), (1, 20), (1, 10)],
        [(2, 20), (2, 30), (2, 20)],
    ]


def test_swiss_tournaments_in_lock_step_batch_rounds_and_find_the_rated_best() -> None:
    """20 problems of 8 candidates, budget 2N each: every round of every problem in one
    batch, and each problem's best (candidate p % 8, rated 9 against 1) wins."""
    batches: list[int] = []

    def judge(requests: list[tuple[int, tuple[int, int]]]) -> list[tuple[int, int]]:
        batches.append(len(requests))
        best = {p: p % 8 for p, _ in requests}
        return [(9 if a == best[p] else 1, 9 if b == best[p] else 1) for p, (a, b) in requests]

    def work(p: int, ask) -> object:  # type: ignore[no-untyped-def]
        return swiss_tournament(8, ask, 16, seed=p)

    results = run_in_lockstep(20, work, judge)
    assert [r.winner for r in results] == [p % 8 for p in range(20)]
    assert all(r.num_comparisons == 16 for r in results)
    assert len(batches) < 10 and sum(batches) == 20 * 16  # rounds batched across problems
