"""What ``--resume`` checks and restores beyond the checkpoint itself.

* **The config.** ``RUN/config.json`` is the record of the config a run was started with
  (written once, by the first launch). A resume whose config differs in any field that
  decides what is trained is refused (:func:`changed_fields`), naming the fields; the
  fields in :data:`MAY_CHANGE_ON_RESUME` may differ, because they change how long the run
  goes, what it logs, where its server is or how much memory a step takes, not what a
  step computes. The ones that differed are returned for the run's summary.
* **The problem order.** TRL's sampler draws a new shuffle of the problems for each
  pass from one generator seeded once, so a resumed run would start its next pass with
  the first pass's order. :class:`PassSeededSampler` re-seeds it at each pass and skips
  the draws of the passes already done: pass p gets the uninterrupted run's order.
* **The checkpoint.** The newest intact one (``pairrl.train.checkpoints``); damaged newer
  ones are passed over, each with a note.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pairrl.config import ConfigError
from pairrl.errors import InputError
from pairrl.train.checkpoints import checkpoint_folders, checkpoint_step, last_intact_checkpoint
from pairrl.train.config import TrainConfig

__all__ = [
    "MAY_CHANGE_ON_RESUME",
    "PassSeededSampler",
    "ResumePoint",
    "changed_fields",
    "describe_changes",
    "field_changes",
    "flatten",
    "resume_point",
]

CONFIG_RECORD = "config.json"

# Dotted fields (a trailing ".*": the whole section) that a resumed run may change.
MAY_CHANGE_ON_RESUME: dict[str, str] = {
    "batch.max_steps": "run longer or shorter (a decaying LR schedule follows the new length)",
    "logging.*": "what is logged and where",
    "checkpoint.*": "how often checkpoints are saved, how many are kept, the run folder",
    "engine.server_*": "where the vLLM server runs (a requeued job gets new nodes)",
    "engine.gpu_memory_utilization": "memory only",
    "engine.enable_sleep_mode": "memory only",
    "loss.max_forward_tokens": "memory only (the same loss up to float rounding)",
    "loss.logits_chunk_tokens": "memory only (the same loss up to float rounding)",
    "model.gradient_checkpointing": "memory only",
    "executor.workers": "sandbox parallelism only",
    "heldout_probe.*": "what is measured on held-out pairs, not what a step computes",
}


class ResumePoint:
    """Where a resumed run continues: the checkpoint, the newer damaged checkpoints passed
    over (one note each), and the fields that differ from the recorded config."""

    def __init__(self, checkpoint: Path, skipped: list[str], changes: dict[str, Any]) -> None:
        self.checkpoint = checkpoint
        self.skipped = skipped
        self.changes = changes

    @property
    def step(self) -> int:
        """The optimiser steps the checkpoint holds (``checkpoint-N``: N)."""
        return checkpoint_step(self.checkpoint)


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; lists and scalars are leaves."""
    if not isinstance(tree, dict) or (prefix and not tree):
        return {prefix: tree}
    out: dict[str, Any] = {}
    for key, value in tree.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def _may_change(field: str) -> bool:
    for pattern in MAY_CHANGE_ON_RESUME:
        if field == pattern or (pattern.endswith("*") and field.startswith(pattern[:-1])):
            return True
    return False


def field_changes(before: dict[str, Any], now: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{field: {"recorded": old, "now": new}}`` for each dotted field whose value differs
    between two flat records (a field absent on one side is None there)."""
    missing = object()
    out = {}
    for field in sorted(set(now) | set(before)):
        old, new = before.get(field, missing), now.get(field, missing)
        if old != new:
            out[field] = {
                "recorded": None if old is missing else old,
                "now": None if new is missing else new,
            }
    return out


def describe_changes(changes: dict[str, dict[str, Any]]) -> str:
    """``a.b 1 (now 2), c 'x' (now 'y')``: one line for an error message."""
    return ", ".join(f"{k} {v['recorded']!r} (now {v['now']!r})" for k, v in changes.items())


def changed_fields(recorded: dict[str, Any], cfg: TrainConfig) -> dict[str, dict[str, Any]]:
    """:func:`field_changes` between a recorded config (``RUN/config.json``) and ``cfg``."""
    return field_changes(flatten(recorded), flatten(json.loads(json.dumps(cfg.model_dump()))))


def resume_point(cfg: TrainConfig, run_dir: Path) -> ResumePoint:
    """Check that ``run_dir`` can be resumed with ``cfg``; raise a user-facing error
    (:class:`~pairrl.config.ConfigError` or :class:`~pairrl.errors.InputError`) if not."""
    if not checkpoint_folders(run_dir):
        raise ConfigError("--resume", [f"no checkpoint-* folder in {run_dir}"])
    changes = _checked_changes(cfg, run_dir)
    checkpoint, skipped = last_intact_checkpoint(run_dir)
    if checkpoint is None:
        raise InputError(
            f"--resume: no intact checkpoint in {run_dir} ({'; '.join(skipped)}); "
            "start a new run with another --out"
        )
    if checkpoint_step(checkpoint) > cfg.batch.max_steps:
        raise InputError(
            f"--resume: {checkpoint} holds {checkpoint_step(checkpoint)} steps, more than "
            f"batch.max_steps={cfg.batch.max_steps}; resume with batch.max_steps >= "
            f"{checkpoint_step(checkpoint)} (a checkpoint cannot be untrained)"
        )
    return ResumePoint(checkpoint, skipped, changes)


def _checked_changes(cfg: TrainConfig, run_dir: Path) -> dict[str, Any]:
    """The allowed changes from the recorded config; an error naming any other."""
    record = run_dir / CONFIG_RECORD
    try:
        recorded = json.loads(record.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise InputError(
            f"--resume: {record} (the config the run was started with) cannot be read "
            f"({type(err).__name__}), so the resumed config cannot be checked against it"
        ) from None
    changes = changed_fields(recorded, cfg)
    refused = {k: v for k, v in changes.items() if not _may_change(k)}
    if refused:
        listed = describe_changes(refused)
        allowed = ", ".join(MAY_CHANGE_ON_RESUME)
        raise InputError(
            f"--resume: {run_dir} was started with another config: {listed}; resume with "
            f"the recorded values ({record}) or start a new run with another --out "
            f"(only {allowed} may change on resume)"
        )
    return changes


class PassSeededSampler:
    """TRL's ``RepeatSampler`` whose shuffle for pass p is the uninterrupted run's.

    ``current_pass`` says which pass over the problems is starting (the trainer's
    ``int(state.epoch)``, which a resumed run reads from its checkpoint). Each iteration
    re-seeds the sampler's generator with its seed and discards the permutations of the
    passes before, so pass p's order no longer depends on how many passes this process
    has iterated. Without shuffling it is the sampler unchanged.
    """

    def __init__(self, sampler: Any, current_pass: Callable[[], int]) -> None:
        self.sampler = sampler
        self.current_pass = current_pass

    def __iter__(self) -> Iterator[int]:
        import torch

        inner = self.sampler
        if getattr(inner, "shuffle", False) and inner.seed is not None:
            inner.generator.manual_seed(inner.seed)
            for _ in range(self.current_pass()):
                torch.randperm(inner.num_samples, generator=inner.generator)
        return iter(inner)

    def __len__(self) -> int:
        return len(self.sampler)
