"""The executor: a pool of sandboxed workers judging candidates in parallel, with a cache.

Sync ``run``, async ``arun`` and ``submit`` (a ``concurrent.futures.Future``) share one
thread pool; each thread borrows a worker, drives one candidate with the trusted driver
in :mod:`pairrl.rewards.trusted_driver`, and gives the worker back (or replaces it after an anomaly).
Infrastructure failures are retried once on a fresh worker, then reported as
``sandbox_error``; they are never a wrong answer and never cached.

Time limits: ``time_limit="fixed"`` gives every candidate ``timeout_s`` (each input of an
input/output task gets its own ``timeout_s``). ``time_limit="reference"`` is EvalPlus's
rule for every task with a reference solution: the reference is timed here, once per task
(when first judged), and the candidate gets ``max(limit_floor_s, limit_factor x its
time)``: per input for input/output tasks, per task (all asserts, or each stdin case)
otherwise. Tasks without a reference, or whose reference fails its own tests, keep
``timeout_s``. An input's limit bounds the call alone, on the candidate's own clock (wall
less waiting for a CPU, kept by the sandbox worker), as is the reference's time: verdicts
follow neither the load nor the CPU's speed (docs/time_limits.md).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Literal

from pairrl.rewards.call_outputs import call_outputs_on
from pairrl.rewards.evalplus_compat import LIMIT_FACTOR, LIMIT_FLOOR_S, reference_limit
from pairrl.rewards.results import CallOutput, ExecJob, ExecResult
from pairrl.rewards.sandbox import (
    PROCESS_MODE_WARNING,
    Isolation,
    SandboxLimits,
    SandboxUnavailable,
    SandboxWorker,
)
from pairrl.rewards.session import CandidateSession, InfrastructureError
from pairrl.rewards.tasks import AssertTests, IOTests, StdioTests, Task
from pairrl.rewards.trusted_driver import (
    SETUP_LIMIT_S,
    CompiledAssertTests,
    make_result,
    run_io_tests,
    run_stdio_case,
)

ResultCallback = Callable[[ExecResult], None]


class Executor:
    """Judge candidate programs in sandboxed workers; see the module docstring."""

    def __init__(
        self,
        workers: int | None = None,
        timeout_s: float = 3.0,
        isolation: Isolation = "bwrap",
        limits: SandboxLimits | None = None,
        cache: bool = True,
        recycle_after: int = 500,
        packages: tuple[str, ...] = ("numpy",),
        time_limit: Literal["fixed", "reference"] = "fixed",
        limit_factor: float = LIMIT_FACTOR,
        limit_floor_s: float = LIMIT_FLOOR_S,
    ) -> None:
        """``packages``: third-party packages of this interpreter visible to candidates
        (read-only); everything else in site-packages stays out of the sandbox.
        ``time_limit``, ``limit_factor``, ``limit_floor_s``: see the module docstring."""
        if isolation not in ("bwrap", "process"):
            raise ValueError(f"isolation {isolation!r} unknown; allowed: 'bwrap', 'process'")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if time_limit not in ("fixed", "reference"):
            raise ValueError(f"time_limit {time_limit!r} unknown; allowed: 'fixed', 'reference'")
        if limit_factor <= 0 or limit_floor_s <= 0:
            raise ValueError("limit_factor and limit_floor_s must be > 0")
        self.time_limit = time_limit
        self.limit_factor = limit_factor
        self.limit_floor_s = limit_floor_s
        # Twice the cores by default: a worker spends much of a candidate waiting (pipe
        # round trips, sleeping or timed-out candidates), so one per core leaves CPUs idle.
        self.workers = workers or 2 * (os.cpu_count() or 1)
        self.timeout_s = timeout_s
        self.isolation = isolation
        self.limits = limits or SandboxLimits()
        self.use_cache = cache
        self.recycle_after = recycle_after
        self.packages = packages
        self.isolation_note = PROCESS_MODE_WARNING if isolation == "process" else ""
        self._pool_lock = threading.Lock()
        self._idle: queue.Queue[SandboxWorker] = queue.Queue()
        self._all: list[SandboxWorker] = []
        self._uids_used: set[int] = set()
        self._threads = ThreadPoolExecutor(self.workers, thread_name_prefix="pairrl-exec")
        self._cache: dict[tuple[str, str, tuple[Any, ...]], ExecResult] = {}
        self._compiled: dict[str, CompiledAssertTests] = {}
        self._expected: dict[str, list[CallOutput]] = {}
        self._task_limits: dict[str, float] = {}
        self._task_locks: dict[str, threading.Lock] = {}
        self._closed = False
        # Start one worker now so that a missing sandbox fails here, not mid-batch.
        self._idle.put(self._new_worker(0))

    # ------------------------------------------------------------ worker pool
    def _new_worker(self, slot: int) -> SandboxWorker:
        worker = SandboxWorker(self.isolation, slot, self.limits, self.packages)
        worker.start()
        with self._pool_lock:
            self._all.append(worker)
            if worker.uid is not None:
                self._uids_used.add(worker.uid)
        return worker

    def _take(self) -> SandboxWorker:
        worker = self._take_any()
        # A worker that died while idle (the OOM killer, an operator's signal) is replaced
        # before use: no job may fail on a channel that closed before the job began.
        return worker if worker.alive() else self._replace(worker)

    def _take_any(self) -> SandboxWorker:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        with self._pool_lock:
            started = len(self._all)
            used_slots = {w.slot for w in self._all}
        if started < self.workers:
            slot = min(set(range(self.workers)) - used_slots)
            return self._new_worker(slot)
        return self._idle.get()

    def _retire(self, worker: SandboxWorker) -> None:
        worker.kill()
        with self._pool_lock:
            self._all.remove(worker)

    def _replace(self, worker: SandboxWorker) -> SandboxWorker:
        self._retire(worker)
        return self._new_worker(worker.slot)

    def _give_back(self, worker: SandboxWorker, healthy: bool) -> None:
        if healthy and worker.alive() and worker.jobs_served < self.recycle_after:
            self._idle.put(worker)
        elif self._closed:
            self._retire(worker)
        else:
            self._idle.put(self._replace(worker))

    def sandbox_uids(self) -> set[int]:
        """Host uids of every worker this executor started (to audit the process table)."""
        with self._pool_lock:
            return set(self._uids_used)

    def worker_pids(self) -> set[int]:
        """Host pids of the live workers' top processes (bubblewrap, or the bare worker)."""
        with self._pool_lock:
            return {w.proc.pid for w in self._all if w.proc is not None}

    def close(self) -> None:
        """Stop every worker (and every process in their namespaces)."""
        self._closed = True
        self._threads.shutdown(wait=True)
        with self._pool_lock:
            workers = list(self._all)
            self._all.clear()
        for worker in workers:
            worker.kill()

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ public API
    def run(
        self, jobs: Sequence[ExecJob], on_result: ResultCallback | None = None
    ) -> list[ExecResult]:
        """Judge every job; results in job order."""
        return self.submit(jobs, on_result).result()

    async def arun(
        self, jobs: Sequence[ExecJob], on_result: ResultCallback | None = None
    ) -> list[ExecResult]:
        """Async form of :meth:`run`; the event loop keeps running while the sandbox works."""
        return await asyncio.wrap_future(self.submit(jobs, on_result))

    def submit(
        self, jobs: Sequence[ExecJob], on_result: ResultCallback | None = None
    ) -> Future[list[ExecResult]]:
        """Start judging ``jobs`` and return at once; the future holds results in job order."""
        if self._closed:
            raise RuntimeError("executor is closed")
        batch: Future[list[ExecResult]] = Future()
        results: list[ExecResult | None] = [None] * len(jobs)
        if not jobs:
            batch.set_result([])
            return batch
        # With the cache on, identical (code, tests) pairs in one batch run once and the
        # copies share the verdict; with it off, every job runs.
        groups: dict[object, list[int]] = {}
        for index, job in enumerate(jobs):
            key = self._key(job) if self.use_cache else index
            groups.setdefault(key, []).append(index)
        remaining = [len(groups)]
        lock = threading.Lock()

        def finish(indices: list[int], future: Future[ExecResult]) -> None:
            try:
                first = future.result()
            except BaseException as exc:  # a bug, not a verdict: surface it
                if not batch.done():
                    batch.set_exception(exc)
                return
            for rank, index in enumerate(indices):
                job = jobs[index]
                result = replace(
                    first,
                    task_id=job.task.task_id,
                    candidate_id=job.candidate_id,
                    cached=first.cached or rank > 0,
                )
                results[index] = result
                if on_result is not None:
                    on_result(result)
            with lock:
                remaining[0] -= 1
                done = remaining[0] == 0
            if done and not batch.done():
                batch.set_result([r for r in results if r is not None])

        for indices in groups.values():
            future = self._threads.submit(self.judge_one, jobs[indices[0]])
            future.add_done_callback(lambda f, idx=indices: finish(idx, f))
        return batch

    def _key(self, job: ExecJob) -> tuple[str, str, tuple[Any, ...]]:
        code_hash = hashlib.sha256((job.code or "").encode()).hexdigest()
        limits = (self.timeout_s, self.time_limit, self.limit_factor, self.limit_floor_s)
        return code_hash, job.task.tests_digest(), limits

    def judge_one(self, job: ExecJob) -> ExecResult:
        """Judge one candidate (blocking), using and filling the cache."""
        started = time.monotonic()
        if job.code is None or not job.code.strip():
            return make_result(job.task, job.candidate_id, (0, 0, "no_code", "no code"), started)
        key = self._key(job)
        if self.use_cache and key in self._cache:
            return replace(
                self._cache[key],
                task_id=job.task.task_id,
                candidate_id=job.candidate_id,
                cached=True,
            )
        result: ExecResult | None = None
        reason = ""
        for _attempt in range(2):
            try:
                result = self._judge_fresh(job, started)
                break
            except (InfrastructureError, SandboxUnavailable) as exc:
                reason = str(exc)
        if result is None:
            return make_result(
                job.task, job.candidate_id, (0, 0, "sandbox_error", reason[:300]), started
            )
        if self.use_cache:
            self._cache[key] = result
        return result

    # ------------------------------------------------------------ judging
    def _task_lock(self, digest: str) -> threading.Lock:
        with self._pool_lock:
            return self._task_locks.setdefault(digest, threading.Lock())

    def _compiled_tests(self, task: Task, spec: AssertTests) -> CompiledAssertTests:
        digest = task.tests_digest()
        with self._task_lock(digest):
            if digest not in self._compiled:
                # A setup that loops must not hold this task's lock (and a thread) forever.
                setup_limit = max(self.timeout_s, SETUP_LIMIT_S)
                self._compiled[digest] = CompiledAssertTests(task, spec, setup_limit)
            return self._compiled[digest]

    def expected_outputs(self, task: Task) -> list[CallOutput]:
        """The canonical solution's outputs on the task's inputs, computed once per task."""
        assert isinstance(task.tests, IOTests)
        digest = task.tests_digest()
        with self._task_lock(digest):
            if digest not in self._expected:
                if not task.canonical_solution:
                    raise ValueError(
                        f"task {task.task_id}: input/output tests need a canonical solution"
                    )
                self._expected[digest] = self.call_outputs(
                    task.canonical_solution,
                    task.entry_point,
                    list(task.tests.inputs),
                    timeout_s=max(self.timeout_s, 10.0),
                )
            return self._expected[digest]

    def _input_limits(self, expected: Sequence[CallOutput]) -> list[float] | None:
        """Per-input limits from the reference's call times (reference mode), else None."""
        if self.time_limit != "reference":
            return None
        return [reference_limit(e.wall_s, self.limit_factor, self.limit_floor_s) for e in expected]

    def task_limit(self, task: Task) -> float:
        """The wall limit of one assert-tests run or one stdin case of ``task``."""
        if self.time_limit != "reference" or not task.canonical_solution:
            return self.timeout_s
        if isinstance(task.tests, IOTests):
            limits = self._input_limits(self.expected_outputs(task)) or [self.timeout_s]
            return min(60.0, sum(limits)) + 2.0  # EvalPlus's deadline for a whole run
        digest = task.tests_digest()
        with self._task_lock(digest + ":limit"):
            if digest not in self._task_limits:
                self._task_limits[digest] = self._measure_reference(task)
            return self._task_limits[digest]

    def _measure_reference(self, task: Task) -> float:
        """Time the reference solution on the task's tests (the slowest stdin case); the
        fixed limit when the reference fails them."""
        assert task.canonical_solution is not None
        probe = ExecJob(task, task.canonical_solution, "reference")
        spec = task.tests
        worker = self._take()
        healthy = False
        try:
            generous = max(self.timeout_s, 10.0)
            if isinstance(spec, StdioTests):
                slowest = 0.0
                for stdin, expected in spec.cases:
                    t0 = time.monotonic()
                    session = CandidateSession(worker, probe.code or "", generous)
                    status, _ = run_stdio_case(session, stdin, expected)
                    session.end()
                    if status is not None:
                        healthy = True
                        return self.timeout_s
                    slowest = max(slowest, time.monotonic() - t0)
                measured = slowest
            else:
                assert isinstance(spec, AssertTests)
                t0 = time.monotonic()
                session = CandidateSession(worker, probe.code or "", generous)
                session.load(wait=False)
                counts = self._compiled_tests(task, spec).run(session)
                measured = time.monotonic() - t0
                session.end(wait=False)
                if counts[2] is not None:
                    healthy = True
                    return self.timeout_s
            healthy = True
        finally:
            self._give_back(worker, healthy)
        return reference_limit(measured, self.limit_factor, self.limit_floor_s)

    def _judge_fresh(self, job: ExecJob, started: float) -> ExecResult:
        spec = job.task.tests
        assert job.code is not None
        expected = self.expected_outputs(job.task) if isinstance(spec, IOTests) else None
        compiled = self._compiled_tests(job.task, spec) if isinstance(spec, AssertTests) else None
        limit = self.task_limit(job.task)
        worker = self._take()
        healthy = False
        try:
            if isinstance(spec, StdioTests):
                counts = self._run_stdio(worker, job.code, spec, limit)
            else:
                session = CandidateSession(worker, job.code, limit)
                session.load(wait=False)  # the first call reads the load's answer
                if compiled is not None:
                    counts = compiled.run(session)
                else:
                    assert isinstance(spec, IOTests) and expected is not None
                    limits = self._input_limits(expected)
                    counts = run_io_tests(session, job.task, spec, expected, limits)
                load_failure = session.settle()
                if load_failure is not None and counts[2] is None:
                    # Tests that never called the candidate cannot pass a program that failed to load.
                    counts = (counts[0], 0, load_failure.status, load_failure.reason)
                session.end(wait=False)  # checked when this worker is next used
                healthy = True
            healthy = healthy or isinstance(spec, StdioTests)
        finally:
            self._give_back(worker, healthy)
        return make_result(job.task, job.candidate_id, counts, started)

    def _run_stdio(
        self, worker: SandboxWorker, code: str, spec: StdioTests, limit: float
    ) -> tuple[int, int, str | None, str | None]:
        n_passed = 0
        for index, (stdin, expected) in enumerate(spec.cases):
            session = CandidateSession(worker, code, limit)
            status, reason = run_stdio_case(session, stdin, expected)
            report = session.end()
            if report.get("dirty") or report.get("survivors"):
                raise InfrastructureError("stdio candidate left files or processes")
            if status is not None:
                return len(spec.cases), n_passed, status, f"case {index}: {reason}"
            n_passed += 1
        return len(spec.cases), n_passed, None, None

    def call_outputs(
        self,
        code: str,
        entry_point: str,
        inputs: Sequence[Sequence[Any]],
        timeout_s: float | None = None,
    ) -> list[CallOutput]:
        """Run ``entry_point(*args)`` of ``code`` on each input; plain values or failures.

        Each call has its own deadline (``timeout_s``, default the executor's); after a
        call that kills the candidate the program is loaded afresh for the next input.
        For output-clustering selection and for expected outputs of canonical solutions.
        """
        worker = self._take()
        healthy = False
        try:
            outputs, healthy = call_outputs_on(
                worker, code, entry_point, inputs, timeout_s or self.timeout_s
            )
        finally:
            self._give_back(worker, healthy)
        return outputs
