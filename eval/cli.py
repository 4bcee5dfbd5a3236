"""`pairrl eval ...`: the benchmark's command line.

    pairrl eval CONFIG [--model PATH | --endpoint URL] [--shard i/n] [--set a.b=v] [--strict]
    pairrl eval --tasks PATH (--model PATH | --endpoint URL | --pool PATH) --k K --limit N --out DIR --strict
    pairrl eval gate OUT_DIR [--strict]     re-check a finished run against its cache
    pairrl eval merge OUT_DIR [--strict]    merge `--shard` runs under OUT_DIR/shards/

Exit status, the same for all three: 0 when the integrity gate PASSes; 1 when it FAILs
(the output then holds the reasons and failure counts, never a score) and, under
`--strict` (or `gate.strict`), also when it passed with failed entries that
`gate.tolerance` let through; 2 for input that cannot be used.

Heavy imports stay inside the command functions so `pairrl --help` stays fast. Input a
user supplied that cannot be used (a missing file, an unreadable row, a pool that matches
no task, a model folder that is not there) is printed as one `error:` message naming the
file, the row and what was expected, with exit status 2 and no traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import typer

from pairrl.cli_help import PlainHelpGroup

__all__ = ["register"]

STRICT_HELP = (
    "A FAIL always exits 1; with --strict, a PASS with failed entries within gate.tolerance "
    "exits 1 too."
)


class _DefaultRunGroup(PlainHelpGroup):
    """A group whose bare invocation (`pairrl eval CONFIG`, `pairrl eval --tasks ...`)
    runs the `run` command, while `gate` and `merge` stay subcommands."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


eval_app = typer.Typer(
    cls=_DefaultRunGroup,
    help=(
        "Best-of-k selection benchmark with an integrity gate.\n\n"
        "\b\n"
        "pairrl eval CONFIG [--model PATH | --endpoint URL] [--set a.b=v] [--strict]\n"
        "pairrl eval --tasks PATH (--model PATH | --endpoint URL | --pool PATH) --k K\n"
        "pairrl eval gate OUT_DIR [--strict]\n"
        "pairrl eval merge OUT_DIR [--strict]\n\n"
        "The first two forms run `pairrl eval run`; `pairrl eval run --help` lists its options."
    ),
    subcommand_metavar="[CONFIG | COMMAND] [ARGS]...",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@eval_app.command("run")
def run_cmd(
    config: Path | None = typer.Argument(
        None, help="YAML config (kind: eval); optional in quick mode."
    ),
    tasks: str | None = typer.Option(None, "--tasks", help="Task file."),
    model: str | None = typer.Option(
        None, "--model", help="Sample candidates from this model folder or .gguf file."
    ),
    endpoint: str | None = typer.Option(
        None, "--endpoint", help="Sample from this OpenAI-compatible URL."
    ),
    pool: str | None = typer.Option(None, "--pool", help="Read candidates from this pool file."),
    k: int | None = typer.Option(None, "--k", min=1, help="Candidates per task."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N tasks."),
    out: str | None = typer.Option(None, "--out", help="Output folder."),
    selectors: str | None = typer.Option(
        None, "--selectors", help="Comma-separated selector names."
    ),
    judge_model: str | None = typer.Option(
        None, "--judge-model", help="Judge model folder or .gguf file."
    ),
    judge_endpoint: str | None = typer.Option(None, "--judge-endpoint", help="Judge endpoint URL."),
    shard: str | None = typer.Option(None, "--shard", help="i/n: run the i-th of n task shards."),
    overrides: list[str] = typer.Option(
        [], "--set", help="Dotted override, e.g. gate.tolerance=0.05."
    ),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show progress bars."),
) -> None:
    """Run the benchmark (sample or load, label, select, gate, report)."""
    from pairrl.eval.runner import run_eval

    cfg = _build_config(
        config,
        tasks,
        model,
        endpoint,
        pool,
        k,
        limit,
        out,
        selectors,
        judge_model,
        judge_endpoint,
        shard,
        overrides,
    )
    with _input_errors():
        outcome = run_eval(cfg, show_progress=progress)
    _print_outcome(outcome)
    _exit(outcome.gate, strict or cfg.gate.strict)


@eval_app.command("gate")
def gate_cmd(
    out_dir: Path = typer.Argument(..., help="A finished run's output folder."),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
) -> None:
    """Re-derive every label and comparison of a finished run from its cache and re-check it."""
    from pairrl.eval.runner import load_run_config, regate

    with _input_errors():
        cfg = load_run_config(out_dir)
        outcome = regate(cfg)
    _print_outcome(outcome)
    _exit(outcome.gate, strict or cfg.gate.strict)


@eval_app.command("merge")
def merge_cmd(
    out_dir: Path = typer.Argument(..., help="Folder holding shards/<i>of<n>/ from --shard runs."),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
) -> None:
    """Merge sharded runs: union of caches, concatenated records, one gate over the whole."""
    from pairrl.eval.merge import merge_shards

    with _input_errors():
        outcome = merge_shards(out_dir)
    _print_outcome(outcome)
    _exit(outcome.gate, strict or outcome.summary["config"]["gate"]["strict"])


@contextmanager
def _input_errors() -> Iterator[None]:
    """Unusable input (`pairrl.errors.InputError`) as one message and exit status 2."""
    from pairrl.errors import InputError

    try:
        yield
    except InputError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None


def _build_config(
    config: Path | None,
    tasks: str | None,
    model: str | None,
    endpoint: str | None,
    pool: str | None,
    k: int | None,
    limit: int | None,
    out: str | None,
    selectors: str | None,
    judge_model: str | None,
    judge_endpoint: str | None,
    shard: str | None,
    overrides: list[str],
) -> Any:
    from pairrl.config import ConfigError, apply_overrides, load_yaml, parse_config
    from pairrl.eval.config import EvalConfig

    sources = [s for s in (model, endpoint, pool) if s]
    if len(sources) > 1:
        raise typer.BadParameter("give at most one of --model, --endpoint, --pool")
    try:
        data: dict[str, Any] = load_yaml(config) if config else {}
        _apply_flags(data, config, tasks, model, endpoint, pool, k, limit, out, selectors)
        judge = {"model": judge_model, "endpoint": judge_endpoint}
        data.setdefault("judge", {}).update({key: v for key, v in judge.items() if v})
        if shard:
            data["shard"] = shard
        cfg = parse_config(
            apply_overrides(data, overrides, EvalConfig),
            EvalConfig,
            str(config or "<command line>"),
        )
    except ConfigError as err:
        typer.echo(str(err), err=True)
        raise typer.Exit(2) from None
    if cfg.shard is not None:
        i, n = cfg.shard.split("/")
        base = Path(cfg.out_dir)
        cfg.cache_dir = cfg.cache_dir or str(base / "shards" / f"{i}of{n}" / "cache")
        cfg.out_dir = str(base / "shards" / f"{i}of{n}")
    return cfg


def _apply_flags(
    data: dict[str, Any],
    config: Path | None,
    tasks: str | None,
    model: str | None,
    endpoint: str | None,
    pool: str | None,
    k: int | None,
    limit: int | None,
    out: str | None,
    selectors: str | None,
) -> None:
    """The quick command line's flags onto the config's data (flags win)."""
    cand = data.setdefault("candidates", {})
    if model:
        cand.update(source="model", model=model)
    elif endpoint:
        cand.update(source="endpoint", endpoint=endpoint)
    elif pool:
        cand.update(source="pool", pool=pool)
    elif config is None:
        raise typer.BadParameter("quick mode needs one of --model, --endpoint, --pool")
    if k is not None:
        cand["k"] = k
    if tasks:
        data.setdefault("tasks", {})["path"] = tasks
    if limit is not None:
        data.setdefault("tasks", {})["limit"] = limit
    if out:
        data["out_dir"] = out
    if selectors:
        data["selectors"] = [s.strip() for s in selectors.split(",") if s.strip()]


def _print_outcome(outcome: Any) -> None:
    """The verdict, the report (for a FAIL: reasons and failure counts, no score), where
    the outputs are."""
    from rich.console import Console

    console = Console()
    verdict = outcome.summary["verdict"]
    colour = "green" if verdict == "PASS" else "bold red"
    console.print(f"[{colour}]integrity gate: {verdict}[/]")
    console.print(outcome.report_text, markup=False, highlight=False, soft_wrap=True)
    shown = "" if verdict == "PASS" else "  no score (the reasons are above);"
    console.print(f"[{colour}]verdict: {verdict}[/]{shown}  outputs in {outcome.out_dir}")


def _exit(gate: Any, strict: bool) -> None:
    """Exit 1 on a FAIL; under ``strict`` also on a PASS that some failed entries reached
    (``gate.tolerance`` let them through)."""
    if not gate.passed:
        raise typer.Exit(1)
    tolerated = {name: st["failed"] for name, st in gate.stages.items() if st["failed"]}
    if strict and tolerated:
        shown = ", ".join(f"{name}: {n}" for name, n in sorted(tolerated.items()))
        typer.echo(
            f"strict: the gate passed with failed entries within the tolerance "
            f"{gate.tolerance:.1%} ({shown}); exiting 1",
            err=True,
        )
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Entry point (`pairrl.commands`): add `pairrl eval ...` to the root app."""
    app.add_typer(eval_app, name="eval")
