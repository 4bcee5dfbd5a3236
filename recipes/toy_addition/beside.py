"""The main job's second process: the warm start's benchmark runs and the baselines, beside
the main run's training.

A benchmark run on a tiny model is mostly Python and gains nothing from a second thread,
and an RL run gains little (docs/experiments.md, "Wall time of the main job"), so on a CPU
machine the main job runs as two processes, each on half the threads: this one trains the
run's own mode and evaluates it, and takes the other's threads back once that one is done
(``ThreadsBack``); the other evaluates the warm start, then trains each baseline from it
and evaluates those, then runs the run's own model's shared-pool evaluation beside that
model's own one. Every run seeds itself, and a judge's samples do not depend on the batch
they are drawn in, so the numbers are those of running everything one after the other
(``side_by_side: false``; the main job's test checks that both sample and judge the same).
Both processes' bars share one display.
"""

from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from pairrl.recipes.toy_addition.config import ToyAdditionOptions
from pairrl.recipes.toy_addition.experiment import (
    SHARED_POOL_MODEL,
    evaluate_models,
    evaluate_own,
    evaluate_shared_pool,
    train_baselines,
)

__all__ = ["Beside", "ThreadsBack", "lane_threads"]


def lane_threads(options: ToyAdditionOptions) -> tuple[int, int] | None:
    """(this process's, the second's) threads when the main job runs as two, else None (one
    after the other): ``side_by_side`` on, a CPU run of one process, two or more threads."""
    import torch

    accelerator = torch.cuda.is_available() or torch.backends.mps.is_available()
    if not options.side_by_side or accelerator or not options.baselines:
        return None
    from accelerate import PartialState

    if PartialState().num_processes > 1:
        return None
    threads = torch.get_num_threads()
    return (threads - threads // 2, threads // 2) if threads >= 2 else None


class Beside:
    """Context for the main job's training: the second process's work, or (one process)
    the same work done on demand in this one. ``warm_start_evals`` and ``baselines`` return
    what ``evaluate_models`` and ``train_baselines`` would."""

    def __init__(
        self, cfg: Any, options: ToyAdditionOptions, run_dir: Path, warm_start_dir: Path
    ) -> None:
        self.cfg, self.options = cfg, options
        self.run_dir, self.warm_start_dir = run_dir, warm_start_dir
        self.threads = lane_threads(options)
        self._stack = ExitStack()
        self._pool: ProcessPoolExecutor | None = None
        self._warm: Future[Any] | None = None
        self._rest: Future[Any] | None = None
        self._restore_threads: int | None = None
        self._threads_back: ThreadsBack | None = None  # set when a second process works
        self.side_by_side = False  # whether a second process does the work

    def __enter__(self) -> Beside:
        if self.threads is not None:
            try:
                self._start(*self.threads)
            except BaseException:
                self._shutdown(terminate=True)
                raise
        return self

    def _start(self, mine: int, theirs: int) -> None:
        import multiprocessing

        import torch

        from pairrl.progress import board

        shared = self._stack.enter_context(board())
        link = shared.link() if shared is not None else None
        self._restore_threads = torch.get_num_threads()
        torch.set_num_threads(mine)
        self._pool = ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_lane,
            initargs=(link, theirs, self.cfg.logging.console == "progress"),
        )
        self.side_by_side = True
        threads_back = ThreadsBack(threading.Event(), self._restore_threads)
        self._threads_back = threads_back
        args = (self.cfg, self.options, self.run_dir)
        self._warm = self._pool.submit(
            evaluate_models, *args, {SHARED_POOL_MODEL: self.warm_start_dir}
        )
        self._rest = self._pool.submit(_baselines_lane, *args, self.warm_start_dir)
        for future in (self._warm, self._rest):
            future.add_done_callback(_report_failure)
        self._rest.add_done_callback(lambda _: threads_back.lane_done.set())

    def trainer_callbacks(self) -> list[Any]:
        """Callbacks for the run's trainer: once the second process has finished, training
        takes back its threads (``ThreadsBack``); none when one process does everything."""
        return [] if self._threads_back is None else [self._threads_back]

    @property
    def threads_back_at_step(self) -> int | None:
        """The training step that began with the second process's threads back, if any."""
        return None if self._threads_back is None else self._threads_back.at_step

    def warm_start_evals(self) -> dict[str, dict[str, Any]]:
        """The warm start's two benchmark summaries (its own candidates, the shared pool)."""
        if self._warm is not None:
            return self._warm.result()
        return evaluate_models(
            self.cfg, self.options, self.run_dir, {SHARED_POOL_MODEL: self.warm_start_dir}
        )

    def final_evals(self, name: str, model_dir: Path) -> dict[str, dict[str, Any]]:
        """The run's own model's two benchmark summaries (its own candidates, the shared
        pool). With a second process, the shared-pool run goes there (idle by then, or once
        the baselines are done), in a cache of its own, while this process runs the own run
        on one thread (the other is that process's); else both here, one after the other."""
        if self._pool is None:
            return evaluate_models(self.cfg, self.options, self.run_dir, {name: model_dir})
        import torch

        args = (self.cfg, self.options, self.run_dir, name, model_dir)
        shared = self._pool.submit(evaluate_shared_pool, *args, cache_apart=True)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # three threads on two cores are slower than two
        try:
            own = evaluate_own(*args)
        finally:
            torch.set_num_threads(threads)
        return {name: own, f"{name}-shared": shared.result()}

    def baselines(self) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        """(``train_baselines``'s result, the baselines' benchmark summaries)."""
        if self._rest is not None:
            return self._rest.result()
        return _baselines_lane(self.cfg, self.options, self.run_dir, self.warm_start_dir)

    def close(self) -> None:
        """Close the second process (its work collected) and the shared display."""
        self._shutdown(terminate=False)

    def __exit__(self, *_: object) -> None:
        # Still open here: training failed or was interrupted, so the work is not wanted.
        self._shutdown(terminate=True)

    def _shutdown(self, terminate: bool) -> None:
        try:
            if self._pool is not None:
                if terminate:
                    # SIGKILL: a baseline run would take SIGTERM as "checkpoint, then stop".
                    # (The executor has no public way to stop a running task before 3.14.)
                    for process in list(getattr(self._pool, "_processes", {}).values()):
                        process.kill()
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool = None
        finally:
            if self._restore_threads is not None:
                import torch

                torch.set_num_threads(self._restore_threads)
                self._restore_threads = None
            self._stack.close()


class ThreadsBack(TrainerCallback):
    """At the first training step to begin after ``lane_done`` is set, sets this process's
    torch threads to ``threads`` (``at_step``: that step).

    Called on the training thread (a thread count is per thread), and never before the
    second process is done: three threads on two cores are much slower than two. Thread
    counts do not change this model's floats, so the run's numbers stay the same.
    """

    def __init__(self, lane_done: threading.Event, threads: int) -> None:
        self.lane_done, self.threads = lane_done, threads
        self.at_step: int | None = None

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.at_step is None and self.lane_done.is_set():
            import torch

            torch.set_num_threads(self.threads)
            self.at_step = state.global_step


def _report_failure(future: Future[Any]) -> None:
    """Say at once that the second process failed (its error is raised when collected)."""
    if not future.cancelled() and future.exception() is not None:
        print(
            f"the main job's second process failed ({future.exception()!r}); its error is "
            "raised when training ends",
            file=sys.stderr,
        )


def _start_lane(link: Any, threads: int, quiet: bool) -> None:
    """The second process's start: its bars and prints on the main display (attached
    first, so that the libraries' log handlers write to the forwarded streams), its share
    of the threads, glibc's memory reuse as in the ``pairrl`` command."""
    from pairrl.memory import reuse_freed_memory

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


def _baselines_lane(
    cfg: Any, options: ToyAdditionOptions, run_dir: Path, warm_start_dir: Path
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Train the baselines from the warm start and evaluate each (the pool exists by now)."""
    baselines = train_baselines(cfg, options, run_dir, warm_start_dir)
    models = {name: b["final_dir"] for name, b in baselines.items()}
    return baselines, evaluate_models(cfg, options, run_dir, models)
