"""Each sample scored at the temperature it was drawn at.

PairRL samples solutions and judgements with their own settings (``sampling.solution`` and
``sampling.judgement``), while TRL scores every row of a batch at one temperature, the
trainer's (the solution temperature), fixed in its fused LM head when the trainer is
built. A judgement drawn at 0.4 but scored at 1.0 enters the loss with log-probabilities
of a distribution it was not drawn from: its gradient is that of ``log softmax(logits)``
instead of ``log softmax(logits / 0.4)``, and any importance ratio against the sampler's
log-probabilities is off.

So each row carries its temperature (a batch column, ``ROW_TEMPERATURE``, shuffled and
split with the rows), and the chunked LM head (``pairrl.train.chunked_logps``) divides
each row's hidden states by it: for a head without a bias, ``W h / T = W (h / T)``, so rows
of any temperature share each forward and each head call. Where the chunked head is not
used (several processes, DeepSpeed or FSDP, a head with a bias or logit transforms), two
temperatures are refused when the trainer is built; one temperature is TRL's own path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from pairrl.config import ConfigError
from pairrl.rollout.layout import JUDGEMENT, NO_PAIR, SOLUTION, UNLABELLED
from pairrl.train.chunked_logps import plain_lm_head

__all__ = [
    "ROW_TEMPERATURE",
    "bias_free_head",
    "check_scorable",
    "row_temperatures",
    "sample_temperatures",
    "scoring_temperatures",
]

# the batch column that carries each row's sampling temperature through TRL's shuffle and split
ROW_TEMPERATURE = "pairrl_temperature"


def sample_temperatures(solution: float, judgement: float) -> dict[str, float] | None:
    """The temperature of each sample type, or None when both are one temperature (then
    every row is scored at the trainer's, as TRL does). An unlabelled row is a solution;
    a no-pair row was never sampled and carries no gradient (the solution temperature)."""
    if solution == judgement:
        return None
    return {SOLUTION: solution, UNLABELLED: solution, NO_PAIR: solution, JUDGEMENT: judgement}


def row_temperatures(sample_types: Sequence[str], temperatures: Mapping[str, float]) -> list[float]:
    """The temperature each row was drawn at, from its sample type."""
    unknown = sorted(set(sample_types) - set(temperatures))
    if unknown:
        raise ValueError(f"no sampling temperature for sample types {unknown}")
    return [temperatures[t] for t in sample_types]


def scoring_temperatures(
    rows_or_types: torch.Tensor | Sequence[str],
    temperatures: Mapping[str, float],
    rows: int,
    trainer_temperature: float,
) -> torch.Tensor | None:
    """The temperatures ``rows`` rows are scored at (given as a tensor, or as sample types
    looked up in ``temperatures``), or None when every one is ``trainer_temperature``."""
    if isinstance(rows_or_types, torch.Tensor):
        found = rows_or_types.cpu()
    else:
        found = torch.tensor(row_temperatures(rows_or_types, temperatures))
    if found.numel() != rows:
        raise RuntimeError(f"{found.numel()} sampling temperatures for {rows} rows")
    return None if bool((found == trainer_temperature).all()) else found


def bias_free_head(model: Any) -> torch.nn.Linear | None:
    """The model's plain LM head (``plain_lm_head``) when it has no bias, else None."""
    head = plain_lm_head(model)
    return head if head is not None and head.bias is None else None


def check_scorable(temperatures: Mapping[str, float] | None, chunked_head: Any) -> None:
    """Refuse two temperatures without the chunked head (``chunked_head`` None): TRL's
    fused head scores every row at the temperature it was built with."""
    if temperatures is None or chunked_head is not None:
        return
    raise ConfigError(
        "sampling",
        [
            f"sampling.judgement.temperature ({temperatures[JUDGEMENT]}) differs from "
            f"sampling.solution.temperature ({temperatures[SOLUTION]}): rows of two "
            "temperatures are scored on one process, without DeepSpeed or FSDP, through an "
            "LM head without a bias or logit transforms; here, make the two equal"
        ],
    )
