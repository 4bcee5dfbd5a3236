"""What a training run shows while it runs: one progress bar per stage, the step dicts in a log.

``StepProgress`` is a ``transformers`` callback: a progress bar with the ETA and the few
numbers a user watches (pass rate, judge balanced accuracy, verification reward), while every log dict TRL
emits goes, one JSON line each, to ``RUN/train_log.jsonl`` (``tail -f`` it on a cluster)
instead of the console. In a log file (Slurm, nohup) the bar is plain lines: one when
training starts, one every ``$PAIRRL_PROGRESS_EVERY_S`` seconds (steps done/total, s/it,
elapsed, ETA and those numbers) and one when it ends (``pairrl.progress``).
``logging.console: dicts`` keeps TRL's own per-step printing. Only the main process draws
or writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from pairrl.progress import Bar, bar

__all__ = ["WATCHED", "StepProgress", "quiet_console"]

# Shown on the bar, and on a log file's progress lines, when present in a log (short names
# and two decimals: the bar must fit one 80-column terminal line).
WATCHED = {
    "pairrl/solution_pass_rate": "pass",
    "judge/balanced_accuracy": "BA",
    "pairrl/verification_reward": "ver",
}


class StepProgress(TrainerCallback):
    """A progress bar over the optimiser steps (``pairrl.progress``); log dicts to a JSONL file."""

    def __init__(self, label: str, log_path: Path | None, enabled: bool = True) -> None:
        self.label = label
        self.log_path = log_path
        self.enabled = enabled
        self._bar: Bar | None = None
        self._shown: dict[str, str] = {}

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self.enabled:
            self._bar = bar(self.label, total=state.max_steps, completed=state.global_step)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._bar is not None:
            self._bar.update(completed=state.global_step)

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        if not state.is_world_process_zero or not logs:
            return
        if self.log_path is not None:
            with self.log_path.open("a") as handle:
                handle.write(json.dumps({"step": state.global_step, **logs}) + "\n")
        for key, short in WATCHED.items():
            if isinstance(logs.get(key), int | float):
                self._shown[short] = f"{short} {float(logs[key]):.2f}"
        if self._bar is not None:
            self._bar.update(shown="  ".join(self._shown.values()))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._bar is not None:
            self._bar.update(completed=state.global_step)
            self._bar.close()
            self._bar = None


def quiet_console(trainer: Any) -> None:
    """Remove the callbacks that print TRL's per-step dicts and tqdm bars to the console."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    for callback in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(callback)
