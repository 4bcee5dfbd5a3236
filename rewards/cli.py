"""``pairrl execute``: judge a file of candidate programs in the sandbox (math candidates by
their final answer, with nothing executed).

A missing file, an unreadable row or a candidate for a task the tasks file lacks is one
``error:`` line naming the file, the row and what was expected, exit status 2, no traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from pairrl.rewards.results import ExecJob, ExecResult


EXPECTED_ROW = "a JSON object {task_id, candidate_id, code} (math: text instead of code)"


def read_candidates(path: Path, tasks_by_id: dict[str, object]) -> list[ExecJob]:
    """Read ``{task_id, candidate_id, code}`` JSONL (math candidates: ``text``, the
    completion); a missing file, an unknown task or a bad row is an ``InputError``."""
    from pairrl.errors import InputError
    from pairrl.rewards.results import ExecJob

    if not path.is_file():
        raise InputError(f"{path}: file not found; expected a JSONL file, one {EXPECTED_ROW}")
    jobs = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            task_id = str(row["task_id"])
            candidate_id = str(row.get("candidate_id", number))
            code, text = row.get("code"), row.get("text")
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(
                f"{path}: row {number}: {type(exc).__name__}: {exc}; expected {EXPECTED_ROW}"
            ) from None
        if task_id not in tasks_by_id:
            raise InputError(f"{path}: row {number}: task_id {task_id!r} is not in the tasks file")
        if not all(v is None or isinstance(v, str) for v in (code, text)):
            raise InputError(f"{path}: row {number}: code and text must be strings or null")
        task = tasks_by_id[task_id]
        jobs.append(ExecJob(task, code, candidate_id, text=text if text is not None else code))  # type: ignore[arg-type]
    if not jobs:
        raise InputError(f"{path}: holds no candidate; expected a JSONL file, one {EXPECTED_ROW}")
    return jobs


def execute_cmd(
    tasks: Path = typer.Option(
        ...,
        "--tasks",
        help="Task file (MBPP, MBPP+, HumanEval(+), HumanEval-style, stdin/stdout or math "
        "JSONL), a parquet file or a dataset folder.",
    ),
    candidates: Path = typer.Option(
        ..., "--candidates", help="JSONL of {task_id, candidate_id, code} (math: text)."
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

    from pairrl.errors import InputError, require_writable_file
    from pairrl.rewards.task_datasets import load_task_source

    if isolation not in ("bwrap", "process"):
        raise typer.BadParameter(f"--isolation {isolation!r}: allowed values are bwrap, process")
    try:
        task_list = load_task_source(str(tasks))
        jobs = read_candidates(candidates, {t.task_id: t for t in task_list})
        require_writable_file(out, "--out")  # before the run, so no verdict is lost
    except InputError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    results = _label_with_progress(jobs, workers, timeout, isolation)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as handle:
        for result in results:
            handle.write(json.dumps(result.to_json()) + "\n")
    counts = Counter(r.status for r in results)
    typer.echo(
        f"{len(results)} judged, {counts['pass']} passed; "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    )


def _label_with_progress(
    jobs: list[ExecJob], workers: int, timeout: float, isolation: str
) -> list[ExecResult]:
    """Every job's verdict under a progress bar (plain lines in a log file); the sandbox
    starts only for code tasks."""
    from pairrl.progress import bar
    from pairrl.rewards.answers import is_answer_task, label_jobs
    from pairrl.rewards.executor import Executor
    from pairrl.rewards.sandbox import PROCESS_MODE_WARNING, SandboxUnavailable

    executor = None
    if any(not is_answer_task(j.task) for j in jobs):
        if isolation == "process":
            typer.echo(f"warning: {PROCESS_MODE_WARNING}", err=True)
        try:
            executor = Executor(workers=workers or None, timeout_s=timeout, isolation=isolation)  # type: ignore[arg-type]
        except SandboxUnavailable as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from exc
    with bar("executing", total=len(jobs)) as progress:

        def run_code(code_jobs: list[ExecJob]) -> list[ExecResult]:
            assert executor is not None
            return executor.run(code_jobs, on_result=lambda _r: progress.advance())

        try:
            results = label_jobs(jobs, None if executor is None else run_code)
        finally:
            if executor is not None:
                executor.close()
        progress.update(completed=len(jobs))  # math answers are checked without a bar
    return results


def register(app: typer.Typer) -> None:
    """Add ``pairrl execute`` to the root CLI."""
    app.command("execute")(execute_cmd)
