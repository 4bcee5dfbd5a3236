"""``pairrl execute``: judge a file of candidate programs in the sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from pairrl.rewards.results import ExecJob


def read_candidates(path: Path, tasks_by_id: dict[str, object]) -> list[ExecJob]:
    """Read ``{task_id, candidate_id, code}`` JSONL; an unknown task or bad row names the row."""
    from pairrl.rewards.results import ExecJob

    jobs = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            task_id = str(row["task_id"])
            candidate_id = str(row.get("candidate_id", number))
            code = row.get("code")
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise typer.BadParameter(f"{path}: row {number}: {type(exc).__name__}: {exc}") from exc
        if task_id not in tasks_by_id:
            raise typer.BadParameter(
                f"{path}: row {number}: task_id {task_id!r} is not in the tasks file"
            )
        if code is not None and not isinstance(code, str):
            raise typer.BadParameter(f"{path}: row {number}: code must be a string or null")
        jobs.append(ExecJob(tasks_by_id[task_id], code, candidate_id))  # type: ignore[arg-type]
    return jobs


def execute_cmd(
    tasks: Path = typer.Option(
        ...,
        "--tasks",
        help="Task file (MBPP, MBPP+, HumanEval(+), HumanEval-style or stdin/stdout JSONL).",
    ),
    candidates: Path = typer.Option(
        ..., "--candidates", help="JSONL of {task_id, candidate_id, code}."
    ),
    out: Path = typer.Option(..., "--out", help="JSONL verdicts, one line per candidate."),
    timeout: float = typer.Option(
        3.0, "--timeout", min=0.1, max=600, help="Wall seconds per candidate."
    ),
    workers: int = typer.Option(
        0, "--workers", min=0, max=256, help="Sandbox workers (0: twice the cores)."
    ),
    isolation: str = typer.Option(
        "bwrap", "--isolation", help="bwrap (default) or process (gives up isolation; see docs)."
    ),
) -> None:
    """Run every candidate against its task's hidden tests; exit 0 when all were judged."""
    from collections import Counter

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from pairrl.rewards.executor import Executor
    from pairrl.rewards.sandbox import PROCESS_MODE_WARNING, SandboxUnavailable
    from pairrl.rewards.task_loaders import TaskFormatError, load_tasks

    if isolation not in ("bwrap", "process"):
        raise typer.BadParameter(f"--isolation {isolation!r}: allowed values are bwrap, process")
    try:
        task_list = load_tasks(tasks)
    except (TaskFormatError, OSError) as exc:
        raise typer.BadParameter(str(exc)) from exc
    jobs = read_candidates(candidates, {t.task_id: t for t in task_list})
    if isolation == "process":
        typer.echo(f"warning: {PROCESS_MODE_WARNING}", err=True)
    try:
        executor = Executor(workers=workers or None, timeout_s=timeout, isolation=isolation)  # type: ignore[arg-type]
    except SandboxUnavailable as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    with (
        executor,
        Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
        ) as progress,
    ):
        bar = progress.add_task("executing", total=len(jobs))
        results = executor.run(jobs, on_result=lambda _r: progress.advance(bar))
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as handle:
        for result in results:
            handle.write(json.dumps(result.to_json()) + "\n")
    counts = Counter(r.status for r in results)
    typer.echo(
        f"{len(results)} judged, {counts['pass']} passed; "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    )


def register(app: typer.Typer) -> None:
    """Add ``pairrl execute`` to the root CLI."""
    app.command("execute")(execute_cmd)
