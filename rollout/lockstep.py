"""Many problems' tournaments in lock-step, so each round of every problem is judged in one
batch.

A tournament (``pairrl.rollout.tournament``) calls its ``judge_pairs`` once per round. Run
one problem after another and every round is a small batch (N/2 pairs); a local model then
spends its time in per-call overhead, and an endpoint sees a trickle of requests. Here
every problem's work runs in its own thread and blocks when it asks for a batch; when all
running workers have posted their request, the last to arrive makes one call for all of
them (``LockstepBatcher``). Results are handed back in request order, so what each worker
sees does not depend on thread timing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["LockstepBatcher", "run_in_lockstep"]

T = TypeVar("T")
Ask = Callable[[list[Any]], list[Any]]  # one worker's request: items in, results out
BatchCall = Callable[[list[tuple[int, Any]]], list[Any]]  # [(worker, item), ...] -> results


class LockstepBatcher:
    """Collects one request from every running worker and answers them with one call.

    ``batch(requests)`` gets ``[(worker_index, item), ...]`` (workers in index order, each
    worker's items in its order) and returns one result per request. Each worker calls the
    function returned by :meth:`for_worker`; the last thread to arrive runs the batch.
    """

    def __init__(self, num_workers: int, batch: BatchCall) -> None:
        self._batch = batch
        self._active = num_workers
        self._waiting: dict[int, list[Any]] = {}
        self._answers: dict[int, list[Any]] = {}
        self._cond = threading.Condition()
        self._error: BaseException | None = None
        # Set by cancel() before it waits for the lock (a batch under way holds it): no
        # batch starts once it is set, whichever thread takes the lock first.
        self._cancelled: BaseException | None = None
        self.batches = 0

    def _failed_locked(self) -> bool:
        """Whether the batcher is cancelled or a batch failed (the lock held)."""
        if self._error is None and self._cancelled is not None:
            self._error = self._cancelled
        return self._error is not None

    def _flush_locked(self) -> None:
        if self._failed_locked():  # cancelled since this worker's request came in
            self._cond.notify_all()
            return
        requests = [(w, item) for w, items in sorted(self._waiting.items()) for item in items]
        try:
            results = self._batch(requests) if requests else []
            if len(results) != len(requests):
                raise RuntimeError(f"batch returned {len(results)} results for {len(requests)}")
        except BaseException as err:  # hand the failure to every waiting thread
            self._error = err
            self._cond.notify_all()
            return
        self.batches += 1
        k = 0
        for w, items in sorted(self._waiting.items()):
            self._answers[w] = list(results[k : k + len(items)])
            k += len(items)
        self._waiting.clear()
        self._cond.notify_all()

    def for_worker(self, worker: int) -> Ask:
        """The blocking ``ask(items) -> results`` of one worker."""

        def ask(items: list[Any]) -> list[Any]:
            with self._cond:
                if self._failed_locked():  # cancelled, or an earlier batch failed
                    raise RuntimeError("lock-step batch failed") from self._error
                self._waiting[worker] = list(items)
                if len(self._waiting) == self._active:
                    self._flush_locked()
                while worker not in self._answers and not self._failed_locked():
                    self._cond.wait()
                if self._failed_locked():
                    self._waiting.pop(worker, None)  # gone: no later batch asks for it
                    raise RuntimeError("lock-step batch failed") from self._error
                return self._answers.pop(worker)

        return ask

    def cancel(self, why: BaseException) -> None:
        """No further batch: waiting workers and later requests raise. Returns once a batch
        under way has ended (it holds the lock while it runs)."""
        self._cancelled = why
        with self._cond:
            self._failed_locked()
            self._cond.notify_all()

    def finished(self) -> None:
        """A worker ended; flush if every remaining one is already waiting."""
        with self._cond:
            self._active -= 1
            if not self._failed_locked() and self._active and len(self._waiting) == self._active:
                self._flush_locked()


def run_in_lockstep(
    num_workers: int,
    work: Callable[[int, Ask], T],
    batch: BatchCall,
    on_done: Callable[[int], None] | None = None,
) -> list[T]:
    """``work(p, ask)`` for every worker p in its own thread, each ``ask`` batched with the
    others' (see the module docstring); the results in worker order. The first exception
    of any worker is re-raised here once all have stopped."""
    batcher = LockstepBatcher(num_workers, batch)
    results: list[Any] = [None] * num_workers
    errors: list[BaseException] = []

    def run(p: int) -> None:
        try:
            results[p] = work(p, batcher.for_worker(p))
        except BaseException as err:  # re-raised in the caller
            errors.append(err)
        finally:
            batcher.finished()
            if on_done is not None:
                on_done(p)

    threads = [threading.Thread(target=run, args=(p,), daemon=True) for p in range(num_workers)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    except BaseException as stop:  # a stop signal here: no worker may outlive the caller
        # (a thread still running a model when the interpreter exits aborts the process)
        _cancel_and_join(batcher, threads, stop)
        raise
    if errors:
        raise errors[0]
    return results


def _cancel_and_join(
    batcher: LockstepBatcher, threads: list[threading.Thread], why: BaseException
) -> None:
    """Cancel the batcher and wait for every worker; a further signal meanwhile does not
    cut the wait short (the first stop is the one raised)."""
    cancelled = False
    while True:
        try:
            if not cancelled:
                batcher.cancel(why)
                cancelled = True
            for t in threads:
                if t.ident is not None:  # started
                    t.join()
            return
        except BaseException:  # a second stop: keep waiting (one batch at most), raise the first
            continue
