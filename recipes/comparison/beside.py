"""The main job's second process: the warm start's benchmark runs and the baselines, beside
the main run's training.

A benchmark run on a tiny model is mostly Python and gains nothing from a second thread,
and an RL run gains little (docs/experiments.md, "Wall time of the main job"), so on a CPU
machine the main job runs as two processes, each on its share of the threads: this one
trains the run's own mode and evaluates it; the other evaluates the warm start, then trains
each baseline from it and evaluates those, then runs the run's own model's shared-pool
evaluation beside that model's own one.

Each kind of work runs on a thread count fixed before the run (``ThreadPlan``), never
changed when the other process happens to finish: a CPU's kernels may round differently on
one thread and on two, so a count that followed timing would make a seed's numbers depend
on it. One process (``side_by_side: false``) does the same work one piece after the other
on the same thread counts, so its numbers are those of the two processes, bit for bit
(the main job's test compares both). Both processes' bars share one display.

A stop (SIGTERM to the main process or to every process of the job, Ctrl-C) is decided by
the main process and passed on to the second one, whose baseline training, if any, saves a
checkpoint at the end of its step; the next launch continues that baseline from there.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pairrl.recipes.comparison.experiment import (
    SHARED_POOL_MODEL,
    evaluate_models,
    evaluate_own,
    evaluate_shared_pool,
    train_baselines,
)
from pairrl.recipes.comparison.options import ComparisonOptions
from pairrl.train.checkpoint_on_signal import (
    STOP_REQUEST,
    StopRequested,
    forget_stops,
    forward_stops,
    stop_received,
    stops_from_parent,
    task_of_the_job,
)
from pairrl.train.config import TrainConfig

__all__ = ["Beside", "ThreadPlan", "thread_plan"]

T = TypeVar("T")


@dataclass(frozen=True)
class ThreadPlan:
    """The torch threads of each kind of work, fixed before the run: ``training`` for the
    run's own training and its own benchmark run, ``beside`` for the other work (the warm
    start's runs, the baselines, the final model's shared-pool run)."""

    training: int
    beside: int


def thread_plan(options: ComparisonOptions) -> ThreadPlan | None:
    """The plan when the main job has work beside training on a CPU run of one process
    with two or more threads (half each, the odd one to training), else None: everything
    on the threads the process has. ``side_by_side`` does not change it."""
    import torch

    accelerator = torch.cuda.is_available() or torch.backends.mps.is_available()
    if accelerator or not options.baselines:
        return None
    from accelerate import PartialState

    if PartialState().num_processes > 1:
        return None
    threads = torch.get_num_threads()
    return ThreadPlan(threads - threads // 2, threads // 2) if threads >= 2 else None


@contextmanager
def _threads(count: int | None) -> Iterator[None]:
    """Torch on ``count`` threads inside (unchanged for None)."""
    import torch

    before = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class Beside:
    """Context for the main job's training: training on the plan's threads, and the work
    beside it done by a second process (``side_by_side``) or, in one process, on demand
    here on the threads it would have had there. ``warm_start_evals`` and ``baselines``
    return what ``evaluate_models`` and ``train_baselines`` would."""

    def __init__(
        self, cfg: TrainConfig, options: ComparisonOptions, run_dir: Path, warm_start_dir: Path
    ) -> None:
        self.cfg, self.options = cfg, options
        self.run_dir, self.warm_start_dir = run_dir, warm_start_dir
        self.plan = thread_plan(options)
        self._stack = ExitStack()
        self._pool: ProcessPoolExecutor | None = None
        self._warm: Future[Any] | None = None
        self._rest: Future[Any] | None = None
        self.side_by_side = False  # whether a second process does the work

    @property
    def threads(self) -> dict[str, int] | None:
        """The thread plan as the summary records it."""
        return None if self.plan is None else vars(self.plan).copy()

    def __enter__(self) -> Beside:
        forget_stops()  # (a stop before this point never gets here: it raised)
        try:
            if self.plan is not None:
                self._stack.enter_context(_threads(self.plan.training))
                if self.options.side_by_side:
                    self._start(self.plan.beside)
        except BaseException:
            self._shutdown(terminate=True)
            raise
        return self

    def _start(self, theirs: int) -> None:
        import multiprocessing

        from pairrl.progress import board

        shared = self._stack.enter_context(board())
        link = shared.link() if shared is not None else None
        self._pool = ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_lane,
            initargs=(os.getpid(), link, theirs, self.cfg.logging.console == "progress"),
        )
        self.side_by_side = True
        args = (self.cfg, self.options, self.run_dir)
        self._warm = self._pool.submit(
            _lane_task, evaluate_models, *args, {SHARED_POOL_MODEL: self.warm_start_dir}
        )
        self._rest = self._pool.submit(_lane_task, _baselines_lane, *args, self.warm_start_dir)
        for future in (self._warm, self._rest):
            future.add_done_callback(_report_failure)
        # the second process ignores the job's SIGTERM and Ctrl-C: this one passes its stop
        # on at once, and a baseline training there checkpoints beside this one's training
        self._stack.enter_context(forward_stops(self._lane_pids()))

    def _lane_processes(self) -> list[Any]:
        # (the executor has no public view of its processes)
        return list((getattr(self._pool, "_processes", None) or {}).values())

    def _lane_pids(self) -> list[int]:
        return [process.pid for process in self._lane_processes()]

    def _here(self, work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``work`` in this process, on the threads the second process would give it."""
        with _threads(None if self.plan is None else self.plan.beside):
            return work(*args, **kwargs)

    def warm_start_evals(self) -> dict[str, dict[str, Any]]:
        """The warm start's two benchmark summaries (its own candidates, the shared pool)."""
        if self._warm is not None:
            return self._warm.result()
        models = {SHARED_POOL_MODEL: self.warm_start_dir}
        return self._here(evaluate_models, self.cfg, self.options, self.run_dir, models)

    def final_evals(self, name: str, model_dir: Path) -> dict[str, dict[str, Any]]:
        """The run's own model's two benchmark summaries (its own candidates, the shared
        pool). The own run here on the training threads; the shared-pool run, in a cache of
        its own, on the second process (idle by then, or once the baselines are done) or,
        in one process, here after it on the threads it would have had there."""
        args = (self.cfg, self.options, self.run_dir, name, model_dir)
        if self._pool is None:
            own = evaluate_own(*args)
            shared = self._here(evaluate_shared_pool, *args, cache_apart=True)
            return {name: own, f"{name}-shared": shared}
        pending = self._pool.submit(_lane_task, evaluate_shared_pool, *args, cache_apart=True)
        own = evaluate_own(*args)
        return {name: own, f"{name}-shared": pending.result()}

    def baselines(self) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        """(``train_baselines``'s result, the baselines' benchmark summaries)."""
        if self._rest is not None:
            return self._rest.result()
        args = (self.cfg, self.options, self.run_dir, self.warm_start_dir)
        return self._here(_baselines_lane, *args)

    def close(self) -> None:
        """Close the second process (its work collected) and the shared display."""
        self._shutdown(terminate=False)

    def __exit__(self, *_: object) -> None:
        # Still open here: training failed or was interrupted, so the work is not wanted.
        self._shutdown(terminate=True)

    def _shutdown(self, terminate: bool) -> None:
        """Close the second process. ``terminate``: its work is not wanted. After a stop
        signal it is asked to stop (a baseline it trains checkpoints at the end of its step,
        other work ends at once) and waited for; after a failure it is killed."""
        try:
            if self._pool is not None:
                processes = self._lane_processes()
                stopping = stop_received() is not None
                for process in processes if terminate else ():
                    if stopping:  # sent again: one it took already is not taken twice
                        with contextlib.suppress(OSError):
                            os.kill(process.pid, STOP_REQUEST)
                    else:  # (the executor has no public way to stop a task before 3.14)
                        process.kill()
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool = None
        finally:
            self._stack.close()


def _report_failure(future: Future[Any]) -> None:
    """Say at once that the second process failed (its error is raised when collected);
    not when it stopped because the job was asked to stop."""
    if future.cancelled() or stop_received() is not None:
        return
    if future.exception() is not None and not isinstance(future.exception(), StopRequested):
        print(
            f"the main job's second process failed ({future.exception()!r}); its error is "
            "raised when training ends",
            file=sys.stderr,
        )


def _start_lane(parent: int, link: Any, threads: int, quiet: bool) -> None:
    """The second process's start: it ends with ``parent`` (the job) and takes its stops
    from it (``stops_from_parent``: a baseline it trains checkpoints), its bars and prints
    on the main display (attached first, so that the libraries' log handlers write to the
    forwarded streams), its share of the threads, glibc's memory reuse as in
    ``pairrl train``."""
    from pairrl.child_process import die_with_parent
    from pairrl.memory import reuse_freed_memory

    die_with_parent(parent)
    stops_from_parent()
    reuse_freed_memory()
    if link is not None:
        from pairrl.progress import attach

        attach(link)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch

    torch.set_num_threads(threads)
    if quiet:
        from pairrl.train.run import quiet_libraries

        quiet_libraries()


def _lane_task(work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``work`` in the second process, as a task the main process's stop request ends."""
    with task_of_the_job():
        return work(*args, **kwargs)


def _baselines_lane(
    cfg: TrainConfig, options: ComparisonOptions, run_dir: Path, warm_start_dir: Path
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Train the baselines from the warm start and evaluate each (the pool exists by now)."""
    baselines = train_baselines(cfg, options, run_dir, warm_start_dir)
    models = {name: b["final_dir"] for name, b in baselines.items()}
    return baselines, evaluate_models(cfg, options, run_dir, models)
