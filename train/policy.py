"""The one policy builder: the model folder a run trains, built and warm-started if asked.

``model.build_tiny`` builds the tiny local model (size from ``model.tiny``) at
``model.path`` when no model is there; ``warm_start.steps > 0`` then fine-tunes it on the
conversations the data source or the recipe provides, into ``RUN/warm_start``
(``pairrl.train.warm_start``). Only the main process builds; the others wait for it
(``main_process_first``) and read the result. A ``model.path`` naming a ``.gguf`` file
(or ``smollm2``) trains the plain folder ``pairrl.model_source`` converts it into (the
main process converts; the others reuse).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pairrl.config import ConfigError
from pairrl.model_source import resolve_model_path
from pairrl.rollout.prompt_kit import Messages
from pairrl.train.config import TrainConfig
from pairrl.train.warm_start import warm_start_stage

__all__ = ["Policy", "prepare_policy"]


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


def prepare_policy(
    cfg: TrainConfig,
    run_dir: Path,
    state: Any,
    conversations: Callable[[], list[Messages]],
) -> Policy:
    """Build (main process) and warm-start the policy; every process gets the same folder.

    ``state`` is accelerate's ``PartialState``; ``conversations`` is called only when a
    warm start actually runs. Raises :class:`~pairrl.errors.InputError` for a
    ``RUN/warm_start`` trained with other settings (``pairrl.train.warm_start``).
    """
    with state.main_process_first():
        if state.is_main_process and cfg.model.build_tiny:
            _build_tiny_if_missing(cfg)
        source = resolve_model_path(cfg.model.path)
    if cfg.warm_start.steps == 0:
        return Policy(source, None, None, source)
    warm_dir, report = warm_start_stage(cfg, source, run_dir, state, conversations)
    return Policy(str(warm_dir), warm_dir, report, source)
