"""The reward functions the trainer hands TRL.

The rollout computes every reward (a judgement's needs the pair's labels, which only the
rollout has) into each row's ``RowRecord``; these functions report them from the rollout's
record column, so that TRL logs them per function as ``rewards/solution_correctness/mean``
and ``rewards/pair_verification/mean``.
"""

from __future__ import annotations

import logging
from typing import Any

from pairrl.rollout.layout import JUDGEMENT, SOLUTION, RowRecord

__all__ = ["pair_verification", "quiet_unscored_rows", "solution_correctness"]


def solution_correctness(
    prompts: list[Any],
    completions: list[Any],
    pairrl_record: list[RowRecord],
    **kwargs: Any,
) -> list[float | None]:
    """1/0 execution reward on solution rows; None (not applicable) elsewhere."""
    log_extra = kwargs.get("log_extra")
    if log_extra is not None:
        log_extra("sample_type", [r.sample_type for r in pairrl_record])
        log_extra("detail", list(kwargs.get("pairrl_detail", [""] * len(prompts))))
    return [r.reward if r.sample_type == SOLUTION else None for r in pairrl_record]


def pair_verification(
    prompts: list[Any],
    completions: list[Any],
    pairrl_record: list[RowRecord],
    **kwargs: Any,
) -> list[float | None]:
    """The paper's thresholded verification reward on judgement rows; None elsewhere."""
    return [r.reward if r.sample_type == JUDGEMENT else None for r in pairrl_record]


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
