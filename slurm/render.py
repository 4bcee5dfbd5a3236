"""Render sbatch scripts for PairRL training and sharded evaluation on a Slurm cluster.

Training (`render_train`), N nodes:
  * N >= 2: the LAST node of the allocation runs a vLLM server (`trl vllm-serve`); the
    first N-1 nodes run `accelerate launch` with a static multi-node rendezvous
    (`--num_machines N-1`, `--machine_rank` = the node's index among the training nodes,
    `--main_process_ip` = the first training node). The trainer runs in vLLM server mode
    and is told the server node's host name and port. Rank 0 is pinned by node name, not
    by Slurm's task order, so the rendezvous host is always the node that runs rank 0.
  * N == 1: the trainer runs on the node with the engine its config names.
  Both: per-node logs, `#SBATCH --signal=B:USR1@T` so the batch shell hears of the time
  limit T seconds ahead and asks the trainer (SIGTERM) to checkpoint and stop, then
  requeues the job (`--requeue`); a preempted job gets SIGTERM from Slurm and is requeued
  by Slurm. A restarted job passes `--resume` whenever a checkpoint exists.
Evaluation (`render_eval`): an array job over shards (`pairrl eval CONFIG --shard i/n`)
and a merge job that starts after every shard succeeded (`--dependency=afterok`). With
`serve_model`, a vLLM server job comes first (`pairrl.rollout.serve.vllm_server_command`);
the shards start once it runs (`--dependency=after`), wait for the endpoint it writes when
it answers, and sample from it; a stop job cancels it once every shard has ended
(`--dependency=afterany`), whether they succeeded or not.

The run config is parsed with its typed schema (`TrainConfig` or `EvalConfig`), so a bad
file fails here, before anything is submitted; the few fields the scripts override are
named once below and checked against the schema when this module loads.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pairrl.config import ConfigError, load_config, load_yaml
from pairrl.eval.config import EvalConfig
from pairrl.slurm.specs import EvalJobSpec, SlurmResources, TrainJobSpec, train_launcher
from pairrl.slurm.templates import (
    EVAL_MERGE,
    EVAL_SERVER,
    EVAL_SERVER_STOP,
    EVAL_SHARDS,
    SHARD_ENDPOINT,
    TRAIN_BATCH,
    TRAIN_NODE,
    fill,
)
from pairrl.train.config import TrainConfig
from pairrl.train.plan import run_dir as train_run_dir

__all__ = [
    "EvalJobSpec",
    "RenderedJob",
    "SlurmResources",
    "SubmitStep",
    "TrainJobSpec",
    "config_kind",
    "render_eval",
    "render_train",
]


def _train_field(*parts: str) -> str:
    """The dotted name of a TrainConfig field, checked against the schema at import time."""
    model: Any = TrainConfig
    for part in parts:
        if not (isinstance(model, type) and part in model.model_fields):
            raise AttributeError(f"TrainConfig has no field {'.'.join(parts)!r}")
        model = model.model_fields[part].annotation
    return ".".join(parts)


# The overrides the rendered scripts pass to `pairrl train` in server mode.
ENGINE_KIND = _train_field("engine", "kind")
SERVER_BASE_URL = _train_field("engine", "server_base_url")
SERVER_HOST = _train_field("engine", "server_host")
SERVER_PORT = _train_field("engine", "server_port")
SERVER_KIND = "vllm_server"


@dataclass(frozen=True)
class SubmitStep:
    """One sbatch call: the script, and the earlier step (index) it must wait for, if any,
    with the kind of wait (`afterok`: that job succeeded; `after`: it started;
    `afterany`: it ended)."""

    script: str
    after: int | None = None
    dependency: str = "afterok"

    def dependency_args(self, job_id: str) -> list[str]:
        """sbatch options for waiting on the job `job_id` of step `after`."""
        return [f"--dependency={self.dependency}:{job_id}", "--kill-on-invalid-dep=yes"]


@dataclass(frozen=True)
class RenderedJob:
    """Scripts to write (file name -> text) and the sbatch calls that submit them, in order."""

    scripts: dict[str, str]
    steps: list[SubmitStep]
    notes: list[str]

    @property
    def submit(self) -> list[str]:
        """The sbatch calls as shell lines a user can paste (later ones use earlier job ids)."""
        lines = []
        for i, step in enumerate(self.steps):
            dep = (
                ""
                if step.after is None
                else " ".join(step.dependency_args(f"${{job{step.after}%%;*}}")) + " "
            )
            lines.append(
                f'job{i}=$(sbatch --parsable {dep}{shlex.quote(step.script)}); echo "submitted job $job{i}"'
            )
        return lines


def current_venv() -> str | None:
    """The active virtual environment (sys.prefix), or None outside one."""
    return sys.prefix if sys.prefix != sys.base_prefix else None


def config_kind(path: str | Path) -> str:
    """'train' or 'eval', from the config's `kind` (an eval config may leave it out)."""
    kind = load_yaml(path).get("kind", "eval")
    if kind not in ("train", "eval"):
        raise ConfigError(str(path), [f"kind = {kind!r} is invalid. Allowed: 'train', 'eval'"])
    return str(kind)


_JOB_NAMES = {"train": "a training job", "eval": "an evaluation job"}


def _check_kind(config: str, kind: str) -> None:
    """ConfigError unless the config at `config` is of `kind` (train or eval)."""
    if config_kind(config) != kind:
        raise ConfigError(config, [f"kind: {_JOB_NAMES[kind]} needs a config with kind: {kind}"])


def _script_dir(spec: SlurmResources) -> Path:
    """Where the rendered scripts are written."""
    return Path(spec.run_dir, "slurm")


def _log(spec: SlurmResources, name: str = "%x-%j") -> str:
    """A job's log file (`name` in sbatch's filename pattern: %x job name, %j job id)."""
    return f"{spec.run_dir}/logs/{name}.out"


def render_train(spec: TrainJobSpec) -> RenderedJob:
    """Render the training batch script and its per-node launcher.

    Without an accelerate config, several trainer processes on GPU nodes run accelerate's
    plain data parallel (`--multi_gpu`), and a single one runs `pairrl train` alone.
    Raises ConfigError when the config and the node count do not fit together (server mode
    on one node, more server GPUs than a node has, several trainer processes on CPU nodes
    without an accelerate config).
    """
    _check_kind(spec.config, "train")
    cfg = load_config(spec.config, TrainConfig, spec.overrides)  # a bad file fails here
    server_mode = spec.nodes >= 2
    train_nodes = spec.nodes - 1 if server_mode else 1
    per_node = spec.processes_per_node or max(spec.gpus_per_node, 1)
    vllm_model = spec.vllm_model or cfg.model.path
    run_folder = Path(spec.workdir, spec.train_out or str(train_run_dir(cfg)))
    trainer_args = ["train", spec.config, *_set_args(spec.overrides), "--out", str(run_folder)]
    notes = [f"trainer run folder: {run_folder} (a requeued job resumes from its last checkpoint)"]
    if server_mode:
        _check_server_mode(spec)
        trainer_args += _set_args([f"{ENGINE_KIND}={SERVER_KIND}", f"{SERVER_BASE_URL}=null"])
        notes.insert(
            0,
            f"nodes 1..{train_nodes} train ({train_nodes * per_node} processes); node {spec.nodes} serves vLLM",
        )
    elif cfg.engine.kind == SERVER_KIND:
        raise ConfigError(
            spec.config,
            [f"{ENGINE_KIND} = {SERVER_KIND!r} needs --nodes >= 2 (the last node runs the server)"],
        )

    launcher = train_launcher(spec, train_nodes, per_node)
    if spec.accelerate_config is None and "--multi_gpu" in launcher:
        notes.append("no --accelerate-config: accelerate's plain data parallel (--multi_gpu)")
    server_set = f' --set {SERVER_HOST}="$VLLM_HOST" --set {SERVER_PORT}="$VLLM_PORT"'
    node_script = fill(
        TRAIN_NODE,
        LAUNCHER=launcher,
        TRAINER_ARGS=_quote(trainer_args) + (server_set if server_mode else ""),
    )
    vllm_cmd = _vllm_command(spec, str(vllm_model)) if server_mode else None
    batch = _train_batch(spec, run_folder, vllm_cmd)
    return RenderedJob(
        scripts={"train.sbatch": batch, "train-node.sh": node_script},
        steps=[SubmitStep(str(_script_dir(spec) / "train.sbatch"))],
        notes=notes,
    )


def _train_batch(spec: TrainJobSpec, run_folder: Path, vllm_cmd: list[str] | None) -> str:
    """The training batch script; `vllm_cmd` is the server node's command (None: no server
    node, the job trains on one node)."""
    return fill(
        TRAIN_BATCH,
        HEADER=_header(
            spec,
            nodes=spec.nodes,
            log=_log(spec),
            extra=[f"--signal=B:USR1@{spec.signal_lead_s}", "--requeue", "--open-mode=append"],
        ),
        SETUP=_setup(spec),
        NODES=str(spec.nodes),
        SERVER_MODE="0" if vllm_cmd is None else "1",
        LOG_DIR=shlex.quote(f"{spec.run_dir}/logs"),
        CHECKPOINT_DIR=shlex.quote(str(run_folder)),
        NODE_SCRIPT=shlex.quote(str(_script_dir(spec) / "train-node.sh")),
        RDZV_PORT=str(spec.rdzv_port),
        VLLM_PORT=str(spec.vllm_port),
        VLLM_CMD="true" if vllm_cmd is None else _quote(vllm_cmd),
        SERVER_WAIT_S=str(spec.server_wait_s),
        MAX_REQUEUES=str(spec.max_requeues),
        NCCL_IFNAME=f"export NCCL_SOCKET_IFNAME={shlex.quote(spec.nccl_socket_ifname)}"
        if spec.nccl_socket_ifname
        else "# NCCL_SOCKET_IFNAME unset: NCCL picks the interface (set --nccl-socket-ifname if it picks wrong)",
        CPUS=str(spec.cpus_per_task),
        STEP_GPUS=f"--gpus-per-node={spec.gpus_per_node} " if spec.gpus_per_node else "",
    )


def render_eval(spec: EvalJobSpec) -> RenderedJob:
    """Render the shard array job and the merge job that depends on it.

    Shard i of n runs `pairrl eval CONFIG --out OUT --shard i/n` (eval writes it under
    OUT/shards/<i>of<n>/); the merge runs `pairrl eval merge OUT` once all n succeeded. A
    gate FAIL exits 1 in a shard and in the merge alike, so the job shows FAILED and no
    merge follows a failed shard (its report says why); the merge is also ``--strict``
    (failed entries within the tolerance exit 1 too) when the config's gate is.
    """
    _check_kind(spec.config, "eval")  # fails here, before submission, on a bad file
    cfg = load_config(spec.config, EvalConfig)  # a bad file fails here, before submission
    out_dir = str(Path(spec.workdir, spec.out_dir or cfg.out_dir))
    strict = cfg.gate.strict or "--strict" in spec.extra_args
    server_dir = shlex.quote(f"{spec.run_dir}/server")
    if spec.serve_model and cfg.candidates.source != "endpoint":
        raise ConfigError(
            spec.config,
            ["--serve-model: the shards sample from the server, so candidates.source must be "
             f"'endpoint' (it is {cfg.candidates.source!r})"],
        )  # fmt: skip
    scripts = {
        "eval-shards.sbatch": _eval_shards(spec, out_dir, server_dir),
        "eval-merge.sbatch": _eval_merge(spec, out_dir, strict=strict),
    }
    notes = [
        f"{spec.shards} shards write into {out_dir}/shards; the merge (into {out_dir}) runs when all succeeded"
    ]
    if spec.serve_model:
        scripts.update(_eval_server_scripts(spec, cfg.candidates.served_model, server_dir))
        notes.insert(
            0,
            f"a vLLM server job serves {spec.serve_model} on port {spec.server_port}; the shards "
            "sample from it and a stop job cancels it when they have ended",
        )
    return RenderedJob(scripts=scripts, steps=_eval_steps(spec), notes=notes)


def _eval_shards(spec: EvalJobSpec, out_dir: str, server_dir: str) -> str:
    """The shard array job; with `serve_model`, each shard first waits for the server's
    endpoint (written under `server_dir`) and samples from it."""
    throttle = f"%{spec.max_parallel}" if spec.max_parallel else ""
    shard_args = ["eval", spec.config, "--out", out_dir, *spec.extra_args]
    return fill(
        EVAL_SHARDS,
        HEADER=_header(
            spec,
            nodes=1,
            log=_log(spec, "%x-%A_%a"),
            extra=[f"--array=0-{spec.shards - 1}{throttle}"],
        ),
        SETUP=_setup(spec),
        SHARDS=str(spec.shards),
        EVAL_ARGS=_quote(shard_args),
        ENDPOINT=fill(SHARD_ENDPOINT, SERVER_DIR=server_dir, SERVER_WAIT_S=str(spec.server_wait_s))
        if spec.serve_model
        else "",
        ENDPOINT_ARGS='--set "candidates.endpoint=$ENDPOINT" ' if spec.serve_model else "",
    )


def _eval_merge(spec: EvalJobSpec, out_dir: str, *, strict: bool) -> str:
    """The job that merges the shards into `out_dir` (a CPU job: it runs no model)."""
    merge_args = ["eval", "merge", out_dir, *(["--strict"] if strict else [])]
    merge_spec = spec.model_copy(update={"job_name": f"{spec.job_name}-merge", "gpus_per_node": 0})
    return fill(
        EVAL_MERGE,
        HEADER=_header(merge_spec, nodes=1, log=_log(spec), extra=[]),
        SETUP=_setup(spec),
        MERGE_ARGS=_quote(merge_args),
    )


def _eval_steps(spec: EvalJobSpec) -> list[SubmitStep]:
    """The sbatch calls of an evaluation: shards then merge, or with `serve_model` server,
    shards once it runs, merge, and the stop job once the shards have ended."""
    script_dir = _script_dir(spec)
    if not spec.serve_model:
        return [
            SubmitStep(str(script_dir / "eval-shards.sbatch")),
            SubmitStep(str(script_dir / "eval-merge.sbatch"), after=0),
        ]
    return [
        SubmitStep(str(script_dir / "eval-server.sbatch")),
        SubmitStep(str(script_dir / "eval-shards.sbatch"), after=0, dependency="after"),
        SubmitStep(str(script_dir / "eval-merge.sbatch"), after=1),
        SubmitStep(str(script_dir / "eval-server-stop.sbatch"), after=1, dependency="afterany"),
    ]


def _eval_server_scripts(spec: EvalJobSpec, served_model: str, server_dir: str) -> dict[str, str]:
    """The vLLM server job of a sharded evaluation and the job that stops it."""
    from pairrl.rollout.samplers.vllm import DEFAULT_CPU_KVCACHE_GIB
    from pairrl.rollout.serve import vllm_server_command

    assert spec.serve_model is not None
    command = vllm_server_command(
        spec.serve_model,
        port=spec.server_port,
        host="0.0.0.0",
        max_model_len=spec.server_max_model_len,
        served_model_name=served_model,
        python="PYTHON",
        # rendered here, run on the cluster's node: the dtype is named, not this machine's
        dtype="float32",
        extra=spec.server_args,
    )
    server_spec = spec.model_copy(update={"job_name": f"{spec.job_name}-vllm"})
    stop_spec = spec.model_copy(
        update={"job_name": f"{spec.job_name}-stop", "gpus_per_node": 0, "cpus_per_task": 1}
    )
    return {
        "eval-server.sbatch": fill(
            EVAL_SERVER,
            HEADER=_header(server_spec, nodes=1, log=_log(spec), extra=[]),
            SETUP=_setup(spec),
            SERVER_DIR=server_dir,
            PORT=str(spec.server_port),
            KVCACHE_GIB=str(DEFAULT_CPU_KVCACHE_GIB),
            SERVER_CMD='"$PAIRRL_PYTHON" ' + _quote(command[1:]),
            SERVER_WAIT_S=str(spec.server_wait_s),
        ),
        "eval-server-stop.sbatch": fill(
            EVAL_SERVER_STOP,
            HEADER=_header(stop_spec, nodes=1, log=_log(spec), extra=[]),
            SERVER_DIR=server_dir,
        ),
    }


def _check_server_mode(spec: TrainJobSpec) -> None:
    """What a trainer-nodes-plus-server-node job needs; ConfigError listing what is missing."""
    problems = []
    if spec.gpus_per_node and spec.vllm_tensor_parallel_size > spec.gpus_per_node:
        problems.append(
            f"--vllm-tp {spec.vllm_tensor_parallel_size} exceeds --gpus-per-node {spec.gpus_per_node}"
        )
    if problems:
        raise ConfigError(spec.config, problems)


def _vllm_command(spec: TrainJobSpec, model: str) -> list[str]:
    """The server node's command: TRL's vLLM server with weight sync for the trainers."""
    return [
        "trl",
        "vllm-serve",
        "--model",
        model,
        "--host",
        "0.0.0.0",
        "--port",
        str(spec.vllm_port),
        "--tensor_parallel_size",
        str(spec.vllm_tensor_parallel_size),
        *spec.vllm_args,
    ]


def _quote(args: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in args)


def _set_args(overrides: list[str]) -> list[str]:
    out: list[str] = []
    for item in overrides:
        out += ["--set", item]
    return out


def _header(spec: SlurmResources, *, nodes: int, log: str, extra: list[str]) -> str:
    lines = [
        f"--job-name={spec.job_name}",
        f"--nodes={nodes}",
        "--ntasks-per-node=1",
        f"--cpus-per-task={spec.cpus_per_task}",
        f"--time={spec.time}",
        f"--output={log}",
        f"--chdir={spec.workdir}",
    ]
    if spec.gpus_per_node:
        lines.append(f"--gpus-per-node={spec.gpus_per_node}")
    for flag, value in (
        ("partition", spec.partition),
        ("account", spec.account),
        ("qos", spec.qos),
        ("mem", spec.mem),
    ):
        if value:
            lines.append(f"--{flag}={value}")
    lines += extra + spec.sbatch_args
    for line in lines:
        if any(c in line for c in "\n\r"):
            raise ConfigError("sbatch", [f"option {line!r} holds a line break"])
    return "\n".join(f"#SBATCH {line}" for line in lines)


def _setup(spec: SlurmResources) -> str:
    """Shell lines that make `pairrl` available and fix the environment."""
    lines = []
    if spec.venv:
        lines.append(f"source {shlex.quote(str(Path(spec.venv, 'bin', 'activate')))}")
    lines.append(
        'PAIRRL_BIN="$(command -v pairrl)" || { echo "pairrl is not on PATH" >&2; exit 2; }'
    )
    lines.append("export PAIRRL_BIN")
    return "\n".join(lines)
