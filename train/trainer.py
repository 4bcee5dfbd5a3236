"""``PairRLTrainer``: TRL's GRPOTrainer with three overrides (two more for resuming); the
reward functions it hands TRL are in ``train/reward_funcs.py``.

One training step, in order (TRL's ``training_step`` drives it; the file of each part):

1. **rollout** (``rollout/pairrl_rollout.py``): TRL hands over ``problems_per_step``
   problems, each repeated G times; per problem the policy writes G_gen solutions
   (``rollout/trl_generation.py``, TRL's own generation path), then judges pairs of them
   (``rollout/pairs.py`` picks the pairs, ``rollout/prompts.py`` words the prompt);
2. **score**: the sandbox labels each solution 1/0 (``rewards/executor.py``); each
   judgement earns the thresholded verification reward (``rewards/ratings.py``); rows go
   back in TRL's order (``rollout/layout.py``);
3. **advantage** (this file, ``_generate_and_score_completions``, with
   ``train/advantages.py``): solutions centred on their problem's solutions, judgements on
   the batch's judgements, times lambda (``advantage:``);
4. **update**: TRL's clipped policy loss (``loss:``; checked by hand in
   ``tests/test_policy_loss.py``) on log-probs computed per padding bucket and row chunk
   (``train/padding.py``) with a chunked LM head (``train/chunked_logps.py``), and the
   optimiser step;
5. **log**: TRL's metrics plus PairRL's (``train/metrics.py``) to ``train_log.jsonl``, the
   console (``train/progress.py``) and W&B;
6. **checkpoint**: TRL's, every ``checkpoint.every_steps`` and on SIGTERM
   (``train/checkpoint_on_signal.py``).

The override (``_generate_and_score_completions``) lets TRL build the batch, compute its
log-probs, rewards and logs as usual, then replaces the advantages with PairRL's
(``pairrl.train.advantages``), because TRL's group-mean baseline cannot express a batch-mean
baseline for judgements next to a per-problem baseline for solutions (see that module).
It reads what the rollout knows of each row (its ``RowRecord``, the temperature it was
sampled at) from the batch's rows, where TRL puts the rollout's extra columns; records the
PairRL metrics (``pairrl.train.metrics``), corrects the advantage column of TRL's
completions table and adds each row's sampling temperature to the batch.

The second (``_get_per_token_logps_and_entropies``, single process) computes TRL's per-token
log-probs and entropies with bounded memory (``forward_in_buckets``): TRL left-pads every
prompt of a batch to the longest, and a PairRL batch mixes short generation prompts with ~3x
longer pairwise prompts, so the rows run per padding bucket, each trimmed to its own width;
each bucket is cut into row chunks of at most ``loss.max_forward_tokens`` tokens, all but the
last recomputed in the backward, so that the model body's activations (about 1.5 MB per
token for SmolLM2-135M in float32) are held for one chunk at a time; and only the positions
that predict a completion token go through the LM head, in chunks of
``loss.logits_chunk_tokens`` (``pairrl.train.chunked_logps``), so no full-vocabulary row is
kept per token. Each row is scored at the temperature it was sampled at, its hidden states
divided by it before the head (``pairrl.train.row_temperatures``): TRL scores every row at
the solution temperature, while judgements may be drawn at another. The third
(``compute_loss``) hands the micro-batch's row temperatures to the second, in a scope around
TRL's loss (``scoring_rows``). Everything else
(loss, clipping, optimiser, checkpoints, vLLM weight sync, logging) is TRL's and
transformers' own.

For resuming: ``_get_train_sampler`` wraps TRL's sampler so that each pass over the
problems gets the uninterrupted run's shuffle after a resume (``pairrl.train.resume``), and
checkpoint saves are staged and renamed into place once whole (``AtomicCheckpoints``,
``pairrl.train.checkpoints``).

Every private TRL symbol these overrides and the rest of pairrl touch is listed, and pinned
by a test, in ``pairrl.train.trl_seam``.

With vLLM colocated on vLLM's CPU build, the engine's settings and the weight sync differ
from TRL's (``pairrl.train.vllm_cpu``); the trainer applies them around its construction,
and only there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
from accelerate.utils import gather_object
from transformers import TrainerCallback
from trl import GRPOTrainer

from pairrl.rollout.config import RewardConfig
from pairrl.rollout.layout import (
    RECORD_COLUMN,
    STATS_COLUMN,
    TEMPERATURE_COLUMN,
    RowRecord,
    check_group_order,
)
from pairrl.rollout.pairrl_rollout import PairRLRollout
from pairrl.train.advantages import compute_advantages, sample_type_weights
from pairrl.train.checkpoints import AtomicCheckpoints
from pairrl.train.chunked_logps import causal_lm, completion_logps, plain_lm_head
from pairrl.train.config import AdvantageConfig, LossConfig
from pairrl.train.metrics import advantage_metrics, step_metrics
from pairrl.train.padding import forward_in_buckets
from pairrl.train.resume import PassSeededSampler
from pairrl.train.row_temperatures import (
    bias_free_head,
    check_scorable,
    mixed,
    report_rollout_temperatures,
    scored_row_temperatures,
    scoring_rows,
    scoring_temperatures,
)

__all__ = [
    "PairRLTrainer",
    "StepTimer",
    "batch_advantages",
]


def batch_advantages(
    rows: list[RowRecord], group_size: int, advantage: AdvantageConfig
) -> list[float]:
    """PairRL advantages of the whole batch's rows (every process's, in TRL's order)."""
    check_group_order([r.group for r in rows], group_size)
    return compute_advantages(
        [r.group for r in rows],
        [r.sample_type for r in rows],
        [r.reward for r in rows],
        lambda_ver=advantage.lambda_ver,
        judgement_baseline=advantage.judgement_baseline,
        scale=advantage.scale,
    )


class PairRLTrainer(AtomicCheckpoints, GRPOTrainer):
    """GRPOTrainer whose advantages are PairRL's; built with a ``PairRLRollout`` (the rows,
    their records and temperatures), the ``advantage``, ``loss`` and ``reward`` sections it
    applies and the policy's ``dtype`` (for vLLM colocate on CPU)."""

    mixed_temperatures = False  # rows drawn at two temperatures (``pairrl.train.row_temperatures``)

    def __init__(
        self,
        *args: Any,
        pairrl_rollout: PairRLRollout,
        advantage: AdvantageConfig,
        loss: LossConfig,
        reward: RewardConfig,
        dtype: str,
        **kwargs: Any,
    ) -> None:
        from pairrl.train.reward_funcs import quiet_unscored_rows
        from pairrl.train.vllm_cpu import cpu_colocate, patch_weight_sync

        quiet_unscored_rows()

        grpo_args = kwargs.get("args", args[2] if len(args) > 2 else None)

        def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, Any]:
            out = pairrl_rollout(prompts, trainer)
            report_rollout_temperatures(out[TEMPERATURE_COLUMN])  # for TRL's scoring of the rows
            return out

        with cpu_colocate(grpo_args, dtype=dtype) as on_cpu:
            super().__init__(*args, rollout_func=rollout_func, **kwargs)
        if on_cpu:
            patch_weight_sync(self)
        self.advantage, self.loss, self.reward = advantage, loss, reward
        self.mixed_temperatures = mixed(pairrl_rollout.temperatures)
        check_scorable(pairrl_rollout.temperatures, self._chunked_head(self.model))

    def _get_train_sampler(self, dataset: Any = None) -> Any:
        """TRL's sampler, its shuffle for pass p the same after a resume (``PassSeededSampler``)."""
        sampler = super()._get_train_sampler(dataset)
        return PassSeededSampler(sampler, lambda: int(self.state.epoch or 0))

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        """TRL's batch, with PairRL's advantages in place of TRL's and PairRL's metrics; the
        rollout's records and temperatures come on the batch's rows (``inputs``)."""
        started = time.perf_counter()
        with scoring_rows():  # TRL scores the rows at the temperatures the rollout reports
            output = super()._generate_and_score_completions(inputs)
        elapsed = time.perf_counter() - started
        n_local = int(output["advantages"].shape[0])
        if len(inputs) != n_local or any(RECORD_COLUMN not in row for row in inputs):
            raise RuntimeError(f"the batch's {n_local} rows do not all carry the rollout's records")
        local: list[RowRecord] = [row[RECORD_COLUMN] for row in inputs]
        rows: list[RowRecord] = (
            gather_object(local) if self.accelerator.num_processes > 1 else local
        )
        advantages = batch_advantages(rows, self.num_generations, self.advantage)
        self._log_pairrl_metrics(rows, advantages, inputs[0][STATS_COLUMN], elapsed)
        if self.loss.token_normalisation == "per_sample_type":
            counts = self._loss_token_counts(output)
            weights = sample_type_weights([r.sample_type for r in rows], counts)
            advantages = [a * w for a, w in zip(advantages, weights, strict=True)]
        start = self.accelerator.process_index * n_local
        output["advantages"] = torch.tensor(
            advantages[start : start + n_local],
            dtype=torch.float32,
            device=output["advantages"].device,
        )
        output[TEMPERATURE_COLUMN] = torch.tensor(  # shuffled and split with the rows
            [row[TEMPERATURE_COLUMN] for row in inputs], device=output["advantages"].device
        )
        self._replace_logged_advantages(advantages)
        return output

    def _loss_token_counts(self, output: dict[str, Any]) -> list[float]:
        """Per row of the whole batch, the tokens TRL's loss counts (completion mask times
        the env/tool mask), gathered over processes in row order."""
        mask = output["completion_mask"]
        if output.get("tool_mask") is not None:
            mask = mask * output["tool_mask"]
        counts = mask.sum(dim=1).float()
        if self.accelerator.num_processes > 1:
            counts = self.accelerator.gather(counts)
        return [float(c) for c in counts.tolist()]

    def _log_pairrl_metrics(
        self,
        rows: list[RowRecord],
        advantages: list[float],
        stats: dict[str, Any],
        batch_s: float,
    ) -> None:
        """The step's PairRL metrics (the batch's ``rows`` and their ``advantages``), this
        process's rollout ``stats`` (filler prompts, phase timings) and ``time/score_s``: the
        part of TRL's batch (``batch_s`` seconds) that is not the rollout (old and reference
        log-probs, rewards, padding)."""
        mode = "train" if self.model.training else "eval"
        metrics = self._metrics[mode]
        found = step_metrics(rows, self.reward.normalisation) | advantage_metrics(rows, advantages)
        for name, value in found.items():
            metrics[name].append(value)
        metrics["pairrl/judge_fillers"].append(float(stats["fillers"]))
        for phase, seconds in stats["timings"].items():
            metrics[f"time/{phase}_s"].append(seconds)
        metrics["time/score_s"].append(max(0.0, batch_s - sum(stats["timings"].values())))
        check = getattr(getattr(self, "vllm_generation", None), "sync_check", None)
        if check is not None:  # vLLM colocate on CPU (pairrl.train.vllm_cpu)
            metrics["vllm/sync_max_abs_logprob_diff"].append(check["max_abs_diff"])
            metrics["vllm/sync_probe_mean_logprob"].append(check["mean_logprob"])

    def _chunked_head(self, model: Any) -> torch.nn.Linear | None:
        """The LM head the chunked path reads directly (one process, no DeepSpeed or FSDP:
        their hooks gather weights inside module forwards, which a direct read of the head's
        weight does not go through), when it has no bias; else None."""
        plain = getattr(self.accelerator, "distributed_type", "NO") == "NO"
        if self.accelerator.num_processes > 1 or not plain:
            return None
        return bias_free_head(self.accelerator.unwrap_model(model))

    def _scoring_temperatures(self, rows: int) -> torch.Tensor | None:
        """The ``rows`` rows' sampling temperatures (``scoring_rows``), or None when all are
        the trainer's."""
        if not self.mixed_temperatures:
            return None
        found = scored_row_temperatures()
        if found is None:
            raise RuntimeError("rows of two temperatures scored outside the loss and the rollout")
        return scoring_temperatures(found, rows, self.temperature)

    def compute_loss(
        self, model: Any, inputs: dict[str, Any], return_outputs: bool = False, **kwargs: Any
    ) -> torch.Tensor:
        """TRL's loss, its rows scored at their own sampling temperatures."""
        if self.mixed_temperatures and TEMPERATURE_COLUMN not in inputs:
            raise RuntimeError(f"the micro-batch has no {TEMPERATURE_COLUMN!r} column")
        with scoring_rows(inputs.get(TEMPERATURE_COLUMN)):
            return super().compute_loss(model, inputs, return_outputs=return_outputs, **kwargs)

    def _get_per_token_logps_and_entropies(
        self,
        model: Any,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        logits_to_keep: int,
        batch_size: int | None = None,
        compute_entropy: bool = False,
        compute_aux_loss: bool = False,
        **extra: Any,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """TRL's values, computed per padding bucket and token chunk (``forward_in_buckets``)
        with the chunked LM head (``pairrl.train.chunked_logps``): one process, text only.
        Each row at the temperature it was drawn at (``pairrl.train.row_temperatures``):
        rows of two temperatures go through the chunked head together, each row's hidden
        states divided by its temperature.

        With several processes or an MoE aux loss it is TRL's own method: the chunk count
        can differ between processes, and ZeRO-3 / FSDP gather weights collectively inside
        every forward (a differing count would hang); several forwards per backward under
        DDP are untested. One process under DeepSpeed or FSDP, a model whose logits are more
        than ``hidden @ W.T`` (soft-capping, logit scales) or whose forward PEFT changes
        (prompt learning) get TRL's fused head per bucket and chunk instead of the chunked
        one; under DeepSpeed or FSDP no chunk is recomputed.
        """
        row_temperatures = self._scoring_temperatures(input_ids.size(0))
        if row_temperatures is not None and (
            compute_aux_loss
            or any(v is not None for v in extra.values())
            or self._chunked_head(model) is None
        ):  # refused when the trainer was built (check_scorable)
            raise RuntimeError("rows at two temperatures need the chunked LM head")
        parent = super()._get_per_token_logps_and_entropies
        if (
            self.accelerator.num_processes > 1
            or compute_aux_loss
            or any(v is not None for v in extra.values())
        ):
            return parent(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size=batch_size,
                compute_entropy=compute_entropy,
                compute_aux_loss=compute_aux_loss,
                **extra,
            )
        # one process of DeepSpeed / FSDP: their hooks gather weights inside module forwards,
        # which neither a direct read of the head's weight nor a recompute goes through
        plain = getattr(self.accelerator, "distributed_type", "NO") == "NO"
        lm = causal_lm(self.accelerator.unwrap_model(model))
        forward = self._chunk_forward(
            parent, model, logits_to_keep, batch_size, compute_entropy, chunked=plain
        )
        logps, entropies = forward_in_buckets(
            forward,
            input_ids,
            attention_mask,
            logits_to_keep,
            max_tokens=self.loss.max_forward_tokens,
            # HF gradient checkpointing already recomputes every layer in the backward
            recompute=plain
            and torch.is_grad_enabled()
            and not getattr(lm, "is_gradient_checkpointing", False),
            row_values=None if row_temperatures is None else row_temperatures.to(input_ids.device),
        )
        return logps, entropies, None

    def _chunk_forward(
        self,
        parent: Callable[..., Any],
        model: Any,
        logits_to_keep: int,
        batch_size: int | None,
        compute_entropy: bool,
        chunked: bool,
    ) -> Callable[..., tuple[torch.Tensor, torch.Tensor | None]]:
        """One chunk's (log-probs, entropies): with ``chunked``, the chunked LM head when the
        model has a plain one and the chunk is wider than the completion; else TRL's
        (``parent``) fused head."""
        unwrapped = self.accelerator.unwrap_model(model)
        chunked = chunked and plain_lm_head(unwrapped) is not None

        def forward(
            ids: torch.Tensor, mask: torch.Tensor, temperatures: torch.Tensor | None = None
        ) -> tuple[Any, Any]:
            if chunked and ids.size(1) > logits_to_keep:
                with self.accelerator.autocast():
                    return completion_logps(
                        unwrapped,
                        ids,
                        mask,
                        logits_to_keep,
                        temperature=self.temperature,
                        chunk_tokens=self.loss.logits_chunk_tokens,
                        compute_entropy=compute_entropy,
                        fp32_head=bool(getattr(self.args, "cast_lm_head_to_fp32", False)),
                        row_temperatures=temperatures,
                    )
            if temperatures is not None:  # every TRL prompt has a token: not reached
                raise RuntimeError("per-row temperatures need a prompt column in every chunk")
            logps, entropies, _ = parent(
                model,
                ids,
                mask,
                logits_to_keep,
                batch_size=batch_size,
                compute_entropy=compute_entropy,
            )
            return logps, entropies

        return forward

    def _replace_logged_advantages(self, advantages: list[float]) -> None:
        """TRL appended its own (group-mean) advantages to the completions log; swap in ours."""
        logged = self._logs["advantages"]
        for _ in range(min(len(advantages), len(logged))):
            logged.pop()
        logged.extend(advantages)


class StepTimer(TrainerCallback):
    """Logs ``time/step_s`` (a whole optimiser step), ``time/update_s`` (the step minus the
    ``rollout``'s phases) and ``time/optimizer_s`` (the optimiser's own step)."""

    def __init__(self, rollout: PairRLRollout) -> None:
        self.rollout = rollout
        self.trainer: PairRLTrainer | None = None
        self._start = 0.0
        self._optimizer_start = 0.0
        self._calls = 0

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._start = time.perf_counter()
        self._calls = self.rollout.calls

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.trainer is None:
            return
        total = time.perf_counter() - self._start
        rollout_ran = self.rollout.calls != self._calls
        rollout = sum(self.rollout.timings.values()) if rollout_ran else 0.0
        self.trainer._metrics["train"]["time/step_s"].append(total)
        self.trainer._metrics["train"]["time/update_s"].append(max(0.0, total - rollout))

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._optimizer_start = time.perf_counter()

    def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.trainer is not None:
            seconds = time.perf_counter() - self._optimizer_start
            self.trainer._metrics["train"]["time/optimizer_s"].append(seconds)
