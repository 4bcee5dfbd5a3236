"""A tiny model already in ``model.path`` is reused only when it has the configured shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from pairrl.config import ConfigError, load_config
from pairrl.tiny_model import build_tiny_model
from pairrl.train.config import TrainConfig
from pairrl.train.policy import _build_tiny_if_missing

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "toy_cpu.yaml"


def _config(model: Path, intermediate: int) -> TrainConfig:
    overrides = [f"model.path={model}", f"model.tiny.intermediate_size={intermediate}"]
    return load_config(CONFIG, TrainConfig, overrides)


def test_a_tiny_model_of_another_shape_is_refused_not_reused(tmp_path: Path) -> None:
    model = tmp_path / "m"
    build_tiny_model(model, seed=0, hidden_size=128, num_layers=3, intermediate_size=256)
    _build_tiny_if_missing(_config(model, 256))  # the same shape: reused as it is
    with pytest.raises(ConfigError, match=r"intermediate_size 256 \(config: 128\)"):
        _build_tiny_if_missing(_config(model, 128))


def test_a_missing_tiny_model_is_built_with_the_configured_shape(tmp_path: Path) -> None:
    import json

    model = tmp_path / "m"
    _build_tiny_if_missing(_config(model, 128))
    built = json.loads((model / "config.json").read_text())
    assert (built["hidden_size"], built["num_hidden_layers"], built["intermediate_size"]) == (
        128,
        3,
        128,
    )
