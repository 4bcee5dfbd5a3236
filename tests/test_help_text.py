"""`pairrl ... --help` as a user reads it in an 80-column terminal: every option described,
its whole help text shown (wrapped, never cut), flags without a value type, and each
command's first sentence whole in the command lists."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer

PAIRRL = str(Path(sys.executable).with_name("pairrl"))
Command = typer.core.TyperCommand


def _help(*path: str) -> str:
    """`pairrl PATH --help` as the console script prints it at 80 columns."""
    env = {**os.environ, "COLUMNS": "80", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [PAIRRL, *path, "--help"], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _squeezed(text: str) -> str:
    """``text`` without whitespace: a wrapped help text equals the unwrapped one."""
    return "".join(text.split())


@pytest.fixture(scope="module")
def root() -> typer.core.TyperGroup:
    """The root command with every plugin registered, as the console script builds it."""
    import pairrl.cli

    with pytest.MonkeyPatch.context() as patch:  # register into copies, not the shared app
        for attr in ("registered_commands", "registered_groups"):
            patch.setattr(pairrl.cli.app, attr, list(getattr(pairrl.cli.app, attr)))
        pairrl.cli._register_plugins(pairrl.cli.app)
        return typer.main.get_command(pairrl.cli.app)  # type: ignore[return-value]


def _commands(group: typer.core.TyperGroup, path: tuple[str, ...] = ()) -> Iterator:
    """(path, command) for every command and group under ``group``."""
    for name, command in group.commands.items():
        yield (*path, name), command
        if isinstance(command, typer.core.TyperGroup):
            yield from _commands(command, (*path, name))


def test_every_option_is_described_and_shown_whole(root: typer.core.TyperGroup) -> None:
    commands = [(p, c) for p, c in _commands(root) if not isinstance(c, typer.core.TyperGroup)]
    assert {("select",), ("train",), ("slurm", "render"), ("eval", "run")} <= {
        p for p, _ in commands
    }
    for path, command in commands:
        shown = _squeezed(_help(*path))
        for param in command.params:
            if param.name == "help":
                continue
            assert param.help, f"pairrl {' '.join(path)}: {param.name} has no help text"
            assert _squeezed(param.help) in shown, f"pairrl {' '.join(path)}: {param.name}"
        assert "…" not in shown


@pytest.mark.parametrize(
    ("path", "option", "text"),
    [
        (("train",), "--out", "(default: checkpoint.output_dir/logging.run_name)."),
        (("select",), "--candidates", "text/completion/solution/code and id)."),
        (("slurm", "render"), "--sbatch-arg", "e.g. --constraint=h100."),
    ],
)
def test_long_words_are_wrapped_not_cut(path: tuple[str, ...], option: str, text: str) -> None:
    lines = _help(*path).splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith(option + " "))
    shown = " ".join(" ".join(lines[start : start + 4]).split())
    assert text in shown, "\n".join(lines[start : start + 4])


def test_flags_take_no_value_in_help() -> None:
    for path in (("doctor",), ("train",), ("slurm", "render"), ()):
        text = _help(*path)
        assert "<bool>" not in text
    flags = [line.split() for line in _help("train").splitlines() if "--dry-run" in line]
    assert flags[0][:2] == ["--dry-run", "Print"]


def test_command_lists_show_each_first_sentence_whole(root: typer.core.TyperGroup) -> None:
    for group_path in ((), ("slurm",)):
        group = root if not group_path else root.commands[group_path[0]]
        shown = _help(*group_path)
        listing = shown[shown.index("\nCommands:") :].splitlines()
        assert not any(line.rstrip().endswith("...") for line in listing), shown
        for name, command in group.commands.items():  # type: ignore[attr-defined]
            first_sentence = command.get_short_help_str(limit=10_000)
            assert _squeezed(name + first_sentence) in _squeezed(shown), name


def test_export_names_a_server_every_vllm_build_has() -> None:
    text = " ".join(_help("export").split())
    assert "vllm serve" not in text
    assert "python -m vllm.entrypoints.openai.api_server --model DIR" in text
