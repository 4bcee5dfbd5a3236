"""The training run config: one YAML file, validated before any model loads.

Every field has a description and bounds; cross-field rules (the rollout split, the
engine's settings, the recipe) are checked here so that a bad file fails with a message
naming the field and the allowed values (see ``pairrl.config``). The schema says *what*
to run; ``pairrl.train.plan`` derives the batch arithmetic and maps it onto TRL's
``GRPOConfig``. A recipe's own options (``recipe.options``) are validated by the recipe's
schema when the recipe is resolved (``pairrl.train.task_family``), still before any model loads.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from pairrl.config import PairrlModel
from pairrl.rewards.config import ExecutorConfig
from pairrl.rollout.config import (
    Mode,
    PhaseSamplingConfig,
    RewardConfig,
    RolloutConfig,
    SamplingConfig,
)
from pairrl.rollout.recipe import RecipeConfig
from pairrl.train.heldout_probe import HeldoutProbeConfig
from pairrl.train.lora import LoraConfig

__all__ = [
    "AdvantageConfig",
    "BatchConfig",
    "CheckpointConfig",
    "DataConfig",
    "EngineConfig",
    "ExecutorConfig",
    "HeldoutProbeConfig",
    "LoggingConfig",
    "LoraConfig",
    "LossConfig",
    "Mode",
    "ModelConfig",
    "OptimConfig",
    "PhaseSamplingConfig",
    "RecipeConfig",
    "RewardConfig",
    "RolloutConfig",
    "SamplingConfig",
    "TinyModelConfig",
    "TrainConfig",
    "WarmStartConfig",
]


class TinyModelConfig(PairrlModel):
    """Size of the tiny Qwen3-style model ``pairrl.tiny_model`` builds (CPU runs, tests)."""

    hidden_size: int = Field(default=64, ge=16, le=1024, description="model width")
    num_layers: int = Field(default=4, ge=1, le=24, description="transformer layers")
    intermediate_size: int = Field(default=192, ge=16, le=4096, description="MLP width")


class ModelConfig(PairrlModel):
    """The policy: one model writes solutions and judges them."""

    path: str = Field(
        description="HF hub id, local folder saved with save_pretrained, a local .gguf file "
        "or the name smollm2 (converted once into a cached folder: pairrl.model_source)"
    )
    build_tiny: bool = Field(
        default=False,
        description="build the tiny random model (size in `tiny`) at `path` when the folder "
        "is missing",
    )
    tiny: TinyModelConfig = Field(
        default_factory=TinyModelConfig, description="tiny model size (with build_tiny)"
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        default="float32",
        description="weights dtype when loading, and the dtype of a colocated vLLM engine; "
        "float32 by default (AdamW on bfloat16 weights loses the small updates); auto: on "
        "CPU bfloat16 where the CPU computes it natively (AMX, AVX512_BF16), else float32 "
        "(pairrl doctor shows which), bfloat16 on a GPU",
    )
    attn_implementation: Literal["eager", "sdpa", "flash_attention_2"] | None = Field(
        default=None, description="attention kernel; null lets transformers choose"
    )
    gradient_checkpointing: bool = Field(
        default=False, description="trade compute for activation memory"
    )
    chat_template_kwargs: dict[str, bool | str | int] = Field(
        default_factory=dict,
        description="extra arguments for the chat template (e.g. enable_thinking: false)",
    )
    lora: LoraConfig | None = Field(
        default=None, description="train LoRA adapters only (pairrl.train.lora); null: all weights"
    )

    def resolved_dtype(self) -> str:
        """The dtype the weights load in: ``dtype``, with ``auto`` resolved (on CPU by
        ``pairrl.cpu_dtype``'s rule, bfloat16 on a GPU)."""
        from pairrl.cpu_dtype import local_dtype

        resolved = local_dtype(self.dtype)
        return "bfloat16" if resolved == "auto" else resolved


class DataConfig(PairrlModel):
    """Where the training problems come from."""

    source: Literal["tiny_code", "recipe", "file", "dataset", "hub"] = Field(
        description="tiny_code: the built-in permissive CPU task set; recipe: the tasks of "
        "the run's `recipe`; file: a local task file read by pairrl.rewards.load_tasks "
        "(code or math rows); dataset: a datasets hub id (read from the local cache when "
        "offline), a local dataset folder (save_to_disk) or a parquet file, rows read like "
        "a task file's; hub: DeepCoder-style rows (problem, JSON tests) from a hub id"
    )
    path: str | None = Field(
        default=None,
        description="task file (source=file), dataset id, folder or parquet file "
        "(source=dataset), or hub dataset id (source=hub)",
    )
    columns: dict[str, str] = Field(
        default_factory=dict,
        description="column mapping {task field: dataset column} (source=file/dataset), "
        "e.g. {problem: question} for GSM8K; task fields: problem (or question) and answer "
        "for math, the task-file fields for code (see pairrl.rewards.task_loaders)",
    )
    subsets: list[str] = Field(
        default_factory=list,
        description="dataset configs to concatenate (source=dataset/hub; empty: the default)",
    )
    split: str = Field(default="train", description="dataset split (source=dataset/hub)")
    max_problems: int | None = Field(
        default=None, ge=1, description="keep only the first N problems (after shuffling)"
    )
    shuffle_seed: int = Field(default=0, ge=0, description="seed for shuffling the problem list")

    @model_validator(mode="after")
    def _path_needed(self) -> DataConfig:
        if self.source in ("file", "dataset", "hub") and not self.path:
            raise ValueError(f"data.path is required when data.source = {self.source!r}")
        if self.columns and self.source not in ("file", "dataset"):
            raise ValueError(
                f"data.columns applies to data.source file or dataset, not {self.source!r}"
            )
        return self


class AdvantageConfig(PairrlModel):
    """How solution and judgement advantages are formed and weighted (pairrl.train.advantages).

    Solutions are centred on their problem's solutions; judgements on ``judgement_baseline``
    and scaled by lambda: J = J_gen + lambda * J_ver.
    """

    lambda_ver: float = Field(
        default=1.0, ge=0.0, le=100.0, description="lambda: J = J_gen + lambda * J_ver"
    )
    judgement_baseline: Literal["batch", "problem"] = Field(
        default="batch",
        description="baseline for judgement advantages: the mean over all judgement rows of "
        "the batch (this project's reading of the paper) or over the problem's own rows",
    )
    scale: Literal["none", "group", "batch"] = Field(
        default="none",
        description="divide advantages by the std of their baseline set (group) or of "
        "all rows of their sample type (batch); none is Dr. GRPO's (the paper's)",
    )


class EngineConfig(PairrlModel):
    """Which generation path TRL uses for both phases."""

    kind: Literal["hf", "vllm_colocate", "vllm_server"] = Field(
        default="hf", description="hf: transformers generate; vllm_*: TRL's vLLM modes"
    )
    gpu_memory_utilization: float = Field(
        default=0.3, gt=0.0, le=1.0, description="vLLM colocate: share of GPU memory"
    )
    tensor_parallel_size: int = Field(default=1, ge=1, le=64, description="vLLM colocate TP")
    max_model_len: int | None = Field(
        default=None, ge=256, description="vLLM colocate: context window; null: the model's own"
    )
    enable_sleep_mode: bool = Field(
        default=False, description="vLLM colocate: offload weights between generations"
    )
    server_base_url: str | None = Field(
        default=None, description="vLLM server URL (trl vllm-serve); overrides host/port"
    )
    server_host: str = Field(default="0.0.0.0", description="vLLM server host")
    server_port: int = Field(default=8000, ge=1, le=65535, description="vLLM server port")
    server_timeout_s: float = Field(default=240.0, gt=0, description="wait for the server")
    importance_sampling_correction: bool = Field(
        default=True, description="vLLM: correct the sampler/trainer log-prob mismatch"
    )


class LossConfig(PairrlModel):
    """TRL loss settings (paper: DAPO token-mean, clip 0.2/0.28, no KL, no std scaling)."""

    loss_type: Literal["dapo", "grpo", "dr_grpo", "bnpo"] = Field(
        default="dapo", description="how per-token losses are aggregated (TRL loss_type)"
    )
    epsilon_low: float = Field(default=0.2, gt=0.0, le=1.0, description="lower clip epsilon")
    epsilon_high: float = Field(default=0.28, gt=0.0, le=10.0, description="upper clip epsilon")
    beta: float = Field(default=0.0, ge=0.0, le=10.0, description="KL coefficient (0: no ref)")
    token_normalisation: Literal["batch", "per_sample_type"] = Field(
        default="batch",
        description="batch: TRL's DAPO token mean over the whole batch (the paper's recipe as "
        "we read it: one DAPO loss), so lambda weighs J_ver by the judgement token share; "
        "per_sample_type: a token mean per sample type, so J = J_gen + lambda * J_ver holds "
        "as written (pairrl.train.advantages.sample_type_weights; loss_type dapo only)",
    )
    mask_truncated_completions: bool = Field(
        default=False, description="exclude completions cut at max_tokens from the loss"
    )
    num_iterations: int = Field(
        default=1, ge=1, le=16, description="optimisation passes per generated batch"
    )
    max_forward_tokens: int | None = Field(
        default=2048,
        ge=1,
        le=1_048_576,
        description="most tokens (rows x padded width) one forward of the loss's log-probs "
        "holds activations for: a larger micro-batch runs in row chunks of at most this "
        "(a row is never split), all but the last recomputed in the backward "
        "(pairrl.train.padding.forward_in_buckets), so the activations held at once are one "
        "chunk's (about 1.5 MB per token for SmolLM2-135M in float32) for one more forward "
        "of the other chunks; the same loss and gradients up to float rounding. With "
        "model.gradient_checkpointing the chunks are not recomputed again (each layer already "
        "is): every chunk's layer inputs stay held, and only the per-layer recompute is one "
        "chunk's. null: one forward per padding bucket",
    )
    logits_chunk_tokens: int = Field(
        default=1024,
        ge=1,
        le=65536,
        description="completion positions per LM-head call when computing log-probs and "
        "entropies (pairrl.train.chunked_logps): the logits of one call exist at a time "
        "(on CPU about 8 x this x min(vocabulary, 32768) x 4 bytes of temporaries)",
    )


class OptimConfig(PairrlModel):
    """Optimiser and schedule."""

    lr: float = Field(default=1e-6, gt=0.0, le=1.0, description="peak learning rate")
    weight_decay: float = Field(default=0.0, ge=0.0, le=1.0, description="AdamW weight decay")
    warmup_steps: int = Field(default=0, ge=0, description="linear warmup steps")
    scheduler: Literal["constant", "constant_with_warmup", "linear", "cosine"] = Field(
        default="constant_with_warmup", description="learning-rate schedule"
    )
    max_grad_norm: float = Field(default=1.0, gt=0.0, description="gradient clipping norm")
    optimizer: Literal["adamw_torch", "adamw_torch_fused", "adamw_8bit"] = Field(
        default="adamw_torch", description="transformers optimizer name"
    )


class BatchConfig(PairrlModel):
    """Problems per optimiser step and how they are split over processes and micro-steps."""

    problems_per_step: int = Field(
        default=64, ge=1, description="problems per optimiser step, over all processes"
    )
    gradient_accumulation_steps: int = Field(
        default=1, ge=1, description="micro-batches per optimiser step on each process"
    )
    max_steps: int = Field(default=150, ge=1, description="optimiser steps to run")
    bf16: bool = Field(default=False, description="bf16 mixed precision (GPU only)")


class WarmStartConfig(PairrlModel):
    """Optional supervised warm start (pairrl.train.warm_start) on the conversations the data
    source or recipe provides (tiny_code, math tasks: format examples, see
    pairrl.train.data): teaches a tiny model the output formats before RL."""

    steps: int = Field(default=0, ge=0, description="SFT steps before RL (0 = none)")
    lr: float = Field(default=3e-3, gt=0.0, le=1.0, description="SFT learning rate")
    batch_size: int = Field(default=16, ge=1, description="SFT batch size")
    max_length: int = Field(
        default=256,
        ge=16,
        le=32768,
        description="longest conversation in tokens (TRL's max_length); a longer one is cut "
        "at its end, so set it above the longest judgement conversation",
    )
    loss_positions: Literal["trl", "labelled"] = Field(
        default="trl",
        description="trl: TRL's loss as it is (on CUDA/XPU it scores the labelled positions "
        "only, elsewhere every position); labelled: score the labelled positions only on "
        "every device (pairrl.train.warm_start.labelled_token_loss), the same loss in about "
        "25% less time per CPU step but not the same floats, so a run's numbers change",
    )
    bucket_padding: bool = Field(
        default=True,
        description="run each SFT batch as at most two forwards, short conversations and "
        "long ones, each padded to its own longest (pairrl.train.padding): the same loss up "
        "to float rounding, about a third less compute when solutions and judgements mix; "
        "false pads every batch to its longest conversation",
    )


class LoggingConfig(PairrlModel):
    """Console and W&B logging."""

    wandb: Literal["offline", "online", "disabled"] = Field(
        default="offline", description="W&B mode (offline needs no network)"
    )
    project: str = Field(default="pairrl", description="W&B project")
    run_name: str = Field(default="pairrl", description="run name (also the output folder)")
    log_every: int = Field(default=1, ge=1, description="log metrics every N steps")
    completions_table: bool = Field(
        default=True, description="log a completions table with the sample type"
    )
    num_completions_to_print: int = Field(
        default=0, ge=0, description="completions printed to the console per log"
    )
    console: Literal["progress", "dicts"] = Field(
        default="progress",
        description="progress: one progress bar per stage (with the ETA and the pass rate), "
        "every log dict in RUN/train_log.jsonl; dicts: TRL's per-step dicts on the console",
    )


class CheckpointConfig(PairrlModel):
    """Checkpoints: plain save_pretrained folders plus trainer state, for --resume."""

    every_steps: int = Field(default=50, ge=1, description="save every N optimiser steps")
    keep_last: int = Field(default=3, ge=1, description="keep the last K checkpoints")
    output_dir: str = Field(default="runs", description="parent folder of the run folder")


class TrainConfig(PairrlModel):
    """A PairRL (or PointRL / GRPO baseline) training run, or an experiment built on one."""

    kind: Literal["train", "experiment"] = Field(
        description="train: `pairrl train` trains this one policy; experiment: `pairrl "
        "experiment` runs the recipe's experiment around its training (e.g. baselines "
        "beside it and a benchmark after it)"
    )
    seed: int = Field(default=0, ge=0, description="global seed (model init, data, sampling)")
    model: ModelConfig = Field(description="the policy model")
    data: DataConfig = Field(description="training problems")
    rollout: RolloutConfig = Field(default_factory=RolloutConfig, description="budget split")
    reward: RewardConfig = Field(default_factory=RewardConfig, description="verification reward")
    advantage: AdvantageConfig = Field(
        default_factory=AdvantageConfig, description="advantages and lambda"
    )
    sampling: PhaseSamplingConfig = Field(
        default_factory=PhaseSamplingConfig, description="decoding, per phase"
    )
    engine: EngineConfig = Field(default_factory=EngineConfig, description="generation engine")
    loss: LossConfig = Field(default_factory=LossConfig, description="TRL loss settings")
    optim: OptimConfig = Field(default_factory=OptimConfig, description="optimiser")
    batch: BatchConfig = Field(default_factory=BatchConfig, description="batch arithmetic")
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig, description="sandbox")
    warm_start: WarmStartConfig = Field(
        default_factory=WarmStartConfig, description="optional SFT warm start"
    )
    logging: LoggingConfig = Field(default_factory=LoggingConfig, description="logging")
    checkpoint: CheckpointConfig = Field(
        default_factory=CheckpointConfig, description="checkpointing"
    )
    heldout_probe: HeldoutProbeConfig = Field(
        default_factory=HeldoutProbeConfig, description="the judge on held-out pairs, per N steps"
    )
    recipe: RecipeConfig | None = Field(
        default=None, description="the recipe that supplies tasks and prompts (data.source recipe)"
    )

    @model_validator(mode="after")
    def _cross_checks(self) -> TrainConfig:
        if self.batch.bf16 and self.model.dtype == "float16":
            raise ValueError("batch.bf16 = true needs model.dtype float32 or bfloat16")
        if self.loss.token_normalisation == "per_sample_type" and self.loss.loss_type != "dapo":
            raise ValueError(
                "loss.token_normalisation = 'per_sample_type' reweights TRL's dapo token mean; "
                f"loss.loss_type is {self.loss.loss_type!r}"
            )
        if self.engine.kind == "vllm_server" and self.engine.enable_sleep_mode:
            raise ValueError("engine.enable_sleep_mode applies to vllm_colocate only")
        if self.kind == "experiment" and self.recipe is None:
            raise ValueError("kind 'experiment' needs a recipe: section (its experiment runs)")
        if (self.data.source == "recipe") != (self.recipe is not None):
            raise ValueError(
                "data.source 'recipe' and a `recipe` section go together: set both or neither"
            )
        probe = self.heldout_probe
        if probe.every_steps and probe.pairs_file is None and self.recipe is None:
            raise ValueError(
                "heldout_probe.every_steps needs held-out pairs: a recipe that builds them "
                "(data.source recipe) or heldout_probe.pairs_file"
            )
        return self
