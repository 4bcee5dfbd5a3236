"""Every YAML under configs/ parses against its schema (run configs) or accelerate's."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import yaml

from pairrl.config import load_config

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
# `kind:` at the top of a run config names its schema.
SCHEMAS = {
    "train": "pairrl.train.config:TrainConfig",
    "experiment": "pairrl.train.config:TrainConfig",
    "eval": "pairrl.eval.config:EvalConfig",
}

RUN_CONFIGS = sorted(p for p in CONFIG_DIR.glob("*.yaml"))
ACCELERATE_CONFIGS = sorted((CONFIG_DIR / "accelerate").glob("*.yaml"))


def _schema(kind: str) -> type:
    module, _, name = SCHEMAS[kind].partition(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("path", RUN_CONFIGS, ids=lambda p: p.name)
def test_run_config_parses(path: Path) -> None:
    text = path.read_text()
    assert text.lstrip().startswith("#"), f"{path.name} must open with the command that launches it"
    opening = []
    for line in text.lstrip().splitlines():
        if not line.startswith("#"):
            break
        opening.append(line)
    assert any("pairrl" in line for line in opening), (
        f"{path.name}: the opening comment should give the command that launches it"
    )
    kind = (yaml.safe_load(text) or {}).get("kind")
    assert kind in SCHEMAS, f"{path.name}: top-level `kind` must be one of {sorted(SCHEMAS)}"
    cfg = load_config(path, _schema(kind))
    if kind == "train":
        from pairrl.train.task_family import resolve_recipe

        resolve_recipe(cfg.recipe)  # a recipe's options are checked by its own schema


@pytest.mark.parametrize("path", ACCELERATE_CONFIGS, ids=lambda p: p.name)
def test_accelerate_config_parses(path: Path) -> None:
    from accelerate.commands.config.config_args import ClusterConfig

    config = ClusterConfig.from_yaml_file(path)
    assert config.num_processes >= 1
