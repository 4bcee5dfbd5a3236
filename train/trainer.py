"""``PairRLTrainer``: TRL's GRPOTrainer with one override, plus the reward functions.

The override (``_generate_and_score_completions``) lets TRL build the batch, compute its
log-probs, rewards and logs as usual, then replaces the advantages with PairRL's
(``train.advantages``), because TRL's group-mean baseline cannot express a batch-mean
baseline for judgements next to a per-problem baseline for solutions (see that module).
It also records the PairRL metrics (``train.metrics``) and corrects the advantage column
of TRL's completions table. Everything else (loss, clipping, optimiser, checkpoints,
vLLM weight sync, logging) is TRL's and transformers' own.

The reward functions only report the rewards the rollout computed (they need the pair
labels, which only the rollout has); TRL logs them per function as
``rewards/solution_correctness/mean`` and ``rewards/pair_verification/mean``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import torch
from accelerate.utils import gather_object
from transformers import TrainerCallback
from trl import GRPOTrainer

from train.advantages import compute_advantages
from train.layout import JUDGEMENT, SOLUTION, RowRecord, check_group_order
from train.metrics import step_metrics

__all__ = ["PairRLTrainer", "StepTimer", "pair_verification", "solution_correctness"]


def solution_correctness(
    prompts: list[Any],
    completions: list[Any],
    pairrl_sample_type: list[str],
    pairrl_reward: list[float | None],
    **kwargs: Any,
) -> list[float | None]:
    """1/0 execution reward on solution rows; None (not applicable) elsewhere."""
    log_extra = kwargs.get("log_extra")
    if log_extra is not None:
        log_extra("sample_type", list(pairrl_sample_type))
        log_extra("detail", list(kwargs.get("pairrl_detail", [""] * len(prompts))))
    return [
        r if t == SOLUTION else None for t, r in zip(pairrl_sample_type, pairrl_reward, strict=True)
    ]


def pair_verification(
    prompts: list[Any],
    completions: list[Any],
    pairrl_sample_type: list[str],
    pairrl_reward: list[float | None],
    **kwargs: Any,
) -> list[float | None]:
    """The paper's thresholded verification reward on judgement rows; None elsewhere."""
    return [
        r if t == JUDGEMENT else None
        for t, r in zip(pairrl_sample_type, pairrl_reward, strict=True)
    ]


class _NoRewardRowFilter(logging.Filter):
    """Drop TRL's per-step warning about rows no reward function scores.

    ``no_pair`` rows have no reward by design (they carry no gradient and are counted in
    ``pairrl/no_pair_rows``); ``RowRecord.check`` already rejects any other row without one.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return "All reward functions returned None" not in record.getMessage()


logging.getLogger("trl.trainer.grpo_trainer").addFilter(_NoRewardRowFilter())


class PairRLTrainer(GRPOTrainer):
    """GRPOTrainer whose advantages are PairRL's; built with a ``PairRLRollout``."""

    def __init__(self, *args: Any, pairrl_rollout: Any, pairrl_cfg: Any, **kwargs: Any) -> None:
        super().__init__(*args, rollout_func=pairrl_rollout, **kwargs)
        self.pairrl_rollout = pairrl_rollout
        self.pairrl_cfg = pairrl_cfg

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = super()._generate_and_score_completions(inputs)
        local: list[RowRecord] = list(self.pairrl_rollout.records)
        n_local = int(output["advantages"].shape[0])
        if len(local) != n_local:
            raise RuntimeError(f"rollout kept {len(local)} row records for {n_local} rows")
        rows: list[RowRecord] = (
            gather_object(local) if self.accelerator.num_processes > 1 else local
        )
        cfg = self.pairrl_cfg
        check_group_order([r.group for r in rows], cfg.rollout.group_size)
        advantages = compute_advantages(
            [r.group for r in rows],
            [r.sample_type for r in rows],
            [r.reward for r in rows],
            lambda_ver=cfg.reward.lambda_ver,
            judgement_baseline=cfg.reward.judgement_baseline,
            scale=cfg.loss.scale_rewards,
        )
        start = self.accelerator.process_index * n_local
        device = output["advantages"].device
        output["advantages"] = torch.tensor(
            advantages[start : start + n_local], dtype=torch.float32, device=device
        )
        self._replace_logged_advantages(advantages)
        mode = "train" if self.model.training else "eval"
        for name, value in step_metrics(rows, cfg.reward.normalisation).items():
            self._metrics[mode][name].append(value)
        self._metrics[mode]["pairrl/judge_fillers"].append(float(self.pairrl_rollout.fillers))
        for phase, seconds in self.pairrl_rollout.timings.items():
            self._metrics[mode][f"time/{phase}_s"].append(seconds)
        return output

    def _replace_logged_advantages(self, advantages: list[float]) -> None:
        """TRL appended its own (group-mean) advantages to the completions log; swap in ours."""
        logged = self._logs["advantages"]
        for _ in range(min(len(advantages), len(logged))):
            logged.pop()
        logged.extend(advantages)


class StepTimer(TrainerCallback):
    """Logs ``time/update_s``: the optimiser step's wall time minus the rollout phases."""

    def __init__(self) -> None:
        self.trainer: PairRLTrainer | None = None
        self._start = 0.0
        self._calls = 0

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._start = time.perf_counter()
        if self.trainer is not None:
            self._calls = self.trainer.pairrl_rollout.calls

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.trainer is None:
            return
        total = time.perf_counter() - self._start
        rollout_ran = self.trainer.pairrl_rollout.calls != self._calls
        rollout = sum(self.trainer.pairrl_rollout.timings.values()) if rollout_ran else 0.0
        self.trainer._metrics["train"]["time/step_s"].append(total)
        self.trainer._metrics["train"]["time/update_s"].append(max(0.0, total - rollout))
