"""The reward functions the trainer hands TRL.

They only report the rewards the rollout computed (they need the pair
labels, which only the rollout has); TRL logs them per function as
``rewards/solution_correctness/mean`` and ``rewards/pair_verification/mean``.
"""

from __future__ import annotations

import logging
from typing import Any

from pairrl.rollout.layout import JUDGEMENT, SOLUTION

__all__ = ["pair_verification", "quiet_unscored_rows", "solution_correctness"]


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

    ``no_pair`` and ``unlabelled`` rows have no reward by design (they carry no gradient and
    are counted); ``RowRecord.check`` already rejects any other row without one.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return "All reward functions returned None" not in record.getMessage()


_ROW_FILTER = _NoRewardRowFilter()


def quiet_unscored_rows() -> None:
    """Install the filter on TRL's GRPO logger (once; the trainer calls it when built)."""
    logger = logging.getLogger("trl.trainer.grpo_trainer")
    if _ROW_FILTER not in logger.filters:
        logger.addFilter(_ROW_FILTER)
