"""Each sample scored at the temperature it was drawn at.

PairRL samples solutions and judgements with their own settings (``sampling.solution`` and
``sampling.judgement``), while TRL scores every row of a batch at one temperature, the
trainer's (the solution temperature). A judgement drawn at 0.4 but scored at 1.0 enters
the loss with log-probabilities of a distribution it was not drawn from: its gradient is
that of ``log softmax(logits)`` instead of ``log softmax(logits / 0.4)``, and any
importance ratio against the sampler's log-probabilities is off. So the trainer scores
rows in groups, one per temperature (``PairRLTrainer._get_per_token_logps_and_entropies``);
this module holds the pure parts: each row's temperature and the grouping.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from pairrl.config import ConfigError
from pairrl.rollout.layout import JUDGEMENT, NO_PAIR, SOLUTION, UNLABELLED

__all__ = [
    "ROW_TEMPERATURE",
    "check_scorable",
    "row_temperatures",
    "sample_temperatures",
    "scatter_rows",
    "scoring_temperatures",
    "temperature_groups",
    "trainer_temperature",
]

# the batch column that carries each row's sampling temperature through TRL's shuffle and split
ROW_TEMPERATURE = "pairrl_temperature"


def sample_temperatures(solution: float, judgement: float) -> dict[str, float] | None:
    """The temperature of each sample type, or None when both are one temperature (then
    every row is scored at the trainer's, as TRL does). An unlabelled row is a solution;
    a no-pair row was never sampled and carries no gradient: the solution temperature keeps
    it out of a group of its own."""
    if solution == judgement:
        return None
    return {SOLUTION: solution, UNLABELLED: solution, NO_PAIR: solution, JUDGEMENT: judgement}


def row_temperatures(sample_types: Sequence[str], temperatures: Mapping[str, float]) -> list[float]:
    """The temperature each row was drawn at, from its sample type."""
    unknown = sorted(set(sample_types) - set(temperatures))
    if unknown:
        raise ValueError(f"no sampling temperature for sample types {unknown}")
    return [temperatures[t] for t in sample_types]


def temperature_groups(temperatures: torch.Tensor) -> list[tuple[float, torch.Tensor]]:
    """``(temperature, row indices)`` per distinct temperature, coolest first."""
    return [
        (float(t), torch.nonzero(temperatures == t).flatten())
        for t in torch.unique(temperatures).tolist()
    ]


def scatter_rows(parts: Sequence[tuple[torch.Tensor, torch.Tensor]], rows: int) -> torch.Tensor:
    """One (rows, ...) tensor from ``(row indices, values)`` parts that cover every row
    once, differentiable in the values."""
    order = torch.cat([index for index, _ in parts])
    if order.numel() != rows or torch.unique(order).numel() != rows:
        raise ValueError(f"the parts cover {order.numel()} row slots, not each of {rows} once")
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(rows, device=order.device)
    return torch.cat([values for _, values in parts])[inverse]


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


@contextmanager
def trainer_temperature(trainer: Any, temperature: float) -> Iterator[None]:
    """The trainer's scoring temperature (TRL's ``trainer.temperature``) set inside."""
    saved, trainer.temperature = trainer.temperature, temperature
    try:
        yield
    finally:
        trainer.temperature = saved


def check_scorable(trainer: Any, temperatures: Mapping[str, float] | None) -> None:
    """Refuse two temperatures under ZeRO-3 or FSDP: a micro-batch of one temperature on
    one process and of two on another would run different numbers of forwards, and those
    gather weights collectively."""
    if temperatures is None:
        return
    plugin = getattr(trainer.accelerator.state, "deepspeed_plugin", None)
    if getattr(trainer, "is_fsdp_enabled", False) or getattr(plugin, "zero_stage", 0) == 3:
        raise ConfigError(
            "sampling",
            [
                f"sampling.judgement.temperature ({temperatures[JUDGEMENT]}) differs from "
                f"sampling.solution.temperature ({temperatures[SOLUTION]}), which ZeRO-3 and "
                "FSDP cannot score: make them equal"
            ],
        )
