"""The toy recipe's options (``recipe.options`` in ``configs/toy_cpu.yaml``).

What the recipe needs beyond the trainer's own fields: the train/held-out split, how many
warm-start conversations to generate, how often the warm-start teacher errs, and the
held-out evaluation (best-of-k with k samples per problem, Swiss budget 2k). The tiny
model's size is the trainer's ``model.tiny``; the warm start's steps, learning rate and
batch size are its ``warm_start`` fields.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from pairrl.config import PairrlModel

__all__ = ["EVALUATION_ONLY", "ToyAdditionOptions"]

# Options that shape only the held-out evaluation (or which process runs it), never what a
# training run does: a finished baseline is reused whatever they say.
EVALUATION_ONLY = frozenset(
    {"eval_k", "eval_problems", "eval_batch_size", "eval_temperature", "eval_engine",
     "swiss_budget_per_candidate", "side_by_side"}
)  # fmt: skip


class ToyAdditionOptions(PairrlModel):
    """Toy-recipe settings: split, warm-start data, teacher error, held-out evaluation."""

    split_seed: int = Field(
        default=1234, ge=0, description="fixes the train/held-out split (independent of seed)"
    )
    heldout_problems: int = Field(
        default=200, ge=1, le=2000, description="held-out problems (never trained on)"
    )
    warm_start_examples: int = Field(
        default=4096, ge=1, description="generated SFT conversations (solutions and judgements)"
    )
    warm_start_share: float = Field(
        default=1.0,
        gt=0.0,
        le=1.0,
        description="share of the training problems the warm start's conversations use; "
        "below 1, RL trains on the others only, problems whose answers the warm start never "
        "showed (so its solutions err as often as on held-out ones); 1: both use them all",
    )
    teacher_dropped_carry: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="how often the warm-start solver teacher drops the units carry in its "
        "worked sum: the solver's imperfection (trained by the correctness reward)",
    )
    teacher_dropped_borrow: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="how often the warm-start judge teacher drops the borrow in its worked "
        "differences: the judge's imperfection (trained by the verification reward only)",
    )
    teacher_units_only_check: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="how often the warm-start judge teacher compares only the units digit "
        "of its difference with b: a lenient judge that accepts a dropped-carry sum "
        "(trained by the verification reward only)",
    )
    teacher_overcounted_units: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="how often the warm-start solver teacher writes a confused units fact "
        "(digits summing to 11..15) one too many: a solver imperfection repaired a fact at "
        "a time by the correctness reward, so wrong solutions stay common in training",
    )
    teacher_tens_only_check: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="how often the warm-start judge teacher compares every digit of its "
        "difference with b but the units: a lenient judge that accepts an overcounted sum "
        "(trained by the verification reward only)",
    )
    judge_pairs: Literal["paper", "mixed_only"] = Field(
        default="paper",
        description="training pairs for judgements: the paper's (correct-incorrect and "
        "correct-correct) or correct-incorrect only (pairrl.rollout.pairs)",
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
        "(transformers) or vllm (in-process; on this toy, start-up included, it is slower "
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
    evaluate: bool = Field(
        default=True, description="evaluate after training (off for the baseline runs)"
    )
    side_by_side: bool = Field(
        default=True,
        description="on a CPU run of one process with at least two torch threads: evaluate "
        "the warm start, then train and evaluate the baselines, in a second process while "
        "the run's own mode trains (each kind of work on a thread count fixed before the "
        "run: half the threads each); off, the same work one after the other on the same "
        "thread counts, so the same numbers, in more wall time",
    )
