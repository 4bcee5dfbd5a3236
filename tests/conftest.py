"""Shared test setup: quiet, offline, single-threaded; a tiny local model; the shared data."""

from __future__ import annotations

import os

# Set before torch/transformers/wandb are imported by any test module: the machine is shared
# (oversubscribed threads slow CPU steps tenfold) and nothing may reach a model hub.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["WANDB_MODE"] = "offline"
os.environ.setdefault("WANDB_SILENT", "true")
os.environ["TOKENIZERS_PARALLELISM"] = "false"

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """../shared/data beside the checkout; tests that need it skip when it is absent."""
    if not (SHARED_DATA / "README.md").is_file():
        pytest.skip(
            f"shared benchmark data not found at {SHARED_DATA} (read-only, beside the repo)"
        )
    return SHARED_DATA


@pytest.fixture
def load_benchmark(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Any]:
    """Import a script of benchmarks/ (not a package) by file name, with its folder on
    sys.path for its sibling imports."""
    import importlib.util

    monkeypatch.syspath_prepend(str(REPO_ROOT / "benchmarks"))

    def load(script: str) -> Any:
        path = REPO_ROOT / "benchmarks" / script
        spec = importlib.util.spec_from_file_location(f"benchmark_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny tokenizer + Qwen3-style model built locally once per test session (seed 0)."""
    from pairrl.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"), seed=0)


@pytest.fixture
def eval_cli() -> Callable[..., tuple[int, str]]:
    """Invoke ``pairrl eval ARGS`` in-process; returns ``(exit_code, output)``.

    ``reraise=True`` re-raises an exception other than ``SystemExit`` (a crash must fail
    the test); ``reraise=False`` appends its message to the output instead, for tests of
    the errors a user sees.
    """
    import typer
    from typer.testing import CliRunner

    from pairrl.eval.cli import register

    def invoke(args: list[str], *, reraise: bool = True) -> tuple[int, str]:
        root = typer.Typer()
        register(root)

        @root.callback()
        def _root() -> None:  # a group callback, so that "eval" is a subcommand
            return None

        result = CliRunner().invoke(root, ["eval", *args])
        if reraise and result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        output = result.output if reraise else result.output + str(result.exception or "")
        return result.exit_code, output

    return invoke
