"""`pairrl slurm render|submit`: write sbatch scripts for training or evaluation, review, submit.

    pairrl slurm render configs/qwen3_4b_deepcoder.yaml --nodes 4 --gpus-per-node 8 \\
        --accelerate-config configs/accelerate/deepspeed_zero3.yaml --dry-run
    pairrl slurm submit configs/eval_endpoint_mbpp.yaml --shards 8

The config's `kind` (train or eval) decides which job is rendered.

`render` prints the scripts and the exact sbatch commands (and writes the scripts under
RUN_DIR/slurm unless --dry-run); `submit` writes them and runs those commands.
"""

from __future__ import annotations

import inspect
import shlex
import subprocess
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from pairrl.cli_help import PlainHelpGroup

if TYPE_CHECKING:
    from pairrl.slurm.render import EvalJobSpec, RenderedJob, TrainJobSpec

__all__ = ["register"]

slurm_app = typer.Typer(
    cls=PlainHelpGroup,
    help="Render and submit Slurm jobs: multi-node training with a vLLM server node, sharded evaluation.",
    no_args_is_help=True,
)


# The defaults of `_Options` are typer's option declarations, read once from its signature.
# ruff: noqa: RUF009
@dataclass(frozen=True)
class _Options:
    """The options of `render` and `submit`, in the order help lists them.

    Each default is the typer parameter that declares the option: `_bind` hands this
    class's signature to typer, and typer passes every field when it calls the command.
    """

    config: Path = typer.Argument(
        ..., metavar="CONFIG", help="Training (kind: train) or evaluation (kind: eval) YAML."
    )
    nodes: int = typer.Option(
        2, min=1, help="Training nodes in all; with >= 2 the last serves vLLM."
    )
    gpus_per_node: int = typer.Option(0, min=0, help="GPUs per node (0 on CPU clusters).")
    processes_per_node: int | None = typer.Option(
        None, min=1, help="Trainer processes per node; default: GPUs per node."
    )
    accelerate_config: Path | None = typer.Option(
        None,
        help="configs/accelerate/*.yaml (DeepSpeed, FSDP, ...). Default: accelerate's plain "
        "data parallel for several trainer processes on GPU nodes, plain `pairrl train` for "
        "one; several processes on CPU nodes need one.",
    )
    cpus_per_task: int = typer.Option(8, min=1, help="CPU cores per node.")
    mem: str | None = typer.Option(None, help="Memory per node, e.g. 200G.")
    time: str = typer.Option(
        "24:00:00", help="Time limit per (re)start; the job requeues itself at the limit."
    )
    partition: str | None = typer.Option(None, help="Slurm partition.")
    account: str | None = typer.Option(None, help="Slurm account.")
    qos: str | None = typer.Option(None, help="Slurm QOS.")
    job_name: str | None = typer.Option(None, help="Job name; default pairrl-<job>-<config name>.")
    run_dir: Path | None = typer.Option(
        None, help="Logs and scripts go here; default runs/slurm/<config name>."
    )
    vllm_model: str | None = typer.Option(
        None, help="Model for the vLLM server; default: the config's model."
    )
    vllm_tp: int = typer.Option(1, min=1, help="Tensor-parallel size of the vLLM server.")
    vllm_port: int = typer.Option(8000, help="vLLM server port.")
    rdzv_port: int = typer.Option(29500, help="Rendezvous port on the first training node.")
    signal_lead_s: int = typer.Option(
        300, help="Checkpoint and requeue this many seconds before the time limit."
    )
    nccl_socket_ifname: str | None = typer.Option(None, help="NCCL_SOCKET_IFNAME, e.g. ib0.")
    train_out: Path | None = typer.Option(
        None, help="Trainer run folder (--out); default: the config's."
    )
    overrides: list[str] = typer.Option(
        [],
        "--set",
        metavar="KEY.PATH=VALUE",
        help="Passed on to `pairrl train`; repeatable.",
    )
    sbatch_arg: list[str] = typer.Option(
        [],
        metavar="OPTION",
        help="Extra #SBATCH option, repeatable, e.g. --constraint=h100.",
    )
    shards: int = typer.Option(4, min=1, help="Evaluation shards (array tasks).")
    max_parallel: int | None = typer.Option(None, min=1, help="At most this many shards at once.")
    out: Path | None = typer.Option(
        None, help="Evaluation output folder; default: the eval config's out_dir."
    )
    eval_arg: list[str] = typer.Option(
        [], metavar="ARG", help="Extra argument for every `pairrl eval` shard; repeatable."
    )
    serve_model: Path | None = typer.Option(
        None,
        help="Eval: serve this model folder with vLLM in a job of its own and sample from it "
        "(the config's candidates.source must be endpoint).",
    )
    server_arg: list[str] = typer.Option(
        [],
        metavar="ARG",
        help="Eval with --serve-model: extra vLLM server argument, repeatable, e.g. "
        "--enforce-eager.",
    )
    server_max_model_len: int = typer.Option(
        4096, min=16, help="Eval with --serve-model: the server's context length."
    )
    venv: str | None = typer.Option(
        None, help="Virtual environment to activate; default: the current one; 'none': none."
    )
    dry_run: bool = typer.Option(False, "--dry-run", help="Print only; write and submit nothing.")


def _run(options: _Options, *, submit: bool) -> None:
    """Render the job the config's kind names, print it and, unless a dry run, write it (and
    submit it). A config or option that cannot be used exits with status 2 and one message."""
    from pairrl.config import ConfigError
    from pairrl.slurm.render import config_kind, render_eval, render_train

    config = options.config.resolve()
    try:
        job = config_kind(config)
    except ConfigError as err:
        _exit_with(err)
    run = (options.run_dir or Path("runs/slurm") / config.stem).resolve()
    resources = _resource_fields(options, job=job, config=config, run=run)
    try:
        rendered: RenderedJob
        if job == "train":
            rendered = render_train(_train_spec(options, resources))
        else:
            rendered = render_eval(_eval_spec(options, resources))
    except (ConfigError, ValueError) as err:
        _exit_with(err)
    _show_write_submit(rendered, run, dry_run=options.dry_run, submit=submit)


def _exit_with(err: Exception) -> NoReturn:
    """Print `err` as one `error:` line and exit with status 2, without a traceback."""
    typer.echo(f"error: {err}", err=True)
    raise typer.Exit(2) from None


def _resource_fields(options: _Options, *, job: str, config: Path, run: Path) -> dict[str, Any]:
    """The fields every job spec shares: what Slurm is asked for, where, and the config."""
    return {
        "job_name": options.job_name or f"pairrl-{job}-{config.stem}",
        "partition": options.partition,
        "account": options.account,
        "qos": options.qos,
        "time": options.time,
        "cpus_per_task": options.cpus_per_task,
        "mem": options.mem,
        "gpus_per_node": options.gpus_per_node,
        "workdir": str(Path.cwd()),
        "run_dir": str(run),
        "venv": _venv(options.venv),
        "sbatch_args": options.sbatch_arg,
        "config": str(config),
    }


def _train_spec(options: _Options, resources: dict[str, Any]) -> TrainJobSpec:
    """The training job the options describe (pydantic's ValueError on a bad value)."""
    from pairrl.slurm.render import TrainJobSpec

    return TrainJobSpec(
        **resources,
        nodes=options.nodes,
        processes_per_node=options.processes_per_node,
        accelerate_config=_absolute(options.accelerate_config),
        rdzv_port=options.rdzv_port,
        vllm_port=options.vllm_port,
        vllm_model=options.vllm_model,
        vllm_tensor_parallel_size=options.vllm_tp,
        signal_lead_s=options.signal_lead_s,
        nccl_socket_ifname=options.nccl_socket_ifname,
        overrides=options.overrides,
        train_out=_absolute(options.train_out),
    )


def _eval_spec(options: _Options, resources: dict[str, Any]) -> EvalJobSpec:
    """The sharded evaluation the options describe (pydantic's ValueError on a bad value)."""
    from pairrl.slurm.render import EvalJobSpec

    return EvalJobSpec(
        **resources,
        shards=options.shards,
        max_parallel=options.max_parallel,
        out_dir=_absolute(options.out),
        extra_args=options.eval_arg,
        serve_model=_absolute(options.serve_model),
        server_port=options.vllm_port,
        server_max_model_len=options.server_max_model_len,
        server_args=options.server_arg,
    )


def _absolute(path: Path | None) -> str | None:
    """`path` made absolute, as a string; None stays None."""
    return str(path.resolve()) if path else None


def _show_write_submit(rendered: RenderedJob, run: Path, *, dry_run: bool, submit: bool) -> None:
    """Print the scripts and the sbatch commands; unless a dry run, write them (and submit)."""
    script_dir = run / "slurm"
    for name, text in rendered.scripts.items():
        typer.echo(f"# ===== {script_dir / name}\n{text}")
    for note in rendered.notes:
        typer.echo(f"# note: {note}")
    typer.echo("# submit with:")
    typer.echo("\n".join(rendered.submit))
    if dry_run:
        typer.echo("# --dry-run: nothing written, nothing submitted")
        return
    script_dir.mkdir(parents=True, exist_ok=True)
    (run / "logs").mkdir(parents=True, exist_ok=True)
    for name, text in rendered.scripts.items():
        path = script_dir / name
        path.write_text(text)
        path.chmod(0o755)
    typer.echo(f"# wrote {len(rendered.scripts)} scripts to {script_dir}")
    if submit:
        _submit(rendered.steps, run)


def _venv(option: str | None) -> str | None:
    """--venv: unset -> the running interpreter's venv; 'none' -> no activation; else a path."""
    from pairrl.slurm.render import current_venv

    if option is None:
        return current_venv()
    return None if option == "none" else str(Path(option).resolve())


def _submit(steps: list[Any], run: Path) -> None:
    """sbatch each step in order (`--parsable`), wiring the dependencies by job id."""
    job_ids: list[str] = []
    for step in steps:
        cmd = ["sbatch", "--parsable"]
        if step.after is not None:
            cmd += step.dependency_args(job_ids[step.after])
        cmd.append(step.script)
        try:
            result = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
        except FileNotFoundError:
            typer.echo("error: sbatch not found; is this a Slurm login node?", err=True)
            raise typer.Exit(2) from None
        if result.returncode != 0:
            typer.echo(f"error: {shlex.join(cmd)} failed: {result.stderr.strip()}", err=True)
            raise typer.Exit(result.returncode)
        job_ids.append(result.stdout.strip().split(";")[0])
        typer.echo(f"submitted {Path(step.script).name}: job {job_ids[-1]}")
    logs = shlex.quote(str(run / "logs"))
    typer.echo(f"# monitor: squeue -j {','.join(job_ids)}; sacct -j {job_ids[0]}; tail -f {logs}/*")


def _bind(submit: bool) -> Callable[..., None]:
    """A typer command over `_Options`, with `submit` fixed."""

    def command(**options: Any) -> None:
        _run(_Options(**options), submit=submit)

    # typer reads the parameters from the signature and their types from the annotations
    command.__signature__ = inspect.signature(_Options)  # type: ignore[attr-defined]
    command.__annotations__ = typing.get_type_hints(_Options)
    return command


render_cmd = _bind(submit=False)
render_cmd.__doc__ = "Print (and write) the sbatch scripts and the sbatch commands, for review."
submit_cmd = _bind(submit=True)
submit_cmd.__doc__ = "Write the sbatch scripts and submit them (eval: shard array, then merge)."
slurm_app.command("render")(render_cmd)
slurm_app.command("submit")(submit_cmd)


def register(app: typer.Typer) -> None:
    """Add `pairrl slurm ...` to the root CLI (entry point `pairrl.commands: slurm`)."""
    app.add_typer(slurm_app, name="slurm")
