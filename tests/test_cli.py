"""The `pairrl` console script: help, plugins, tiny-model and sample commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from pairrl.cli import app

PAIRRL = str(Path(sys.executable).with_name("pairrl"))


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PAIRRL, *args], capture_output=True, text=True, cwd=cwd, check=False)


def test_help_lists_every_part() -> None:
    out = _run("--help")
    assert out.returncode == 0, out.stderr
    for command in (
        "tiny-model",
        "doctor",
        "sample",
        "execute",
        "train",
        "eval",
        "select",
        "slurm",
    ):
        assert command in out.stdout
    # Every plugin loads: none is shown as unavailable.
    assert "unavailable" not in out.stdout, out.stdout


def test_tiny_model_command_and_sample(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["tiny-model", str(tmp_path / "m"), "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert "parameters" in result.output
    assert (tmp_path / "m" / "model.safetensors").is_file()
    result = runner.invoke(
        app, ["sample", "--model-dir", str(tmp_path / "m"), "--n", "2", "--max-new-tokens", "4"]
    )
    assert result.exit_code == 0, result.output
    assert "[0]" in result.output and "[1]" in result.output


def test_unknown_command_fails() -> None:
    out = _run("no-such-command")
    assert out.returncode != 0
