"""The `pairrl` command line: the front door to every part of the project.

Subcommands live in the package that owns them (`pairrl execute` in rewards, `pairrl train`
in train, `pairrl eval` in eval, ...) and plug in through the `pairrl.commands` entry-point
group, so this module never imports train or eval by name. A subcommand whose module fails
to import is still listed, and says why when invoked, instead of breaking the whole CLI.
Unusable input (``pairrl.errors.InputError``) ends any command with its message and exit
status 2, without a traceback.

Help is click's plain layout (``rich_markup_mode=None``, which every subcommand inherits):
it wraps each option's help at the terminal's width instead of cutting it, and shows a flag
without a value type. Command lists show each command's first sentence whole
(``pairrl.cli_help.PlainHelpGroup``).
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import entry_points
from pathlib import Path

import typer

from pairrl.cli_help import PlainHelpGroup

__all__ = ["app", "main"]


app = typer.Typer(
    name="pairrl",
    cls=PlainHelpGroup,
    help=(
        "Train language models to write solutions and judge them in pairs (PairRL), "
        "select the best of k candidates with a Swiss tournament, and benchmark selection."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)

DEFAULT_TINY_DIR = Path("runs/tiny-model")


@app.command("tiny-model")
def tiny_model(
    out_dir: Path = typer.Argument(
        ..., metavar="OUT_DIR", help="Folder to write the tokenizer and model into."
    ),
    seed: int = typer.Option(0, help="Seed for the tokenizer corpus and the weights."),
) -> None:
    """Build the tiny local tokenizer and Qwen3-style model (no downloads, ~260k parameters)."""
    from pairrl.tiny_model import build_tiny_model, load_tiny_model

    path = build_tiny_model(out_dir, seed=seed)
    model, tokenizer = load_tiny_model(path)
    params = sum(p.numel() for p in model.parameters())
    typer.echo(f"wrote {path} ({params:,} parameters, vocabulary {len(tokenizer)})")


@app.command("doctor")
def doctor(
    as_json: bool = typer.Option(False, "--json", help="Print the checks as JSON."),
) -> None:
    """Check what this machine offers pairrl and what each missing piece disables."""
    from pairrl.doctor import run_checks

    checks = run_checks()
    if as_json:
        typer.echo(json.dumps([c.as_dict() for c in checks], indent=2))
        return
    from rich.console import Console
    from rich.markup import escape

    # one line a check, never cut: a path stays whole for copying (the terminal wraps it)
    console = Console(soft_wrap=True, highlight=False)
    console.print("[bold]pairrl doctor[/]: what this machine offers (--json for a machine)")
    width = max(len(c.name) for c in checks)
    for c in checks:
        mark = "[green]yes[/]" if c.ok else "[red] no[/]"
        console.print(f"{mark}  {c.name:<{width}}  {escape(c.detail)}")
        if not c.ok:
            console.print(f"     {'':<{width}}  disables: {escape(c.disables)}")


@app.command("sample")
def sample(
    model_dir: Path = typer.Option(
        DEFAULT_TINY_DIR,
        help="Model folder (the tiny model is built there if absent), a .gguf file or smollm2.",
    ),
    prompt: str = typer.Option("Write a python function that adds two numbers.", help="User turn."),
    n: int = typer.Option(3, min=1, max=64, help="Number of samples."),
    max_new_tokens: int = typer.Option(32, min=1, max=4096, help="Tokens per sample."),
    seed: int = typer.Option(0, help="Sampling seed."),
) -> None:
    """Sample from a model through its chat template.

    The tiny model is built first when --model-dir holds none; a .gguf file is converted
    once (pairrl.model_source)."""
    import torch

    from pairrl.model_source import resolve_model_path
    from pairrl.tiny_model import build_tiny_model, load_tiny_model

    model_dir = Path(resolve_model_path(model_dir))
    if not (model_dir / "config.json").is_file():
        typer.echo(f"building the tiny model in {model_dir} ...")
        build_tiny_model(model_dir, seed=0)
    model, tokenizer = load_tiny_model(model_dir)
    messages = [{"role": "user", "content": prompt}]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    encoded = tokenizer([text] * n, return_tensors="pt", padding=True)
    torch.manual_seed(seed)
    with torch.no_grad():
        output = model.generate(**encoded, max_new_tokens=max_new_tokens, do_sample=True)
    completions = tokenizer.batch_decode(
        output[:, encoded["input_ids"].shape[1] :], skip_special_tokens=True
    )
    for i, completion in enumerate(completions):
        typer.echo(f"[{i}] {completion!r}")


def _register_plugins(root: typer.Typer) -> None:
    """Add subcommands from the `pairrl.commands` entry points; failures stay visible."""
    for ep in sorted(entry_points(group="pairrl.commands"), key=lambda e: e.name):
        try:
            register = ep.load()
            register(root)
        except Exception as err:  # surface the reason on use, keep the rest of the CLI
            _add_broken_command(root, ep.name, ep.value, err)


def _add_broken_command(root: typer.Typer, name: str, target: str, err: Exception) -> None:
    reason = f"{type(err).__name__}: {err}"

    @root.command(
        name,
        help=f"(unavailable: {target} failed to load)",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def _broken() -> None:
        typer.echo(f"pairrl {name} is unavailable: {target} failed to load ({reason})", err=True)
        raise typer.Exit(2)


def main() -> None:
    """Console-script entry point. Input a user supplied that cannot be used (a missing
    file, an unreadable row: ``pairrl.errors.InputError``) ends any command with its
    message and exit status 2, never a traceback."""
    from pairrl.errors import InputError

    _register_plugins(app)
    try:
        app(prog_name="pairrl")
    except InputError as err:
        typer.echo(f"error: {err}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    sys.exit(main())
