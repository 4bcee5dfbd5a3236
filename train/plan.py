"""The resolved run plan (what a dry run prints) and its mapping onto TRL's GRPOConfig.

Batch arithmetic. TRL draws ``problems_per_step * G`` rows per optimiser step, each
problem repeated G times consecutively, and hands each process a contiguous slice of
``per_device_train_batch_size * steps_per_generation`` rows. PairRL builds pairs from a
problem's own solutions, so a problem's G rows must sit on one process: the slice must
hold whole groups, i.e. ``problems_per_step`` must be a multiple of the process count.
Within a micro-batch, the update's forward runs in row chunks of at most
``max_forward_tokens`` (rows x padded width) and the LM head on ``logits_chunk_tokens``
completion positions at a time (``pairrl.train.trainer``); both bound memory, not the batch.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pairrl.config import ConfigError
from pairrl.train.config import TrainConfig
from pairrl.train.lora import describe_lora

__all__ = ["RunPlan", "grpo_config_kwargs", "resolve_plan", "run_dir", "world_size_from_env"]


@dataclass(frozen=True)
class RunPlan:
    """Everything derived from the config and the launch, before a model loads."""

    mode: str
    num_processes: int
    device: str
    engine: str
    max_steps: int
    problems_per_step: int
    problems_per_process: int
    group_size: int
    solutions_per_problem: int
    judgements_per_problem: int
    solutions_per_step: int
    judgements_per_step: int
    rows_per_process: int
    per_device_train_batch_size: int
    gradient_accumulation_steps: int
    max_solution_tokens: int
    max_judgement_tokens: int
    max_completion_length: int
    solution_token_budget_per_step: int
    judgement_token_budget_per_step: int
    lambda_ver: float
    judgement_baseline: str
    output_dir: str
    trainable: str = "all weights"
    max_forward_tokens: int | None = None
    logits_chunk_tokens: int = 1024

    def as_dict(self) -> dict[str, Any]:
        """Plain dict for printing and JSON."""
        return asdict(self)


def world_size_from_env() -> int:
    """Process count of this launch (accelerate/torchrun set WORLD_SIZE; 1 otherwise)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def _device_description(num_processes: int) -> str:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a hard dependency of train
        return "unknown"
    if torch.cuda.is_available():
        return f"{num_processes} x cuda ({torch.cuda.get_device_name(0)})"
    return f"{num_processes} x cpu"


def run_dir(cfg: TrainConfig, out: str | None = None) -> Path:
    """The run folder: ``--out`` when given, else ``checkpoint.output_dir/run_name``."""
    if out:
        return Path(out)
    return Path(cfg.checkpoint.output_dir) / cfg.logging.run_name


def resolve_plan(
    cfg: TrainConfig, num_processes: int | None = None, out: str | None = None
) -> RunPlan:
    """Derive the per-step and per-process numbers; raise ConfigError when they do not fit."""
    nproc = num_processes if num_processes is not None else world_size_from_env()
    problems = cfg.batch.problems_per_step
    accum = cfg.batch.gradient_accumulation_steps
    g = cfg.rollout.group_size
    errors = []
    if problems % nproc:
        errors.append(
            f"batch.problems_per_step = {problems} must be a multiple of the process count "
            f"({nproc}) so each problem's G rows stay on one process"
        )
    rows_per_process = problems * g // nproc if not errors else 0
    if rows_per_process and rows_per_process % accum:
        errors.append(
            f"batch.gradient_accumulation_steps = {accum} must divide the rows per process "
            f"({rows_per_process} = problems_per_step {problems} x G {g} / {nproc} processes)"
        )
    if errors:
        raise ConfigError("plan", errors)
    if cfg.engine.kind != "hf" and not _is_cuda_possible():
        # A plan may be resolved on a machine without the GPU (dry run): say so, do not fail.
        device = f"{nproc} x cuda (planned; this machine has none)"
    else:
        device = _device_description(nproc)
    if device.endswith(" x cpu") and cfg.model.dtype == "float16":
        raise ConfigError(
            "model.dtype",
            ["float16 on CPU: torch emulates its matmuls there (3.8x slower than float32 on "
             "the tiny config); use float32, or bfloat16 (auto picks it where the CPU has it)"],
        )  # fmt: skip
    if device.endswith(" x cpu") and cfg.batch.bf16:
        raise ConfigError(
            "batch.bf16",
            ["bf16 mixed precision is for GPUs (transformers refuses it on CPU): on CPU the "
             "precision is model.dtype (auto: bfloat16 where the CPU computes it natively)"],
        )  # fmt: skip
    g_gen, g_ver = cfg.rollout.solutions_per_problem, cfg.rollout.judgements_per_problem
    max_sol, max_judge = cfg.sampling.solution.max_tokens, cfg.sampling.judgement.max_tokens
    return RunPlan(
        mode=cfg.rollout.mode,
        num_processes=nproc,
        device=device,
        engine=cfg.engine.kind,
        max_steps=cfg.batch.max_steps,
        problems_per_step=problems,
        problems_per_process=problems // nproc,
        group_size=g,
        solutions_per_problem=g_gen,
        judgements_per_problem=g_ver,
        solutions_per_step=problems * g_gen,
        judgements_per_step=problems * g_ver,
        rows_per_process=rows_per_process,
        per_device_train_batch_size=rows_per_process // accum,
        gradient_accumulation_steps=accum,
        max_solution_tokens=max_sol,
        max_judgement_tokens=max_judge,
        max_completion_length=max(max_sol, max_judge if g_ver else 0),
        solution_token_budget_per_step=problems * g_gen * max_sol,
        judgement_token_budget_per_step=problems * g_ver * max_judge,
        lambda_ver=cfg.advantage.lambda_ver,
        judgement_baseline=cfg.advantage.judgement_baseline,
        output_dir=str(run_dir(cfg, out)),
        trainable=describe_lora(cfg.model.lora),
        max_forward_tokens=cfg.loss.max_forward_tokens,
        logits_chunk_tokens=cfg.loss.logits_chunk_tokens,
    )


def _is_cuda_possible() -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover
        return False
    return torch.cuda.is_available()


def grpo_config_kwargs(cfg: TrainConfig, plan: RunPlan) -> dict[str, Any]:
    """Keyword arguments for ``trl.GRPOConfig`` (kept a dict so tests need no accelerator).

    Notes on choices:
    * ``scale_rewards='none'`` and ``multi_objective_aggregation='sum_then_normalize'``:
      TRL's own advantages are computed and then replaced by ``PairRLTrainer`` (see
      ``pairrl.train.trainer``), so its scaling must not matter; 'none' keeps its logs honest.
    * ``temperature``/``top_p`` are the solution phase's: the rollout swaps in the
      judgement settings while judging, and the trainer scores judgement rows at the
      judgement temperature (``pairrl.train.row_temperatures``).
    """
    kwargs: dict[str, Any] = {
        "output_dir": plan.output_dir,
        "seed": cfg.seed,
        "data_seed": cfg.seed,
        "max_steps": cfg.batch.max_steps,
        "per_device_train_batch_size": plan.per_device_train_batch_size,
        "gradient_accumulation_steps": plan.gradient_accumulation_steps,
        "num_generations": cfg.rollout.group_size,
        "max_completion_length": plan.max_completion_length,
        "temperature": cfg.sampling.solution.temperature,
        "top_p": cfg.sampling.solution.top_p,
        "top_k": 0,
        "learning_rate": cfg.optim.lr,
        "weight_decay": cfg.optim.weight_decay,
        "warmup_steps": cfg.optim.warmup_steps,
        "lr_scheduler_type": cfg.optim.scheduler,
        "max_grad_norm": cfg.optim.max_grad_norm,
        "optim": cfg.optim.optimizer,
        "loss_type": cfg.loss.loss_type,
        "epsilon": cfg.loss.epsilon_low,
        "epsilon_high": cfg.loss.epsilon_high,
        "beta": cfg.loss.beta,
        "scale_rewards": "none",
        "mask_truncated_completions": cfg.loss.mask_truncated_completions,
        "num_iterations": cfg.loss.num_iterations,
        "bf16": cfg.batch.bf16,
        "gradient_checkpointing": cfg.model.gradient_checkpointing,
        "chat_template_kwargs": dict(cfg.model.chat_template_kwargs) or None,
        "logging_steps": cfg.logging.log_every,
        "log_completions": cfg.logging.completions_table,
        "num_completions_to_print": cfg.logging.num_completions_to_print,
        "report_to": [] if cfg.logging.wandb == "disabled" else ["wandb"],
        "run_name": cfg.logging.run_name,
        "save_strategy": "steps",
        "save_steps": cfg.checkpoint.every_steps,
        "save_total_limit": cfg.checkpoint.keep_last,
        "shuffle_dataset": True,
        "disable_tqdm": True,
        "use_vllm": cfg.engine.kind != "hf",
        "dataloader_num_workers": 0,
        # pinned host memory only helps a copy to an accelerator (and warns without one)
        "dataloader_pin_memory": "cuda" in plan.device,
    }
    kwargs.update(_engine_kwargs(cfg, plan))
    return kwargs


def _engine_kwargs(cfg: TrainConfig, plan: RunPlan) -> dict[str, Any]:
    """The process group, the vLLM engine's settings and the model's load options."""
    engine = cfg.engine
    kwargs: dict[str, Any] = {}
    if plan.num_processes > 1 and "cpu" in plan.device:
        # accelerate only picks a process-group backend for accelerators; on CPU it must be
        # named, or a DeepSpeed launch silently falls back to one process.
        kwargs["ddp_backend"] = "gloo"
    if engine.kind == "vllm_colocate":
        kwargs.update(
            vllm_mode="colocate",
            vllm_gpu_memory_utilization=engine.gpu_memory_utilization,
            vllm_tensor_parallel_size=engine.tensor_parallel_size,
            vllm_enable_sleep_mode=engine.enable_sleep_mode,
            vllm_max_model_length=engine.max_model_len,
            vllm_importance_sampling_correction=engine.importance_sampling_correction,
        )
    elif engine.kind == "vllm_server":
        kwargs.update(
            vllm_mode="server",
            vllm_server_base_url=engine.server_base_url,
            vllm_server_host=engine.server_host,
            vllm_server_port=engine.server_port,
            vllm_server_timeout=engine.server_timeout_s,
            vllm_importance_sampling_correction=engine.importance_sampling_correction,
        )
    dtype = cfg.model.resolved_dtype()
    if dtype != "float32" or cfg.model.attn_implementation:
        init: dict[str, Any] = {"dtype": dtype}
        if cfg.model.attn_implementation:
            init["attn_implementation"] = cfg.model.attn_implementation
        kwargs["model_init_kwargs"] = init
    return kwargs


def format_plan(plan: RunPlan) -> str:
    """Human-readable plan, one 'key: value' per line."""
    width = max(len(k) for k in plan.as_dict())
    return "\n".join(f"{k.ljust(width)} : {v}" for k, v in plan.as_dict().items())
