"""A benchmark run on a scripted model (shared by the RSA and thinking tests): the task file
and model folder a ``candidates.source: model`` config needs, and the scripted model put
in place of every sampler the run builds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def model_run_files(tmp_path: Path, tasks: list[dict[str, Any]]) -> tuple[Path, Path]:
    """``tasks`` as a JSONL task file, and a model folder (written once: the model's
    identity, part of every cache key, reads it)."""
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    model = tmp_path / "model"
    if not model.is_dir():
        model.mkdir()
        (model / "config.json").write_text("{}")
    return task_file, model


def use_as_sampler(monkeypatch: pytest.MonkeyPatch, model: Any) -> Any:
    """Every sampler the benchmark builds (generator and judge) is ``model``."""
    import pairrl.eval.models

    monkeypatch.setattr(pairrl.eval.models, "make_sampler", lambda *a, **k: model)
    return model
