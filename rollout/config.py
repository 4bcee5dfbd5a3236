"""The rollout's config sections: how each problem's budget G splits between solving and
judging, the verification reward, and the per-phase decoding. They are sections of the
training config (``pairrl.train.config.TrainConfig``), passed to the rollout on their own.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from pairrl.config import PairrlModel

__all__ = ["Mode", "PhaseSamplingConfig", "RewardConfig", "RolloutConfig", "SamplingConfig"]

Mode = Literal["pairrl", "pointrl", "grpo"]


class RolloutConfig(PairrlModel):
    """How each problem's rollout budget G is split between solving and judging.

    The split is derived in one place (``solutions_per_problem`` /
    ``judgements_per_problem``), so ``--set rollout.mode=grpo`` alone turns a PairRL run
    into its GRPO baseline with the same G.
    """

    mode: Mode = Field(
        default="pairrl",
        description="pairrl: pairwise judgements of on-policy pairs; pointrl: pointwise "
        "judgements of single solutions; grpo: all G samples are solutions (baseline)",
    )
    group_size: int = Field(
        default=8, ge=2, le=256, description="G: sampled rollouts per problem (both roles)"
    )
    num_solutions: int = Field(
        default=4,
        ge=2,
        le=255,
        description="G_gen in pairrl/pointrl: solution samples per problem; the other "
        "G - G_gen are judgements (paper: 4 + 4). grpo samples G solutions and ignores it",
    )
    pair_seed: int = Field(default=0, ge=0, description="seed for pair choice and A/B order")
    pairs: Literal["paper", "mixed_only"] = Field(
        default="paper",
        description="which of a problem's solutions are paired for judgement training: the "
        "paper's rule (correct-incorrect and correct-correct, never incorrect-incorrect) or "
        "correct-incorrect only (pairrl.rollout.pairs)",
    )

    @property
    def solutions_per_problem(self) -> int:
        """G_gen: G in grpo mode, ``num_solutions`` otherwise."""
        return self.group_size if self.mode == "grpo" else self.num_solutions

    @property
    def judgements_per_problem(self) -> int:
        """G_ver = G - G_gen (0 in grpo mode)."""
        return self.group_size - self.solutions_per_problem

    @model_validator(mode="after")
    def _split_fits(self) -> RolloutConfig:
        if self.mode != "grpo" and self.num_solutions >= self.group_size:
            raise ValueError(
                f"mode {self.mode!r} needs at least one judgement per problem: "
                f"num_solutions ({self.num_solutions}) must be below group_size "
                f"({self.group_size})"
            )
        return self


class RewardConfig(PairrlModel):
    """The paper's thresholded verification reward."""

    threshold: float = Field(
        default=0.2, ge=0.0, le=1.0, description="reward only when |v - y| <= threshold"
    )
    normalisation: Literal["minus_one_over_nine", "over_ten"] = Field(
        default="minus_one_over_nine", description="rating r -> v: (r-1)/9 or r/10"
    )
    class_balance: bool = Field(
        default=False,
        description="weight each judged solution by the inverse frequency of its label "
        "among the step's judged solutions (pairrl.rewards.class_balance_weights), so that "
        "accepting everything stops paying when most solutions are correct; off: the "
        "paper's reward",
    )


class SamplingConfig(PairrlModel):
    """Decoding settings for one kind of sample: a training phase's (solutions or
    judgements) or the benchmark's candidates."""

    temperature: float = Field(
        default=0.8, ge=0.0, le=10.0, description="sampling temperature (0: greedy, benchmark only)"
    )
    top_p: float = Field(default=0.95, gt=0.0, le=1.0, description="nucleus sampling mass")
    max_tokens: int = Field(default=512, ge=1, le=131072, description="completion token cap")


class PhaseSamplingConfig(PairrlModel):
    """Training's decoding, per phase. The trainer scores each sample at its phase's
    temperature (``pairrl.train.row_temperatures``), so a temperature must be above 0."""

    solution: SamplingConfig = Field(default_factory=SamplingConfig, description="solution phase")
    judgement: SamplingConfig = Field(default_factory=SamplingConfig, description="judgement phase")

    @model_validator(mode="after")
    def _trainable(self) -> PhaseSamplingConfig:
        for phase in ("solution", "judgement"):
            if getattr(self, phase).temperature <= 0.0:
                raise ValueError(
                    f"{phase}.temperature must be above 0 in training: each sample is scored "
                    "at its temperature (0, greedy decoding, has no sampling distribution)"
                )
        return self
