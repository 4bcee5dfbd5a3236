"""A trainer with only what TRL's loss and PairRL's log-prob override read (no model, no
TRL setup), shared by the loss and log-prob tests."""

from __future__ import annotations

from collections import defaultdict
from contextlib import nullcontext
from types import SimpleNamespace
from typing import Any

from pairrl.train.config import LossConfig


def loss_trainer(
    cls: type,
    loss: LossConfig,
    temperature: float,
    entropy_coef: float = 0.0,
    processes: int = 1,
    distributed: str = "NO",
) -> Any:
    """``cls`` (GRPOTrainer or PairRLTrainer) built without ``__init__``, scoring at
    ``temperature``; ``entropy_coef`` > 0 adds TRL's entropy bonus."""
    trainer = object.__new__(cls)
    trainer.loss = loss
    trainer.temperature = temperature
    trainer.loss_type, trainer.beta = loss.loss_type, loss.beta
    trainer.epsilon_low, trainer.epsilon_high = loss.epsilon_low, loss.epsilon_high
    trainer.importance_sampling_level = "token"
    trainer.top_entropy_quantile, trainer.off_policy_mask_threshold = 1.0, None
    trainer.aux_loss_enabled = trainer.use_vllm = trainer.use_adaptive_entropy = False
    trainer._entropy_bonus_enabled, trainer.entropy_coef = entropy_coef > 0, entropy_coef
    trainer.args = SimpleNamespace(delta=None, steps_per_generation=1, cast_lm_head_to_fp32=False)
    trainer.current_gradient_accumulation_steps = 1
    trainer.model = SimpleNamespace(training=True)
    trainer.accelerator = SimpleNamespace(
        num_processes=processes,
        is_main_process=True,
        distributed_type=distributed,
        autocast=nullcontext,
        unwrap_model=lambda m: m,
        gather=lambda x: x,
        reduce=lambda x, reduction: x,
        sync_gradients=True,
    )
    trainer._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
    return trainer
