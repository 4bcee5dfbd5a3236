"""Every worked example in a library docstring is run: the examples are tests too."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FOLDERS = {"pairrl": "pairrl", "rewards": "pairrl.rewards", "rollout": "pairrl.rollout",
           "train": "pairrl.train", "eval": "pairrl.eval", "slurm": "pairrl.slurm",
           "recipes": "pairrl.recipes"}  # fmt: skip


def _modules_with_examples() -> list[str]:
    names = []
    for folder, package in FOLDERS.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            if ">>> " not in path.read_text():
                continue
            parts = list(path.relative_to(REPO / folder).with_suffix("").parts)
            names.append(".".join([package, *[p for p in parts if p != "__init__"]]))
    return names


@pytest.mark.parametrize("module", _modules_with_examples())
def test_docstring_examples(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{module} has '>>> ' but no example ran"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {module}"


def _benchmark_scripts_with_examples() -> list[str]:
    return [p.name for p in sorted((REPO / "benchmarks").glob("*.py")) if ">>> " in p.read_text()]


@pytest.mark.parametrize("script", _benchmark_scripts_with_examples())
def test_benchmark_docstring_examples(script: str, load_benchmark) -> None:
    result = doctest.testmod(load_benchmark(script), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{script} has '>>> ' but no example ran"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {script}"
