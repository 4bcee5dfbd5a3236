"""The one policy builder: the model folder a run trains, built and warm-started if asked.

``model.build_tiny`` builds the tiny local model (size from ``model.tiny``) at
``model.path`` when no model is there; ``warm_start.steps > 0`` then fine-tunes it on the
conversations the data source or the recipe provides, into ``RUN/warm_start``. Only the
main process builds; the others wait for it (``main_process_first``) and read the result.

The warm start is trained in a staging folder and renamed to ``RUN/warm_start`` once it
is saved, with ``RUN/warm_start/pairrl_warm_start.json``: the config fields it depends on
(:func:`warm_start_settings`) and its losses. A ``RUN/warm_start`` already there (a
resumed or repeated run) is reused only when those recorded settings equal this config's;
otherwise, or without that record, the run stops with an error naming the differences
(remove the folder to train it again, or choose another ``--out``): a warm start is never
retrained over silently. The run summary's ``warm_start`` says which one was used.
A ``model.path`` naming a ``.gguf`` file (or ``smollm2``) trains the plain folder
``pairrl.model_source`` converts it into (the main process converts; the others reuse).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pairrl.config import ConfigError
from pairrl.errors import InputError
from pairrl.model_source import resolve_model_path
from pairrl.rollout.prompt_kit import Messages
from pairrl.train.checkpoints import publish_folder
from pairrl.train.config import TrainConfig
from pairrl.train.resume import describe_changes, field_changes, flatten

__all__ = ["WARM_START_RECORD", "Policy", "prepare_policy", "warm_start_settings"]

WARM_START_DIR = "warm_start"
WARM_START_RECORD = "pairrl_warm_start.json"  # its settings and losses, written last


@dataclass(frozen=True)
class Policy:
    """The folder to train from, the warm start's summary (None without a warm start;
    ``reused: true`` when an earlier launch trained it), and the folder ``model.path``
    resolved to (a ``.gguf`` file's converted folder)."""

    path: str
    warm_start_dir: Path | None
    warm_start_report: dict[str, Any] | None
    source: str


def _build_tiny_if_missing(cfg: TrainConfig) -> None:
    path = Path(cfg.model.path)
    if (path / "config.json").is_file():
        if cfg.model.build_tiny:
            _check_tiny_shape(path, cfg.model.tiny)
        return
    if not cfg.model.build_tiny:
        raise ConfigError(
            "model.path", [f"{path} holds no model (config.json) and model.build_tiny is false"]
        )
    from pairrl.tiny_model import build_tiny_model

    tiny = cfg.model.tiny
    build_tiny_model(
        path,
        seed=cfg.seed,
        hidden_size=tiny.hidden_size,
        num_layers=tiny.num_layers,
        intermediate_size=tiny.intermediate_size,
    )


def _check_tiny_shape(path: Path, tiny: Any) -> None:
    """A tiny model built earlier in ``path`` must have the shape ``model.tiny`` asks for:
    reusing one of another shape would train a different model than the config says."""
    built = json.loads((path / "config.json").read_text())
    wanted = {
        "hidden_size": tiny.hidden_size,
        "num_hidden_layers": tiny.num_layers,
        "intermediate_size": tiny.intermediate_size,
    }
    differ = [f"{k} {built.get(k)} (config: {v})" for k, v in wanted.items() if built.get(k) != v]
    if differ:
        raise ConfigError(
            "model.tiny",
            [
                f"{path} holds a tiny model of another shape: {', '.join(differ)}; remove "
                "that folder to build one with this shape, or set model.path to a new folder"
            ],
        )


def warm_start_settings(cfg: TrainConfig) -> dict[str, Any]:
    """The config fields a warm start depends on, dotted: the seed, the base model (its
    path, and the tiny shape when it is built), the data source and recipe (they give the
    conversations), the ``warm_start`` section, and the sandbox limits (a recipe may label
    its warm-start samples by execution). Memory settings and the RL sections are left out."""
    dump = json.loads(json.dumps(cfg.model_dump()))
    model = {k: v for k, v in dump["model"].items() if k in {"path", "build_tiny"}}
    if cfg.model.build_tiny:
        model["tiny"] = dump["model"]["tiny"]
    executor = {k: v for k, v in dump["executor"].items() if k != "workers"}
    return flatten(
        {
            "seed": dump["seed"],
            "model": model,
            "data": dump["data"],
            "recipe": dump["recipe"],
            "warm_start": dump["warm_start"],
            "executor": executor,
        }
    )


def prepare_policy(
    cfg: TrainConfig,
    run_dir: Path,
    state: Any,
    conversations: Callable[[], list[Messages]],
) -> Policy:
    """Build (main process) and warm-start the policy; every process gets the same folder.

    ``state`` is accelerate's ``PartialState``; ``conversations`` is called only when a
    warm start actually runs. Raises :class:`~pairrl.errors.InputError` for a
    ``RUN/warm_start`` trained with other settings (see the module docstring).
    """
    with state.main_process_first():
        if state.is_main_process and cfg.model.build_tiny:
            _build_tiny_if_missing(cfg)
        source = resolve_model_path(cfg.model.path)
    if cfg.warm_start.steps == 0:
        return Policy(source, None, None, source)
    warm_dir = run_dir / WARM_START_DIR
    # every process checks before the main one trains: none waits on a rank that failed
    report = _reused_warm_start(cfg, warm_dir)
    if report is None:
        with state.main_process_first():
            if state.is_main_process:
                report = _train_warm_start(cfg, source, warm_dir, conversations)
    return Policy(str(warm_dir), warm_dir, report, source)


def _reused_warm_start(cfg: TrainConfig, warm_dir: Path) -> dict[str, Any] | None:
    """The summary of the warm start in ``warm_dir`` when its recorded settings are this
    config's; None when there is none; an error when they differ or are not recorded."""
    if not warm_dir.exists():
        return None
    remedy = "remove that folder to train the warm start again, or choose another --out"
    try:
        record = json.loads((warm_dir / WARM_START_RECORD).read_text())
        recorded = dict(record["settings"])
    except (OSError, ValueError, KeyError, TypeError):
        raise InputError(
            f"{warm_dir} holds no readable record of the settings it was trained with "
            f"({WARM_START_RECORD}): {remedy}"
        ) from None
    changes = field_changes(recorded, warm_start_settings(cfg))
    if changes:
        raise InputError(
            f"{warm_dir} holds a warm start trained with other settings: "
            f"{describe_changes(changes)}; {remedy}"
        )
    trained = record.get("report", {})
    summary = {k: trained.get(k) for k in ("steps", "first_loss", "last_loss")}
    return {
        "reused": True,
        "out_dir": str(warm_dir),
        **summary,
        "trained_wall_s": trained.get("wall_s"),
    }


def _train_warm_start(
    cfg: TrainConfig,
    source: str,
    warm_dir: Path,
    conversations: Callable[[], list[Messages]],
) -> dict[str, Any]:
    """Train the warm start in a staging folder, record its settings, rename it into place."""
    from pairrl.train.warm_start import warm_start

    examples = conversations()
    if not examples:
        raise ConfigError(
            "warm_start.steps", ["the data source provides no warm-start conversations"]
        )
    staging = warm_dir.parent / f".{warm_dir.name}-staging"
    shutil.rmtree(staging, ignore_errors=True)  # what a cut-off warm start left
    report = warm_start(
        source,
        examples,
        staging,
        steps=cfg.warm_start.steps,
        lr=cfg.warm_start.lr,
        batch_size=cfg.warm_start.batch_size,
        max_length=cfg.warm_start.max_length,
        labelled_positions_only=cfg.warm_start.loss_positions == "labelled",
        bucket_padding=cfg.warm_start.bucket_padding,
        seed=cfg.seed,
        gradient_checkpointing=cfg.model.gradient_checkpointing,
        show_progress=cfg.logging.console == "progress",
    )
    report = {**report, "out_dir": str(warm_dir)}
    record = {"settings": warm_start_settings(cfg), "base_model": source, "report": report}
    (staging / WARM_START_RECORD).write_text(json.dumps(record, indent=2) + "\n")
    publish_folder(staging, warm_dir)
    return {"reused": False, **report}
