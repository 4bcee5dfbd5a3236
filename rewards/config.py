"""The executor's config section, one for training and the benchmark alike.

``executor:`` in a training config labels the rollout's solutions (and a recipe's
warm-start samples); in an eval config it labels the candidates. Both build the same
:class:`pairrl.rewards.Executor` from it with :meth:`ExecutorConfig.build`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from pairrl.config import PairrlModel
from pairrl.rewards.evalplus_compat import LIMIT_FACTOR, LIMIT_FLOOR_S

if TYPE_CHECKING:
    from pairrl.rewards.executor import Executor

__all__ = ["ExecutorConfig"]


class ExecutorConfig(PairrlModel):
    """The sandbox that labels code by running its tests (``pairrl.rewards.Executor``)."""

    workers: int | None = Field(
        default=None, ge=1, le=1024, description="sandbox workers; null = one per core"
    )
    timeout_s: float = Field(
        default=3.0,
        gt=0.0,
        le=600.0,
        description="fixed mode: the time limit per candidate (per input for input/output "
        "and EvalPlus tasks)",
    )
    isolation: Literal["bwrap", "process"] = Field(
        default="bwrap",
        description="bwrap: bubblewrap sandbox (required for untrusted code); process: "
        "rlimits only, for machines without bubblewrap",
    )
    time_limit: Literal["fixed", "reference"] = Field(
        default="fixed",
        description="fixed: timeout_s; reference: EvalPlus's rule, max(limit_floor_s, "
        "limit_factor x the reference solution's time), for tasks that have one "
        "(docs/time_limits.md)",
    )
    limit_factor: float = Field(
        default=LIMIT_FACTOR,
        gt=0.0,
        le=100.0,
        description="reference mode: times the reference's time",
    )
    limit_floor_s: float = Field(
        default=LIMIT_FLOOR_S, gt=0.0, le=600.0, description="reference mode: the smallest limit"
    )

    def build(self) -> Executor:
        """A started-on-first-use executor with these limits (close it when done)."""
        from pairrl.rewards.executor import Executor

        return Executor(
            workers=self.workers,
            timeout_s=self.timeout_s,
            isolation=self.isolation,
            time_limit=self.time_limit,
            limit_factor=self.limit_factor,
            limit_floor_s=self.limit_floor_s,
        )
