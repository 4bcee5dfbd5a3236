"""A W&B failure inside a step turns W&B logging off and the run goes on.

Slurm stops a job with SIGTERM to all its processes; W&B's helper process can die first,
and the next ``wandb.log`` raises inside the step. ``TolerantWandb`` takes that failure:
one warning, ``report_to`` without "wandb" (TRL's completions table reads it), no more
W&B calls, nothing raised.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from transformers import TrainerControl, TrainerState
from transformers.integrations import WandbCallback

from pairrl.train.tolerant_wandb import TolerantWandb, use_tolerant_wandb


class DeadHelper:
    """Stands for the wandb module once wandb-core is gone: every log raises."""

    def __init__(self) -> None:
        self.calls = 0
        self.run = SimpleNamespace(summary={})

    def log(self, *args: object, **kwargs: object) -> None:
        self.calls += 1
        raise ConnectionResetError(104, "Connection reset by peer")


def test_a_failing_log_turns_wandb_off_once_and_raises_nothing(capsys, monkeypatch) -> None:
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)  # the failure replaces it
    callback = TolerantWandb()
    dead = DeadHelper()
    callback._wandb, callback._initialized = dead, True
    args = SimpleNamespace(report_to=["wandb", "trackio"])
    state, control = TrainerState(), TrainerControl()
    assert callback.on_log(args, state, control, logs={"loss": 1.0}) is None
    assert callback.on_log(args, state, control, logs={"loss": 0.5}) is None
    assert dead.calls == 1  # the second step does not call W&B again
    assert args.report_to == ["trackio"]
    assert callback.failure == "ConnectionResetError: [Errno 104] Connection reset by peer"
    err = capsys.readouterr().err
    assert err.count("warning: W&B logging failed (ConnectionResetError") == 1


def test_the_trainers_wandb_callback_is_swapped_for_the_tolerant_one() -> None:
    """Still a WandbCallback, so transformers and TRL treat it as the W&B integration."""
    assert issubclass(TolerantWandb, WandbCallback)
    trainer_callbacks: list[object] = [WandbCallback(), object()]

    class Trainer:
        def pop_callback(self, kind: type) -> object | None:
            found = next((c for c in trainer_callbacks if isinstance(c, kind)), None)
            if found is not None:
                trainer_callbacks.remove(found)
            return found

        def add_callback(self, callback: object) -> None:
            trainer_callbacks.append(callback)

    use_tolerant_wandb(Trainer())
    assert [type(c) for c in trainer_callbacks] == [object, TolerantWandb]
    use_tolerant_wandb(Trainer())  # idempotent: the tolerant one is replaced by another
    assert [type(c) for c in trainer_callbacks] == [object, TolerantWandb]
