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
    "CheckpointOnSignal",
    "StopRequested",
    "grace_from_env",
    "stop_raises",
]

GRACE_ENV = "PAIRRL_STOP_GRACE_S"
# Long enough for a large model's step to end and checkpoint; a bound, not a wait.
DEFAULT_GRACE_S = 600.0


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
    """A stop signal arrived outside a training step (``signum``: which)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise StopRequested(signum)


@contextlib.contextmanager
def stop_raises(signals: tuple[int, ...] = (signal.SIGTERM,)) -> Iterator[None]:
    """Within the block, ``signals`` raise :class:`StopRequested` in the main thread (a
    :class:`CheckpointOnSignal` takes them over while it trains, then gives them back)."""
    previous = {sig: signal.signal(sig, _raise_stop) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class CheckpointOnSignal(TrainerCallback):
    """On SIGTERM or SIGINT (or any given signal): save a checkpoint after this step, then
    stop; a second signal, or ``grace_s`` seconds without the step ending, stops at once."""

    def __init__(
        self,
        signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT),
        grace_s: float | None = None,
    ) -> None:
        self.signals = signals
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
        name = signal.Signals(signum).name
        if self.received is not None:
            _stop_now(signum, f"{name} again", flush=True)
        self.received = signum
        self._signalled.set()
        if self._announce:
            _say(
                f"{name}: stopping at the end of this step with a checkpoint; {name} again, "
                f"or {self.grace_s:g} s without the step ending, stops at once without one"
            )

    def _watch_grace(self) -> None:
        """After the first signal, wait ``grace_s`` for the step to end, else stop at once."""
        self._signalled.wait()
        if self._step_ended.wait(self.grace_s) or self.received is None:
            return
        name = signal.Signals(self.received).name
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
            name = (
                signal.Signals(self.received).name if self.received else "a signal on another rank"
            )
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
