"""Each sample scored at the temperature it was drawn at.

PairRL samples solutions and judgements with their own settings (``sampling.solution`` and
``sampling.judgement``), while TRL scores every row of a batch at one temperature, the
trainer's (the solution temperature), fixed in its fused LM head when the trainer is
built. A judgement drawn at 0.4 but scored at 1.0 enters the loss with log-probabilities
of a distribution it was not drawn from: its gradient is that of ``log softmax(logits)``
instead of ``log softmax(logits / 0.4)``, and any importance ratio against the sampler's
log-probabilities is off.

So the rollout gives each row its temperature (its extra column ``TEMPERATURE_COLUMN``,
``pairrl.rollout.layout``), the trainer puts it in the batch (shuffled and split with the
rows), and the chunked LM head (``pairrl.train.chunked_logps``) divides each row's hidden
states by it: for a head without a bias, ``W h / T = W (h / T)``, so rows of any
temperature share each forward and each head call. Where the chunked head is not used
(several processes, DeepSpeed or FSDP, a head with a bias or logit transforms), two
temperatures are refused when the trainer is built; one temperature is TRL's own path.

TRL's log-prob method receives token ids only, so the temperatures of the rows it scores
reach it through a scope around TRL's call (``scoring_rows``): the micro-batch's column in
the loss; in TRL's scoring of a fresh batch (old and reference log-probs), the column the
rollout returned (``report_rollout_temperatures``). Outside a scope rows of two
temperatures are refused, never scored at the trainer's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import torch

from pairrl.config import ConfigError
from pairrl.rollout.layout import JUDGEMENT, NO_PAIR, SOLUTION, UNLABELLED
from pairrl.train.chunked_logps import plain_lm_head

__all__ = [
    "bias_free_head",
    "check_scorable",
    "mixed",
    "report_rollout_temperatures",
    "sample_temperatures",
    "scored_row_temperatures",
    "scoring_rows",
    "scoring_temperatures",
]


def sample_temperatures(solution: float, judgement: float) -> dict[str, float]:
    """The temperature of each sample type. An unlabelled row is a solution; a no-pair row
    was never sampled and carries no gradient (the solution temperature)."""
    return {SOLUTION: solution, UNLABELLED: solution, NO_PAIR: solution, JUDGEMENT: judgement}


def mixed(temperatures: Mapping[str, float]) -> bool:
    """Whether the sample types are drawn at more than one temperature."""
    return len(set(temperatures.values())) > 1


def scoring_temperatures(
    found: torch.Tensor, rows: int, trainer_temperature: float
) -> torch.Tensor | None:
    """The temperatures ``rows`` rows are scored at, or None when every one is
    ``trainer_temperature`` (TRL's own path)."""
    found = found.cpu()
    if found.numel() != rows:
        raise RuntimeError(f"{found.numel()} sampling temperatures for {rows} rows")
    return None if bool((found == trainer_temperature).all()) else found


@dataclass
class _Scope:
    temperatures: torch.Tensor | None


_SCOPE: ContextVar[_Scope | None] = ContextVar("pairrl_scored_row_temperatures", default=None)


@contextmanager
def scoring_rows(temperatures: torch.Tensor | None = None) -> Iterator[None]:
    """Within, the rows TRL scores were sampled at ``temperatures`` (a micro-batch's
    column); without them, at those the rollout reports within."""
    token = _SCOPE.set(_Scope(temperatures))
    try:
        yield
    finally:
        _SCOPE.reset(token)


def report_rollout_temperatures(temperatures: Sequence[float]) -> None:
    """The rollout's rows' temperatures, for TRL's scoring of them in the open scope."""
    scope = _SCOPE.get()
    if scope is None:
        raise RuntimeError("the rollout ran outside the trainer's scoring scope")
    scope.temperatures = torch.tensor(list(temperatures), dtype=torch.float32)


def scored_row_temperatures() -> torch.Tensor | None:
    """The temperatures of the rows TRL is scoring (None outside a scope)."""
    scope = _SCOPE.get()
    return None if scope is None else scope.temperatures


def bias_free_head(model: Any) -> torch.nn.Linear | None:
    """The model's plain LM head (``plain_lm_head``) when it has no bias, else None."""
    head = plain_lm_head(model)
    return head if head is not None and head.bias is None else None


def check_scorable(temperatures: Mapping[str, float], chunked_head: Any) -> None:
    """Refuse two temperatures without the chunked head (``chunked_head`` None): TRL's
    fused head scores every row at the temperature it was built with."""
    if not mixed(temperatures) or chunked_head is not None:
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
