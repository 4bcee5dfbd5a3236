"""The options of a recipe that compares PairRL with its baselines on held-out problems
(``recipe.options``): the train/held-out split, the baselines trained from the same warm
start, and the held-out evaluation (best-of-k with k samples per problem, Swiss budget
B x k), and which process runs what. A recipe's own options extend these.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from pairrl.config import PairrlModel

__all__ = ["EVALUATION_ONLY", "ComparisonOptions"]

# Options that shape only the held-out evaluation (or which process runs it), never what a
# training run does: a finished baseline is reused whatever they say.
EVALUATION_ONLY = frozenset(
    {"eval_k", "eval_problems", "eval_batch_size", "eval_temperature", "eval_engine",
     "swiss_budget_per_candidate", "side_by_side"}
)  # fmt: skip


class ComparisonOptions(PairrlModel):
    """The comparison's settings: split, baselines, held-out evaluation."""

    split_seed: int = Field(
        default=1234, ge=0, description="fixes the train/held-out split (independent of seed)"
    )
    heldout_problems: int = Field(
        default=200, ge=1, le=2000, description="held-out problems (never trained on)"
    )
    eval_k: int = Field(default=8, ge=2, le=64, description="candidates per held-out problem")
    eval_problems: int | None = Field(
        default=None, ge=1, description="evaluate only the first N held-out problems (tests)"
    )
    eval_batch_size: int = Field(default=256, ge=1, description="sequences per generate call")
    eval_temperature: float | None = Field(
        default=None,
        gt=0.0,
        le=2.0,
        description="sampling temperature of the held-out candidates; default: the run's "
        "solution temperature (sampling.solution.temperature), so that a run trained at "
        "another temperature is still evaluated at this one",
    )
    eval_engine: Literal["hf", "vllm"] = Field(
        default="hf",
        description="engine of the held-out evaluation's generator and judge: hf "
        "(transformers) or vllm (in-process; on the toy, start-up included, it is slower "
        "than hf on CPU: benchmarks/eval_engines.py)",
    )
    swiss_budget_per_candidate: int = Field(
        default=2, ge=1, le=3, description="Swiss budget B = this x k (paper: 2)"
    )
    baselines: list[
        Annotated[str, StringConstraints(pattern=r"^(pairrl|pointrl|grpo)(@[0-9]+)?$")]
    ] = Field(
        default_factory=lambda: ["grpo"],
        description="modes also trained from the same warm start, seed and steps, and "
        "evaluated beside the run's own mode; mode@G sets its group size (grpo@4: four "
        "solutions per problem)",
    )
    side_by_side: bool = Field(
        default=True,
        description="on a CPU run of one process with at least two torch threads: evaluate "
        "the warm start, then train and evaluate the baselines, in a second process while "
        "the run's own mode trains (each kind of work on a thread count fixed before the "
        "run: half the threads each); off, the same work one after the other on the same "
        "thread counts, so the same numbers, in more wall time",
    )
