"""Checkpoint and stop when asked to end: SIGTERM (Slurm's time limit, pre-emption,
`scancel`, `timeout`, `kill`) or SIGINT (Ctrl-C).

The rendered sbatch script (pairrl.slurm.render) sends SIGTERM to every trainer process a
few minutes before the time limit, and Slurm sends SIGTERM on preemption or `scancel`.
`CheckpointOnSignal` turns that into "finish the current optimiser step, save a
checkpoint, stop", so the requeued job resumes with `--resume` and loses nothing.

The signal handler only records the signal (nothing else is safe there). At the end of
each step the flag is agreed across processes (max over ranks) before anyone acts on it:
signals reach ranks at slightly different moments, and a rank that saved and stopped a
step before the others would leave them waiting in a collective forever.

A step that does not end must not keep the process alive: a second signal, or the grace
period (``grace_s``; default ``PAIRRL_STOP_GRACE_S`` seconds, else 600) passing without
the step ending, stops the process at once with exit status 128 + the signal's number
(143 for SIGTERM, 130 for SIGINT), without a checkpoint; the last periodic checkpoint
stays the one to resume from.

Wire it in with `trainer.add_callback(CheckpointOnSignal())` before `trainer.train()`.

Outside a training step (loading, the warm start, the benchmark after training) there is
no step to finish: :func:`stop_raises` turns SIGTERM into :class:`StopRequested` there, as
Python turns Ctrl-C into ``KeyboardInterrupt``, so that the stages' own cleanup runs (pools
and sandboxes shut down) and the command reports the stop in one line.

A worker process that trains for the job (the second lane of a side-by-side run) takes its
stops from the main process only (:func:`stops_from_parent`): it ignores SIGTERM and
SIGINT, which Slurm and a terminal send to every process of the job, and stops at the end
of its step on :data:`STOP_REQUEST`, which the main process sends it (:func:`forward_stops`)
as soon as it is asked to stop itself, whether the signal reached the main process alone or
every process. One decision, one request: a worker never mistakes the job's signal and the
main process's request for two signals ("stop at once, without a checkpoint").
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

__all__ = [
    "DEFAULT_GRACE_S",
    "GRACE_ENV",
    "STOP_REQUEST",
    "CheckpointOnSignal",
    "StopRequested",
    "forget_stops",
    "forward_stops",
    "grace_from_env",
    "stop_raises",
    "stop_received",
    "stops_from_parent",
    "task_of_the_job",
]

GRACE_ENV = "PAIRRL_STOP_GRACE_S"
# Long enough for a large model's step to end and checkpoint; a bound, not a wait.
DEFAULT_GRACE_S = 600.0
# What the main process sends a worker that trains for the job: "stop after this step".
STOP_REQUEST = signal.SIGUSR1

_stop_signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT)  # what stops this process
_received: list[int] = []  # the stop signals this process has received
_forward_to: set[int] = set()  # workers told at once when this process is asked to stop
_worker_pid: int | None = None  # set in a worker that takes its stops from its parent
_task_running = False  # in such a worker: a task of the job runs (a request raises there)


def grace_from_env() -> float:
    """Seconds a signalled run may take to end its step: ``PAIRRL_STOP_GRACE_S``, else 600."""
    raw = os.environ.get(GRACE_ENV, "").strip()
    if not raw:
        return DEFAULT_GRACE_S
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if value > 0:
        return value
    _say(f"warning: {GRACE_ENV}={raw!r} is not a positive number of seconds; using 600")
    return DEFAULT_GRACE_S


def _say(text: str) -> None:
    """One line on stderr by a raw write: safe in a signal handler and from any thread,
    where print could meet a stream the interrupted code was writing."""
    with contextlib.suppress(OSError):
        os.write(2, f"[pairrl] {text}\n".encode())


def _stop_now(signum: int, why: str, flush: bool) -> None:
    """End the process at once with status 128 + ``signum``, as a shell reports a process
    the signal killed; no cleanup runs (a stuck step would block it). ``flush``: write out
    what Python still buffers first (the main thread only: another thread could wait
    forever on a stream that the stuck step holds)."""
    _say(
        f"{why}: stopping now without a checkpoint; "
        "resume from the last periodic checkpoint with --resume"
    )
    for stream in (sys.stdout, sys.stderr) if flush else ():
        with contextlib.suppress(Exception):  # a stream the interrupted code was writing
            stream.flush()
    os._exit(128 + signum)


class StopRequested(BaseException):
    """A stop signal arrived outside a training step, or a training inside a stage (a
    baseline's) was stopped at a checkpoint by one (``signum``: which)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    def __reduce__(self) -> tuple[type[StopRequested], tuple[int]]:
        return StopRequested, (self.signum,)  # raised in a worker, re-raised in the job


def _name(signum: int) -> str:
    if signum == STOP_REQUEST and STOP_REQUEST not in (signal.SIGTERM, signal.SIGINT):
        return "the main process's stop request"
    return signal.Signals(signum).name


def _note_stop(signum: int) -> None:
    """Record a stop signal and pass it on, once, to the workers that train for the job."""
    _received.append(signum)
    for pid in list(_forward_to):
        with contextlib.suppress(OSError):  # ended already
            os.kill(pid, STOP_REQUEST)


def stop_received() -> int | None:
    """The first stop signal this process received, or None."""
    return _received[0] if _received else None


def forget_stops() -> None:
    """Forget the stop signals received so far (a new command in the same process)."""
    _received.clear()


@contextlib.contextmanager
def forward_stops(pids: list[int]) -> Iterator[None]:
    """Within the block, a stop signal to this process sends :data:`STOP_REQUEST` to
    ``pids`` at once (each stops at the end of its own step, beside this one's)."""
    _forward_to.update(pids)
    try:
        yield
    finally:
        _forward_to.difference_update(pids)


def stops_from_parent() -> None:
    """In a worker process that trains for the job: SIGTERM and SIGINT do nothing here (the
    job's main process decides, and passes its stop on as :data:`STOP_REQUEST`); the first
    request raises :class:`StopRequested` inside a task (:func:`task_of_the_job`), checkpoints
    and stops a training at the end of its step, and is only recorded between tasks; a
    repeated one does nothing. Call first in the worker (a pool's initializer)."""
    global _stop_signals, _worker_pid
    _worker_pid = os.getpid()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _parent_decides)
    signal.signal(STOP_REQUEST, _take_request)
    _stop_signals = (STOP_REQUEST,)


def _parent_decides(signum: int, frame: FrameType | None) -> None:
    if os.getpid() != _worker_pid:  # a child forked from the worker: the signal's own action
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _take_request(signum: int, frame: FrameType | None) -> None:
    if _received:
        return  # the same request again: one request, one stop
    _note_stop(signum)
    if _task_running:
        raise StopRequested(signum)


@contextlib.contextmanager
def task_of_the_job() -> Iterator[None]:
    """Within the block (a worker's task), the parent's stop request raises; a request that
    came before the task starts raises at once."""
    global _task_running
    if _received:
        raise StopRequested(_received[0])
    _task_running = True
    try:
        yield
    finally:
        _task_running = False


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    if _received and signum == STOP_REQUEST:
        return  # the same request again: one request, one stop
    _note_stop(signum)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise StopRequested(signum)


@contextlib.contextmanager
def stop_raises(signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT)) -> Iterator[None]:
    """Within the block, ``signals`` raise :class:`StopRequested` in the main thread (SIGINT:
    ``KeyboardInterrupt``, as Python's own handler), passed on to the workers that train
    for the job first (a :class:`CheckpointOnSignal` takes them over while it trains, then
    gives them back)."""
    forget_stops()
    previous = {sig: signal.signal(sig, _raise_stop) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class CheckpointOnSignal(TrainerCallback):
    """On SIGTERM or SIGINT (or any given signal; in a worker process, :data:`STOP_REQUEST`
    only): save a checkpoint after this step, then stop; a second signal, or ``grace_s``
    seconds without the step ending, stops at once."""

    def __init__(
        self, signals: tuple[int, ...] | None = None, grace_s: float | None = None
    ) -> None:
        self.signals = _stop_signals if signals is None else signals
        self.grace_s = grace_from_env() if grace_s is None else grace_s
        self.received: int | None = None
        self.stopped_at_step: int | None = None
        self._previous: dict[int, Any] = {}
        self._announce = True  # only the main process speaks
        # The grace watch is a thread started with training: a handler that started one
        # could deadlock on threading's own locks, held by the code it interrupted.
        self._signalled = threading.Event()
        self._step_ended = threading.Event()

    def _record(self, signum: int, frame: FrameType | None) -> None:
        name = _name(signum)
        if self.received is not None:
            if signum == STOP_REQUEST:
                return  # the same request again: one request, one stop
            _stop_now(signum, f"{name} again", flush=True)
        self.received = signum
        _note_stop(signum)
        self._signalled.set()
        if self._announce:
            again = "" if signum == STOP_REQUEST else f"{name} again, or "
            _say(
                f"{name}: stopping at the end of this step with a checkpoint; {again}"
                f"{self.grace_s:g} s without the step ending stops at once without one"
            )

    def _watch_grace(self) -> None:
        """After the first signal, wait ``grace_s`` for the step to end, else stop at once."""
        self._signalled.wait()
        if self._step_ended.wait(self.grace_s) or self.received is None:
            return
        name = _name(self.received)
        why = f"no step ended within {self.grace_s:g} s of {name}"
        _stop_now(self.received, why, flush=False)

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        self.received, self.stopped_at_step = None, None
        self._announce = state.is_world_process_zero
        self._signalled.clear()
        self._step_ended.clear()
        threading.Thread(target=self._watch_grace, name="pairrl-stop-grace", daemon=True).start()
        for sig in self.signals:
            self._previous[sig] = signal.signal(sig, self._record)

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> TrainerControl:
        if self._agreed_stop(args):
            self._step_ended.set()  # the grace period bounds the wait for the step only
            control.should_save = True
            control.should_training_stop = True
            self.stopped_at_step = state.global_step
            name = _name(self.received) if self.received else "a signal on another rank"
            if self._announce:
                print(
                    f"[pairrl] {name}: saving a checkpoint at step {state.global_step} and stopping"
                )
        return control

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        self._step_ended.set()
        self._signalled.set()  # ends the grace watch
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous.clear()

    def _agreed_stop(self, args: TrainingArguments) -> bool:
        """True when any process has received a signal (one all-reduce per step when distributed)."""
        local = self.received is not None
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
            return local
        import torch

        flag = torch.tensor([1 if local else 0], device=args.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(flag.item())
