"""Config base: YAML loading, dotted overrides, and errors that name field, value, allowed."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from pydantic import Field

from pairrl.config import ConfigError, PairrlModel, apply_overrides, load_config


class Optim(PairrlModel):
    """Optimiser settings for the test schema."""

    lr: float = Field(1e-6, gt=0, le=1, description="learning rate")
    steps: int = Field(150, ge=1, description="optimiser steps")


class Run(PairrlModel):
    """A miniature run config."""

    mode: Literal["pairrl", "pointrl", "grpo"] = Field("pairrl", description="training mode")
    train: Optim = Optim()
    seed: int = Field(0, ge=0, description="global seed")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return path


def test_loads_yaml_and_overrides(tmp_path: Path) -> None:
    path = _write(tmp_path, "mode: grpo\ntrain:\n  lr: 1.0e-5\n")
    cfg = load_config(path, Run, ["train.steps=7", "seed=3"])
    assert (cfg.mode, cfg.train.lr, cfg.train.steps, cfg.seed) == ("grpo", 1e-5, 7, 3)


def test_override_values_parse_as_yaml_scalars() -> None:
    assert apply_overrides({}, ["a.b=1e-6", "a.c=true", "d=x"]) == {
        "a": {"b": 1e-6, "c": True},
        "d": "x",
    }
    with pytest.raises(ConfigError, match="not of the form"):
        apply_overrides({}, ["train.lr"])


def test_wrong_type_names_field_value_and_allowed(tmp_path: Path) -> None:
    path = _write(tmp_path, "train:\n  steps: many\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, Run)
    message = str(info.value)
    assert "run.yaml" in message
    assert "train.steps = 'many'" in message
    assert "int >= 1" in message and "optimiser steps" in message


def test_out_of_range_value(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, "train:\n  lr: -0.1\n"), Run)
    assert "train.lr = -0.1" in str(info.value)
    assert "> 0" in str(info.value) and "<= 1" in str(info.value)


def test_bad_literal_lists_choices(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, "mode: ppo\n"), Run)
    assert "mode = 'ppo'" in str(info.value)
    assert "'pairrl', 'pointrl', 'grpo'" in str(info.value)


def test_unknown_key_lists_allowed_keys(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, "train:\n  learning_rate: 1\n"), Run)
    assert "train.learning_rate: unknown key" in str(info.value)
    assert "lr, steps" in str(info.value)


def test_unknown_key_from_override(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="sed: unknown key"):
        load_config(_write(tmp_path, "{}\n"), Run, ["sed=1"])


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "absent.yaml", Run)
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(_write(tmp_path, "train: [unclosed\n"), Run)
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_config(_write(tmp_path, "- a\n- b\n"), Run)
