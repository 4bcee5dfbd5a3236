"""Lock-step batching under a stop: a signal that raises in the caller (a job's SIGTERM
outside a training step) returns only once no worker thread runs, so that no model call
outlives the caller (one still running when the interpreter exits aborts the process)."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from pairrl.rollout.lockstep import run_in_lockstep


class Stop(BaseException):
    pass


def test_a_stop_in_the_caller_ends_every_worker_before_it_propagates() -> None:
    started, ended = threading.Event(), threading.Event()
    batches: list[int] = []

    main = threading.main_thread().ident

    def batch(requests: list) -> list:
        batches.append(len(requests))
        if not started.is_set():
            started.set()
            signal.pthread_kill(main, signal.SIGALRM)  # the stop, while this call runs
        time.sleep(0.5)  # a model call under way when the stop comes
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
