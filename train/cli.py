"""`pairrl train CONFIG [--set k=v ...] [--dry-run] [--resume] [--out DIR]`, and `pairrl
experiment CONFIG ...` with the same options (a recipe's experiment around one training).

Also the command accelerate runs on every process:
``accelerate launch --config_file configs/accelerate/X.yaml "$(which pairrl)" train CONFIG``.
Heavy imports happen inside the command so `pairrl --help` stays fast.

Asked to stop (SIGTERM, or Ctrl-C) during training, a run finishes its step, saves a
checkpoint (``pairrl.train.checkpoint_on_signal``), writes ``RUN/run.json`` with
``"status": "interrupted"``, prints the command that resumes it and exits 0: a pre-empted
run has done what it could. A second signal stops it at once (exit 143 or 130).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:  # heavy imports stay inside the command
    from pairrl.train.config import TrainConfig
    from pairrl.train.plan import RunPlan

__all__ = ["experiment_cmd", "register", "train_cmd"]


_SET = typer.Option(
    [],
    "--set",
    metavar="KEY.PATH=VALUE",
    help="Dotted override, repeatable: --set batch.max_steps=5",
)
_DRY_RUN = typer.Option(
    False, "--dry-run", help="Print the resolved plan and exit without loading a model."
)
_RESUME = typer.Option(
    False, "--resume", help="Continue from the last checkpoint in the run folder."
)
_OUT = typer.Option(
    None, "--out", help="Run folder (default: checkpoint.output_dir/logging.run_name)."
)
_JSON = typer.Option(False, "--json", help="With --dry-run: print the plan as JSON.")
_PROCESSES = typer.Option(
    None, "--processes", min=1, help="With --dry-run: plan for N processes (default: this launch)."
)


def train_cmd(
    config: Path = typer.Argument(
        ..., metavar="CONFIG", help="Training YAML (kind: train), e.g. configs/tiny_cpu.yaml."
    ),
    set_: list[str] = _SET,
    dry_run: bool = _DRY_RUN,
    resume: bool = _RESUME,
    out: str | None = _OUT,
    as_json: bool = _JSON,
    processes: int | None = _PROCESSES,
) -> None:
    """Train one policy with PairRL (or the PointRL / GRPO baselines) on TRL's GRPOTrainer."""
    _launch("train", config, list(set_), dry_run, resume, out, as_json, processes)


def experiment_cmd(
    config: Path = typer.Argument(
        ...,
        metavar="CONFIG",
        help="Experiment YAML (kind: experiment, a recipe with an experiment), e.g. "
        "configs/toy_cpu.yaml.",
    ),
    set_: list[str] = _SET,
    dry_run: bool = _DRY_RUN,
    resume: bool = _RESUME,
    out: str | None = _OUT,
    as_json: bool = _JSON,
    processes: int | None = _PROCESSES,
) -> None:
    """Run a recipe's experiment: its policy's training with the work the recipe runs
    beside and after it (the main job: a warm start, PairRL and GRPO trained from it, and
    the selection benchmark of all three)."""
    _launch("experiment", config, list(set_), dry_run, resume, out, as_json, processes)


def _launch(
    command: str,
    config: Path,
    set_: list[str],
    dry_run: bool,
    resume: bool,
    out: str | None,
    as_json: bool,
    processes: int | None,
) -> None:
    """Check the config, its recipe, data, run folder and model before any work; then the
    dry run's plan, or the run and its report."""
    from pairrl.config import ConfigError, load_config
    from pairrl.errors import InputError
    from pairrl.model_paths import check_model_path
    from pairrl.train.config import TrainConfig
    from pairrl.train.data import check_data_source
    from pairrl.train.plan import format_plan, resolve_plan
    from pairrl.train.run_folder import check_run_folder
    from pairrl.train.task_family import resolve_recipe

    try:
        cfg = load_config(config, TrainConfig, set_)
        loaded = resolve_recipe(cfg.recipe)  # a recipe's options fail here too, early
        _check_kind(command, config, cfg.kind, loaded)
        check_data_source(cfg.data)  # and a missing task file
        plan = resolve_plan(cfg, num_processes=processes if dry_run else None, out=out)
        check_run_folder(Path(plan.output_dir))  # before any work, as are the model files
        if not cfg.model.build_tiny:  # a GGUF converts at its first load, not here
            check_model_path("model.path", cfg.model.path, convert=False, hub=False)
    except (ConfigError, InputError) as err:
        _fail(err)
    if dry_run:
        if as_json:
            typer.echo(json.dumps(plan.as_dict(), indent=2))
        else:
            typer.echo(f"plan for {config} (dry run, no model loaded)")
            typer.echo(format_plan(plan))
        return
    resume_line = resume_command(config, plan.output_dir, set_, command)
    summary = _train(cfg, plan, resume, resume_line, command)
    if summary["main_process"]:  # one summary per launch, not one per process
        _report(summary, cfg.logging.console, resume_line)


def _check_kind(command: str, config: Path, kind: str, loaded: Any) -> None:
    """``pairrl train`` trains a ``kind: train`` config; ``pairrl experiment`` runs a
    ``kind: experiment`` config whose recipe has an experiment. Otherwise: which to use."""
    from pairrl.errors import InputError

    if command == "train" and kind == "experiment":
        raise InputError(
            f"{config} is an experiment (kind: experiment): run it with `pairrl experiment "
            f"{config} --out RUN`, or train its policy alone with `--set kind=train`"
        )
    if command == "experiment" and kind != "experiment":
        raise InputError(
            f"{config} is one training (kind: {kind}): run it with `pairrl train {config}`"
        )
    if command == "experiment" and not hasattr(loaded.recipe, "run_experiment"):
        raise InputError(
            f"the recipe {loaded.name} has no experiment (no run_experiment): train it with "
            "`pairrl train` and kind: train"
        )


def _continue_line(run_dir: Path, resume_line: str) -> str:
    """The command that continues a stopped run: ``--resume`` once a checkpoint exists;
    before one, the command itself (a finished warm start is reused, not redone)."""
    from pairrl.train.checkpoints import checkpoint_folders

    if checkpoint_folders(run_dir):
        return resume_line
    return resume_line.removesuffix(" --resume")


def _train(
    cfg: TrainConfig, plan: RunPlan, resume: bool, resume_line: str, command: str
) -> dict[str, Any]:
    """The run (``pairrl.train.run``, or the recipe's experiment around it), with glibc's memory reuse set before any tensor:
    training steps change their tensors' sizes every step, and glibc's defaults would map
    and fault in fresh pages each time (``pairrl.memory`` says why). A stop outside a
    training step (Ctrl-C, SIGTERM) is one line naming the command that continues."""
    from pairrl.config import ConfigError
    from pairrl.errors import InputError
    from pairrl.memory import reuse_freed_memory
    from pairrl.train.checkpoint_on_signal import StopRequested, stop_raises
    from pairrl.train.experiment import run_experiment
    from pairrl.train.run import run_training

    run = run_experiment if command == "experiment" else run_training
    reuse_freed_memory()
    # the main process only: a rank blocked in a collective must still die on SIGTERM
    stops = stop_raises() if os.environ.get("RANK", "0") == "0" else nullcontext()
    try:
        with stops:
            return run(cfg, plan, resume=resume)
    except (ConfigError, InputError) as err:  # InputError: a dataset's row or column
        _fail(err)
    except (KeyboardInterrupt, StopRequested) as stop:  # loading, warm start, baseline, benchmark
        name = _stop_name(stop)
    _stopped(plan, resume_line, name)


def _stopped(plan: RunPlan, resume_line: str, name: str) -> NoReturn:
    """Report a stop outside the run's own training step and exit 143 (130: Ctrl-C).
    Called once the stop's traceback is gone, and collected first: the stages' objects it
    held (a worker pool's semaphores) are then released, not reported as leaked at exit."""
    import gc

    gc.collect()
    run_dir = Path(plan.output_dir)
    command = _continue_line(run_dir, resume_line)
    if os.environ.get("RANK", "0") == "0":
        _record_stop(run_dir, name, command)
    typer.echo(
        f"stopped ({name}) outside the run's own training step; {run_dir} keeps the "
        "stages that finished and the last checkpoint of each training; continue "
        f"with:\n  {command}",
        err=True,
    )
    raise typer.Exit(130 if name == "Ctrl-C" else 128 + signal.SIGTERM)


def _stop_name(stop: BaseException) -> str:
    """The signal this process was stopped by, as the user would name it (a stop raised in
    a worker process names the request the worker received from this one)."""
    from pairrl.train.checkpoint_on_signal import stop_received

    received = stop_received()
    if isinstance(stop, KeyboardInterrupt) or received == signal.SIGINT:
        return "Ctrl-C"
    return signal.Signals(received or signal.SIGTERM).name


def _record_stop(run_dir: Path, name: str, command: str) -> None:
    """``RUN/run.json`` says the run was stopped and how to continue it (not what an earlier
    launch of it said); nothing is written where the run folder was not made yet."""
    if run_dir.is_dir():
        record = {"status": "interrupted", "signal": name, "run_dir": str(run_dir)}
        record["resume_command"] = command
        (run_dir / "run.json").write_text(json.dumps(record, indent=2) + "\n")


def resume_command(config: Path, run_dir: str, overrides: list[str], command: str = "train") -> str:
    """The command line that resumes this run: its config, run folder and overrides."""
    args = ["pairrl", command, str(config), "--out", run_dir]
    for override in overrides:
        args += ["--set", override]
    return shlex.join([*args, "--resume"])


def _report(summary: dict[str, Any], console: str, resume: str) -> None:
    """``RUN/run.json``, and the run's summary on the console (whole, or one line)."""
    run_dir = Path(summary["run_dir"])
    step = summary.get("interrupted_at_step")
    record: dict[str, Any] = {"status": "finished" if step is None else "interrupted", **summary}
    if step is not None:
        record["checkpoint"] = str(run_dir / f"checkpoint-{step}")
        record["resume_command"] = resume
    run_json = run_dir / "run.json"
    run_json.write_text(json.dumps(record, indent=2) + "\n")
    if console == "dicts":
        typer.echo(json.dumps(record, indent=2))
    if step is not None:
        typer.echo(
            f"stopped at step {step}: checkpoint {record['checkpoint']}; "
            f"run summary {run_json}; resume with:\n  {resume}"
        )
    elif console != "dicts":
        typer.echo(
            f"done: {summary['global_step']} steps in {summary['wall_s']:.0f} s; "
            f"model {summary['final_model']}; run summary {run_json}"
        )


def _fail(err: Exception) -> NoReturn:
    """A config or input error as its message (no traceback), exit status 2."""
    from pairrl.config import ConfigError

    typer.echo(str(err) if isinstance(err, ConfigError) else f"error: {err}", err=True)
    raise typer.Exit(2) from None


def register(app: typer.Typer) -> None:
    """Add `pairrl train`, `pairrl experiment` and `pairrl export` (a run's model as one
    plain HF folder) to the root CLI (entry point `pairrl.commands: train`)."""
    from pairrl.train.export import export_cmd

    app.command("train")(train_cmd)
    app.command("experiment")(experiment_cmd)
    app.command("export")(export_cmd)
