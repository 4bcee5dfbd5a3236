"""Per-token log-probs and entropies of completion tokens with bounded memory.

Memory of an update (SmolLM2-135M, vocabulary 49,152, float32, CPU): the model body keeps
about 1.5 MB of activations per token for the backward, and TRL's fused LM head
(``trl.trainer.utils.add_fused_lm_head``), on a device without Triton, scores every position
(prompts and padding too) in tiles of 4,096 positions x 32,768 vocabulary entries, with about
eight tile-sized temporaries at once in its backward (about 1 MB per token more at 3,000
tokens). The body's side (padding buckets cut into row chunks under a token budget, all but
the last recomputed in the backward) is ``pairrl.train.padding.forward_in_buckets``; the
head's side is here.

Per forward (``completion_logps``):

* the model body gives the hidden states, and only the positions that predict a real
  completion token go on (prompt and padding positions never reach the LM head);
* the LM head runs on chunks of ``chunk_tokens`` of those positions with TRL's own kernel
  (``trl.kernels.ChunkedLogProbFunction``: an online log-sum-exp over vocabulary tiles,
  whose backward recomputes each tile), so one chunk's logits exist at a time, and the
  forward keeps only the chunk's hidden states and a few numbers per token.

The values are TRL's up to float rounding (``tests/test_chunked_logps.py``).
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import torch
from trl.kernels import ChunkedLogProbFunction

__all__ = ["VOCAB_TILE", "causal_lm", "completion_logps", "head_logps", "plain_lm_head"]

# Vocabulary entries per tile of TRL's kernel: TRL's own setting (trl.trainer.utils)
VOCAB_TILE = 32768

# Config fields that make the logits more than hidden @ W.T (+ b): TRL's fused head applies
# them, this module does not, so such models take TRL's path.
_LOGIT_TRANSFORMS = (
    "final_logit_softcapping",
    "logit_scale",
    "output_multiplier",
    "lm_head_multiplier",
    "logits_scaling",
)


def causal_lm(model: Any) -> Any:
    """The transformers causal LM inside ``model`` (a PEFT wrapper's base model, or itself)."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


def plain_lm_head(model: Any) -> torch.nn.Linear | None:
    """The LM head of ``model`` when its logits are ``hidden @ W.T (+ b)`` and the forward is
    the plain backbone-then-head; None otherwise (the caller then uses TRL's path)."""
    peft_config = getattr(model, "active_peft_config", None)
    if peft_config is not None and getattr(peft_config, "is_prompt_learning", False):
        return None  # prompt learning adds virtual tokens that only PEFT's forward inserts
    lm = causal_lm(model)
    config = lm.config.get_text_config()
    if any(getattr(config, name, None) is not None for name in _LOGIT_TRANSFORMS):
        return None
    head = lm.get_output_embeddings()
    return head if isinstance(head, torch.nn.Linear) else None


def head_logps(
    states: torch.Tensor,
    targets: torch.Tensor,
    head: torch.nn.Linear,
    temperature: float,
    chunk_tokens: int,
    compute_entropy: bool,
    fp32_head: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-prob of ``targets`` (N,) and entropy under ``softmax(head(states) / temperature)``
    for ``states`` (N, hidden), ``chunk_tokens`` rows of ``states`` per kernel call.

    ``fp32_head``: the projection in float32 outside autocast (TRL's ``cast_lm_head_to_fp32``).
    With N = 0 the kernel still runs once, so that the result stays part of the graph.
    """
    outputs = ("log_probs", "entropy") if compute_entropy else ("log_probs",)
    autocast = torch.autocast(states.device.type, enabled=False) if fp32_head else nullcontext()
    if fp32_head:
        states = states.float()
    logps, entropies = [], []
    with autocast:
        for start in range(0, max(states.size(0), 1), chunk_tokens):
            end = start + chunk_tokens
            logp, entropy, *_ = ChunkedLogProbFunction.apply(
                states[start:end],
                head.weight,
                head.bias,
                targets[start:end],
                temperature,
                VOCAB_TILE,
                None,
                1.0,
                outputs,
            )
            logps.append(logp)
            entropies.append(entropy)
    entropy = torch.cat(entropies) if compute_entropy else None
    return torch.cat(logps), entropy


def completion_logps(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    logits_to_keep: int,
    *,
    temperature: float,
    chunk_tokens: int,
    compute_entropy: bool,
    fp32_head: bool = False,
    row_temperatures: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token log-probs (and entropies) of the last ``logits_to_keep`` tokens of each row,
    shape (rows, logits_to_keep), 0 where ``attention_mask`` is 0 (as TRL's fused head).
    ``row_temperatures`` (one per row) replaces ``temperature``: a head without a bias
    gives ``head(s) / T = head(s / T)``, so rows of any temperature share each head call.

    ``model`` must have a ``plain_lm_head``; ``input_ids`` must be wider than
    ``logits_to_keep`` (a prompt token predicts the first completion token).
    """
    lm = causal_lm(model)
    hidden = lm.base_model(
        input_ids=input_ids, attention_mask=attention_mask, use_cache=False
    ).last_hidden_state
    keep = attention_mask[:, -logits_to_keep:] != 0
    # position t predicts token t + 1: the completion is predicted by positions -K-1 .. -2
    states = hidden[:, -logits_to_keep - 1 : -1][keep]
    targets = input_ids[:, -logits_to_keep:][keep]
    head = lm.get_output_embeddings()
    if row_temperatures is not None:
        if head.bias is not None:
            raise ValueError("per-row temperatures need an LM head without a bias")
        per_token = row_temperatures.to(states.dtype)[:, None].expand(keep.shape)[keep]
        states, temperature = states / per_token[:, None], 1.0
    logps, entropy = head_logps(
        states, targets, head, temperature, chunk_tokens, compute_entropy, fp32_head
    )
    return _scatter(keep, logps), None if entropy is None else _scatter(keep, entropy)


def _scatter(keep: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    # masked_scatter keeps the result in the graph even when no position is kept
    return values.new_zeros(keep.shape).masked_scatter(keep, values)
