"""``HeldoutJudgeProbe``: the trainer's callback that runs the held-out judge probe
(``pairrl.train.heldout_probe``) before the first step and every ``every_steps`` steps, on
the main process, with the policy being trained (no copy, no generation, no gradients).

Each probe appends one line to ``RUN/heldout_judge.jsonl`` (the step, the probe's numbers,
its seconds) and, from the first step on, puts the same numbers under ``heldout/`` into
that step's logged metrics (``train_log.jsonl``, W&B).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback

from pairrl.rewards import normalise_rating
from pairrl.rollout.prompts import continuation
from pairrl.rollout.readouts import JudgeFailure, score_expected_ratings
from pairrl.train.heldout_probe import PROBE_LOG, ProbePair, probe_metrics, read_probe_log

__all__ = ["HeldoutJudgeProbe", "probe_scores"]


def probe_scores(
    sampler: Any, pairs: Sequence[ProbePair]
) -> list[tuple[float | None, float | None]]:
    """Each pair's (a, b) item scores in [0, 1], each candidate read as A (``sampler``: a
    ``Sampler`` with next-token log-probabilities); None where the read-out failed."""
    prefixes = [continuation(m, "<rating_A>") for p in pairs for m in (p.a_first, p.b_first)]
    # in order of length, so that a batch's prompts pad to about their own length
    size = [sum(len(message["content"]) for message in prefix) for prefix in prefixes]
    order = sorted(range(len(prefixes)), key=size.__getitem__)
    read = score_expected_ratings(sampler, [prefixes[i] for i in order])
    values: list[float | None] = [None] * len(prefixes)
    for slot, found in zip(order, read, strict=True):
        values[slot] = None if isinstance(found, JudgeFailure) else normalise_rating(found[0])
    return [(values[2 * i], values[2 * i + 1]) for i in range(len(pairs))]


class HeldoutJudgeProbe(TrainerCallback):
    """Probes the trainer's policy on ``pairs`` every ``every_steps`` steps (and at the step
    training starts from), writing ``run_dir/heldout_judge.jsonl``; ``trainer`` is set once
    the trainer exists."""

    def __init__(
        self,
        pairs: Sequence[ProbePair],
        every_steps: int,
        run_dir: Path,
        batch_size: int,
        stopping: Callable[[], bool],
    ) -> None:
        self.pairs, self.every_steps, self.batch_size = list(pairs), every_steps, batch_size
        self.stopping = stopping  # whether this run was asked to stop (its signal handler)
        self.log = run_dir / PROBE_LOG
        self.trainer: Any = None
        self._sampler: Any = None

    def _due(self, state: Any) -> bool:
        """Whether this process probes at the state's step: the main process, at step 0,
        every ``every_steps`` and the last step, and never once a stop was asked for (the
        stop's checkpoint comes first; a resumed run probes a step it skipped)."""
        step = state.global_step
        on_schedule = step % self.every_steps == 0 or step == state.max_steps
        return state.is_world_process_zero and on_schedule and not self.stopping()

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        done = {row["step"] for row in read_probe_log(self.log)}
        if self._due(state) and state.global_step not in done:
            self._probe(state.global_step)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._due(state):
            found = self._probe(state.global_step)
            metrics = self.trainer._metrics["train"]
            for name, value in found.items():
                if value is not None and name != "step":
                    metrics[f"heldout/{name}"].append(float(value))

    def _probe(self, step: int) -> dict[str, Any]:
        """One probe of the policy as it is now; the numbers, also appended to the log."""
        started = time.perf_counter()
        model = self.trainer.accelerator.unwrap_model(self.trainer.model)
        was_training = model.training
        try:
            with torch.no_grad():
                scores = probe_scores(self._sampler_for(model), self.pairs)
        finally:
            model.train(was_training)
        found = {"step": step, **probe_metrics(self.pairs, scores)}
        found["seconds"] = round(time.perf_counter() - started, 2)
        with self.log.open("a") as fh:
            fh.write(json.dumps(found) + "\n")
        return found

    def _sampler_for(self, model: Any) -> Any:
        """An ``HFSampler`` over the live policy (kept: its vocabulary table is built once)."""
        if self._sampler is None or self._sampler.model is not model:
            from pairrl.rollout.samplers.hf import HFSampler

            tokenizer = self.trainer.processing_class
            self._sampler = HFSampler(model, tokenizer, batch_size=self.batch_size)
        self._sampler.model = model.eval()
        return self._sampler
