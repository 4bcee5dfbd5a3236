"""W&B logging that never costs a step or a checkpoint.

transformers' ``WandbCallback`` calls W&B inside the training step (``on_log``), and W&B
talks to a helper process of its own (``wandb-core``). When a job is stopped the way Slurm
stops it, SIGTERM to every process of the job, that helper can die first: the next
``wandb.log`` raises (``ConnectionResetError``) inside the step, and the step, with the
checkpoint the stop was about to write, is lost. :class:`TolerantWandb` is the same
callback with each hook guarded, and with ``wandb.log`` (which TRL's profiling timers and
completions table call directly) guarded from the moment the run starts: the first failure
prints one warning, W&B logging is off for the rest of the run (``report_to`` loses
"wandb"; W&B's exit hook, which would fail the same way, prints nothing), and the run goes
on; its metrics still go to ``RUN/metrics.jsonl`` and ``RUN/train_log.jsonl``.

:func:`use_tolerant_wandb` swaps it in for the callback the Trainer installed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from transformers.integrations import WandbCallback

__all__ = ["TolerantWandb", "use_tolerant_wandb"]


class TolerantWandb(WandbCallback):
    """``WandbCallback`` whose failures, and those of every ``wandb.log`` of the run (TRL's
    profiling timers and completions table call it too), turn W&B logging off instead of
    raising."""

    failure: str | None = None

    def _fail(self, err: Exception, args: Any) -> None:
        self.failure = f"{type(err).__name__}: {err}"
        args.report_to = [name for name in args.report_to if name != "wandb"]
        _quiet_wandb_teardown()
        print(
            f"[pairrl] warning: W&B logging failed ({self.failure}); it is off for the rest "
            "of this run, which goes on (metrics stay in RUN/metrics.jsonl)",
            file=sys.stderr,
            flush=True,
        )

    def _guarded(self, hook: Callable[..., Any], args: Any, *rest: Any, **kwargs: Any) -> Any:
        if self.failure is not None:
            return None
        try:
            return hook(args, *rest, **kwargs)
        except Exception as err:  # W&B's own errors, and its helper's broken connection
            self._fail(err, args)
            return None

    def setup(self, args: Any, state: Any, model: Any, **kwargs: Any) -> None:
        self._guarded(super().setup, args, state, model, **kwargs)
        wandb = self._wandb
        if self.failure is not None or wandb is None or getattr(wandb, "run", None) is None:
            return
        # wandb.init makes ``wandb.log`` the run's log; every caller looks it up there
        original = wandb.log

        def log(*log_args: Any, **log_kwargs: Any) -> Any:
            if self.failure is not None:
                return None
            try:
                return original(*log_args, **log_kwargs)
            except Exception as err:
                self._fail(err, args)
                return None

        wandb.log = log

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        return self._guarded(super().on_train_begin, args, state, control, **kwargs)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        return self._guarded(super().on_train_end, args, state, control, **kwargs)

    def on_log(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        return self._guarded(super().on_log, args, state, control, **kwargs)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        return self._guarded(super().on_save, args, state, control, **kwargs)

    def on_predict(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        return self._guarded(super().on_predict, args, state, control, **kwargs)


def _quiet_wandb_teardown() -> None:
    """W&B's exit hook talks to its helper too, and would print a traceback at exit once
    the helper is gone: drop the errors W&B's own code raises there (others still print)."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if str(getattr(unraisable.object, "__module__", "")).startswith("wandb"):
            return
        previous(unraisable)

    sys.unraisablehook = hook


def use_tolerant_wandb(trainer: Any) -> None:
    """Replace the trainer's ``WandbCallback`` (if it has one) by :class:`TolerantWandb`."""
    if trainer.pop_callback(WandbCallback) is not None:
        trainer.add_callback(TolerantWandb())
