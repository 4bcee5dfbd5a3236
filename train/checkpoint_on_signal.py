"""Checkpoint and stop when Slurm says the job must end (SIGTERM; SIGUSR1 optionally).

The rendered sbatch script (pairrl.slurm.render) sends SIGTERM to every trainer process a
few minutes before the time limit, and Slurm sends SIGTERM on preemption or `scancel`.
`CheckpointOnSignal` turns that into "finish the current optimiser step, save a
checkpoint, stop", so the requeued job resumes with `--resume` and loses nothing.

The signal handler only records the signal (nothing else is safe there). At the end of
each step the flag is agreed across processes (max over ranks) before anyone acts on it:
signals reach ranks at slightly different moments, and a rank that saved and stopped a
step before the others would leave them waiting in a collective forever.

Wire it in with `trainer.add_callback(CheckpointOnSignal())` before `trainer.train()`.
"""

from __future__ import annotations

import signal
from types import FrameType
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

__all__ = ["CheckpointOnSignal"]


class CheckpointOnSignal(TrainerCallback):
    """On SIGTERM (and any other given signal): save a checkpoint after this step, then stop."""

    def __init__(self, signals: tuple[int, ...] = (signal.SIGTERM,)) -> None:
        self.signals = signals
        self.received: int | None = None
        self.stopped_at_step: int | None = None
        self._previous: dict[int, Any] = {}

    def _record(self, signum: int, frame: FrameType | None) -> None:
        self.received = signum

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        for sig in self.signals:
            self._previous[sig] = signal.signal(sig, self._record)

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> TrainerControl:
        if self._agreed_stop(args):
            control.should_save = True
            control.should_training_stop = True
            self.stopped_at_step = state.global_step
            name = (
                signal.Signals(self.received).name if self.received else "a signal on another rank"
            )
            print(f"[pairrl] {name}: saving a checkpoint at step {state.global_step} and stopping")
        return control

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
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
