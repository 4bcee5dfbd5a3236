"""What a rendered Slurm job asks for (resources, node roles, ports, requeue policy) and how
its trainer processes are launched (`train_launcher`).

Plain pydantic models (bounds and descriptions on every field, unknown keys refused), built
by `pairrl slurm render|submit` from its options and consumed by `pairrl.slurm.render`.
"""

from __future__ import annotations

import shlex

from pydantic import Field

from pairrl.config import ConfigError, PairrlModel

__all__ = ["EvalJobSpec", "SlurmResources", "TrainJobSpec", "train_launcher"]


class SlurmResources(PairrlModel):
    """What every rendered job asks Slurm for, and where it runs."""

    job_name: str = Field("pairrl", min_length=1, description="Slurm job name (%x in log names).")
    partition: str | None = Field(None, description="Partition (-p); None: cluster default.")
    account: str | None = Field(None, description="Account (-A); None: user default.")
    qos: str | None = Field(None, description="Quality of service; None: default.")
    time: str = Field(
        "24:00:00", description="Time limit per (re)start, as sbatch --time takes it."
    )
    cpus_per_task: int = Field(8, ge=1, le=1024, description="CPU cores per node-task.")
    mem: str | None = Field(
        None, description="Memory per node (sbatch --mem, e.g. 200G); None: default."
    )
    gpus_per_node: int = Field(0, ge=0, le=64, description="GPUs per node (0 on CPU clusters).")
    workdir: str = Field(
        ..., description="Absolute folder the job runs in (relative paths resolve here)."
    )
    run_dir: str = Field(..., description="Absolute folder for logs and the rendered scripts.")
    venv: str | None = Field(None, description="Virtual environment to activate; None: none.")
    sbatch_args: list[str] = Field(
        default_factory=list, description="Extra #SBATCH lines, e.g. '--constraint=h100'."
    )


class TrainJobSpec(SlurmResources):
    """A multi-node (or one-node) PairRL training job."""

    config: str = Field(..., description="Absolute path of the training YAML.")
    nodes: int = Field(
        2, ge=1, le=1024, description="Nodes in all; with >= 2 the last one serves vLLM."
    )
    processes_per_node: int | None = Field(
        None, ge=1, le=64, description="Trainer processes per node; None: gpus_per_node (1 on CPU)."
    )
    accelerate_config: str | None = Field(
        None,
        description="configs/accelerate/*.yaml; None: accelerate's plain data parallel "
        "(--multi_gpu) for several GPU processes, `pairrl train` alone for one process.",
    )
    rdzv_port: int = Field(
        29500, ge=1024, le=65535, description="Port of the rendezvous on the first training node."
    )
    vllm_port: int = Field(8000, ge=1024, le=65535, description="Port of the vLLM server.")
    vllm_model: str | None = Field(
        None, description="Model the vLLM server loads; None: the config's model."
    )
    vllm_tensor_parallel_size: int = Field(
        1, ge=1, le=64, description="GPUs the vLLM server shards the model over."
    )
    vllm_args: list[str] = Field(
        default_factory=list, description="Extra `trl vllm-serve` arguments."
    )
    server_wait_s: int = Field(
        1200,
        ge=10,
        le=86400,
        description="How long to wait for the vLLM server to answer /health/.",
    )
    signal_lead_s: int = Field(
        300,
        ge=30,
        le=7200,
        description="Seconds before the time limit at which to checkpoint and requeue.",
    )
    max_requeues: int = Field(
        20,
        ge=0,
        le=1000,
        description="Stop requeueing after this many restarts (guards a job that never progresses).",
    )
    nccl_socket_ifname: str | None = Field(
        None, description="NCCL_SOCKET_IFNAME (e.g. ib0); None: NCCL's choice."
    )
    overrides: list[str] = Field(
        default_factory=list, description="`--set key=value` passed on to pairrl train."
    )
    train_out: str | None = Field(
        None,
        description="Trainer run folder (--out); None: the config's checkpoint.output_dir/run_name.",
    )


class EvalJobSpec(SlurmResources):
    """A sharded evaluation: an array job over shards plus a dependent merge."""

    config: str = Field(..., description="Absolute path of the evaluation YAML.")
    shards: int = Field(
        4, ge=1, le=10000, description="Array tasks; shard i of n evaluates every n-th task."
    )
    max_parallel: int | None = Field(
        None, ge=1, le=10000, description="Array throttle (%N); None: no limit."
    )
    out_dir: str | None = Field(
        None,
        description="Folder the shards write into and the merge reads; None: the config's out_dir.",
    )
    extra_args: list[str] = Field(
        default_factory=list, description="Arguments passed on to every `pairrl eval` shard."
    )
    serve_model: str | None = Field(
        None,
        description="Model folder a vLLM server job of its own serves; the shards sample from "
        "it (candidates.endpoint, and the judge's when it defaults to the generator). "
        "None: the config's endpoint or model is used as it is.",
    )
    server_port: int = Field(8000, ge=1024, le=65535, description="Port of that vLLM server.")
    server_max_model_len: int = Field(
        4096, ge=16, le=1_048_576, description="Context length the server is started with."
    )
    server_args: list[str] = Field(
        default_factory=list,
        description="Extra vLLM server arguments, e.g. --enforce-eager (CPU: faster start).",
    )
    server_wait_s: int = Field(
        1200, ge=10, le=86400, description="How long the server and the shards wait for it."
    )


def train_launcher(spec: TrainJobSpec, train_nodes: int, per_node: int) -> str:
    """The command in front of `pairrl train` on each training node: the accelerate config
    given; without one, nothing for a single trainer process and accelerate's own data
    parallel (`--multi_gpu`) for several GPU processes."""
    processes = train_nodes * per_node
    if spec.accelerate_config is not None:
        distribution = f"--config_file {shlex.quote(spec.accelerate_config)}"
    elif processes == 1:
        return '"$PAIRRL_BIN"'
    elif spec.gpus_per_node:
        distribution = "--multi_gpu"
    else:
        raise ConfigError(
            spec.config,
            [f"--accelerate-config: {processes} trainer processes on CPU nodes need one "
             "(distributed_type: MULTI_CPU, as in configs/accelerate/cpu_2proc.yaml)"],
        )  # fmt: skip
    return (
        f"accelerate launch {distribution} "
        f"--num_machines {train_nodes} --num_processes {processes} "
        '--machine_rank "$MACHINE_RANK" --main_process_ip "$MAIN_ADDR" '
        '--main_process_port "$RDZV_PORT" --rdzv_backend static --max_restarts 0 '
        '"$PAIRRL_BIN"'
    )
