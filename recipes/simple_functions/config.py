"""The simple-function recipe's options (``recipe.options`` in ``configs/smollm2_cpu.yaml``).

Beyond the comparison's (``ComparisonOptions``: the held-out evaluation, the baselines):
the template split and how the warm start samples the model's own solutions. The warm
start's steps, learning rate and batch size are the trainer's ``warm_start`` fields.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pairrl.recipes.comparison.options import ComparisonOptions

__all__ = ["SimpleFunctionOptions"]


class SimpleFunctionOptions(ComparisonOptions):
    """Simple-function settings: template split, the warm start's own samples."""

    heldout_share: float = Field(
        default=0.25,
        gt=0.0,
        lt=1.0,
        description="share of the templates held out (every task of a held-out template is "
        "held out; split by split_seed)",
    )
    train_problems: int | None = Field(
        default=None, ge=1, description="train on the first N training tasks only (tests)"
    )
    warm_samples_per_task: int = Field(
        default=8, ge=1, le=64, description="solutions the untrained model samples per task"
    )
    warm_sample_temperature: float = Field(
        default=0.8, gt=0.0, le=2.0, description="temperature of those samples"
    )
    warm_sample_max_tokens: int = Field(
        default=160,
        ge=16,
        le=2048,
        description="token limit of those samples (the first code block is kept; the rest, "
        "usually examples and tests, is dropped)",
    )
    warm_sample_engine: Literal["hf", "vllm"] = Field(
        default="vllm",
        description="engine of those samples: vllm (in-process) or hf (transformers)",
    )
    warm_sample_dtype: Literal["auto", "float32", "bfloat16"] = Field(
        default="auto",
        description="dtype of that engine; auto on CPU: bfloat16 where the CPU computes it "
        "natively (AMX, AVX512_BF16), else float32 (pairrl doctor shows which)",
    )
    warm_solutions_per_task: int = Field(
        default=2, ge=0, le=16, description="distinct passing blocks taught as solutions per task"
    )
    warm_pairs_per_task: int = Field(
        default=4, ge=0, le=64, description="pairwise judgements taught per task"
    )
    warm_pointwise_per_task: int = Field(
        default=2,
        ge=0,
        le=64,
        description="pointwise judgements (one <rating>) taught per task: the pointwise "
        "rating selector's format",
    )
    warm_ab_per_task: int = Field(
        default=2,
        ge=0,
        le=64,
        description="answers to the yes/no question (A correct, B incorrect) taught per task: "
        "the format the benchmark's pointwise A/B read-out scores",
    )
