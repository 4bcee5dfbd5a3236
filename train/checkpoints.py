"""Checkpoints that are whole or absent: staged saves, and finding the last intact one.

A checkpoint is written into ``RUN/.checkpoint-staging/checkpoint-N`` and renamed to
``RUN/checkpoint-N`` only once every process has written its part
(:class:`AtomicCheckpoints`, a Trainer mixin), so a kill or a full disk during a save
leaves the previous checkpoints as they were and no half-written ``checkpoint-N``. A
rename within one folder is atomic on POSIX file systems.

``--resume`` still checks what it resumes from (:func:`last_intact_checkpoint`): a
checkpoint copied by hand, or written by another tool, can be truncated. The checks
read file headers and indexes only, never the tensors, so they cost milliseconds for
any model size, and they never hand a damaged file to ``torch.load`` or safetensors
(which can abort the process instead of raising).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from pathlib import Path
from typing import Any

from pairrl.errors import InputError
from pairrl.weight_files import file_problem, holds_weights

__all__ = [
    "STAGING_DIR",
    "AtomicCheckpoints",
    "checkpoint_folders",
    "checkpoint_problem",
    "checkpoint_step",
    "copy_model_files",
    "last_intact_checkpoint",
    "publish_folder",
    "quiet_tied_head_warning",
]

STAGING_DIR = ".checkpoint-staging"
_CHECKPOINT_NAME = re.compile(r"^checkpoint-(\d+)$")  # transformers' own naming


def checkpoint_folders(run_dir: Path) -> list[Path]:
    """``run_dir``'s ``checkpoint-N`` folders, oldest step first."""
    if not run_dir.is_dir():
        return []
    found = [
        (int(m.group(1)), p) for p in run_dir.iterdir() if (m := _CHECKPOINT_NAME.match(p.name))
    ]
    return [p for _, p in sorted(found) if p.is_dir()]


def checkpoint_step(folder: Path) -> int:
    """The step of a ``checkpoint-N`` folder (N)."""
    match = _CHECKPOINT_NAME.match(folder.name)
    if match is None:
        raise ValueError(f"{folder} is not a checkpoint-N folder")
    return int(match.group(1))


def last_intact_checkpoint(run_dir: Path) -> tuple[Path | None, list[str]]:
    """The newest checkpoint of ``run_dir`` that passes :func:`checkpoint_problem`, and
    one line per newer checkpoint passed over ("checkpoint-4: model.safetensors is ...")."""
    skipped: list[str] = []
    for folder in reversed(checkpoint_folders(run_dir)):
        problem = checkpoint_problem(folder)
        if problem is None:
            return folder, skipped
        skipped.append(f"{folder.name}: {problem}")
    return None, skipped


def checkpoint_problem(folder: Path) -> str | None:
    """Why ``folder`` is not a whole checkpoint, or None when it is.

    Whole: ``trainer_state.json`` (the file transformers writes last) parses and names
    the folder's step; there are model weights; every JSON file parses; every safetensors
    file is as long as its header says; every torch file is a readable zip archive;
    every shard a ``*.index.json`` names is there.
    """
    step = int(_CHECKPOINT_NAME.match(folder.name).group(1))  # type: ignore[union-attr]
    state = folder / "trainer_state.json"
    if not state.is_file():
        return "no trainer_state.json (its save did not finish)"
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    for path in files:
        problem = file_problem(path)
        if problem is not None:
            return f"{path.relative_to(folder)} {problem}"
    recorded = json.loads(state.read_text())
    recorded = recorded.get("global_step") if isinstance(recorded, dict) else None
    if recorded != step:
        return f"trainer_state.json records step {recorded}, not {step}"
    if not any(holds_weights(p) for p in files):
        return "no model weights (*.safetensors, *.bin, *.distcp or DeepSpeed model states)"
    return None


def publish_folder(staged: Path, target: Path) -> None:
    """Rename ``staged`` to ``target``; a ``target`` already there (a damaged checkpoint
    of the same step, left by an earlier run) is moved aside first, then removed."""
    replaced = staged.parent / f"replaced-{target.name}"
    if target.exists():
        shutil.rmtree(replaced, ignore_errors=True)
        os.replace(target, replaced)
    os.replace(staged, target)
    shutil.rmtree(replaced, ignore_errors=True)


# a checkpoint's training state, beside the model files a save_pretrained folder holds
_TRAINING_STATE = ("optimizer", "scheduler", "rng_state", "trainer_state", "training_args")


def copy_model_files(checkpoint: Path, out: Path) -> None:
    """Copy ``checkpoint``'s model files (weights or adapter, config, tokenizer: its top
    level, less the optimiser, scheduler, RNG and trainer state) into a new folder ``out``;
    raise :class:`InputError` when it holds no consolidated weights (DeepSpeed ZeRO-3
    without ``stage3_gather_16bit_weights_on_model_save`` keeps only shards)."""
    files = [
        p for p in checkpoint.iterdir() if p.is_file() and not p.name.startswith(_TRAINING_STATE)
    ]
    if not any(holds_weights(p) and p.name != "model_states.pt" for p in files):
        raise InputError(
            f"{checkpoint} holds no consolidated model weights to make final/ from (sharded "
            "DeepSpeed or FSDP states only): export them with the checkpoint's own tools "
            "(zero_to_fp32.py), or save 16-bit weights in checkpoints"
        )
    out.mkdir(parents=True)
    for path in files:
        shutil.copy2(path, out / path.name)


class _TiedHeadIsNotMissing(logging.Filter):
    """Drops transformers' resume warning that ``lm_head.weight`` is missing from a
    checkpoint of a model whose head is tied to its embeddings: tied weights are saved
    once, under the embeddings' name, so nothing is missing."""

    def filter(self, record: logging.LogRecord) -> bool:
        return _TIED_HEAD_WARNING not in record.getMessage()


_TIED_HEAD_WARNING = "missing keys in the checkpoint model loaded: ['lm_head.weight']"


def quiet_tied_head_warning(model: Any) -> None:
    """Install :class:`_TiedHeadIsNotMissing` when ``model``'s head is tied (once)."""
    if not getattr(getattr(model, "config", None), "tie_word_embeddings", False):
        return
    logger = logging.getLogger("transformers.trainer")
    if not any(isinstance(f, _TiedHeadIsNotMissing) for f in logger.filters):
        logger.addFilter(_TiedHeadIsNotMissing())


class AtomicCheckpoints:
    """Trainer mixin (``class T(AtomicCheckpoints, Trainer)``): checkpoints staged, then
    renamed into place once whole (see the module docstring).

    It redirects the one folder the Trainer's ``_save_checkpoint`` writes into (its
    ``_get_output_dir``) for the length of the save, then renames the result and applies
    ``save_total_limit`` to the real run folder (the Trainer's own rotation ran in the
    staging folder, where only the new checkpoint is).
    """

    _checkpoint_staging: str | None = None

    def _get_output_dir(self, trial: Any) -> str:
        return self._checkpoint_staging or super()._get_output_dir(trial)  # type: ignore[misc]

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        from transformers.trainer_utils import rotate_checkpoints

        trainer: Any = self
        run_dir = Path(self._get_output_dir(trial))
        staging = run_dir / STAGING_DIR
        if trainer.args.should_save:  # an earlier save that was cut off leaves its parts
            shutil.rmtree(staging, ignore_errors=True)
        trainer.accelerator.wait_for_everyone()
        self._checkpoint_staging = str(staging)
        try:
            super()._save_checkpoint(model, trial)  # type: ignore[misc]
        finally:
            self._checkpoint_staging = None
        trainer.accelerator.wait_for_everyone()  # every rank's RNG file is written
        if trainer.args.should_save:
            name = f"checkpoint-{trainer.state.global_step}"
            publish_folder(staging / name, run_dir / name)
            shutil.rmtree(staging, ignore_errors=True)
            rotate_checkpoints(
                output_dir=str(run_dir),
                save_total_limit=trainer.args.save_total_limit,
                best_model_checkpoint=trainer.state.best_model_checkpoint,
                use_mtime=True,
            )
        trainer.accelerator.wait_for_everyone()
