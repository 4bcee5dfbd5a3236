"""The toy recipe's options (``recipe.options`` in ``configs/toy_cpu.yaml``).

What the recipe needs beyond the trainer's own fields and the comparison's
(``ComparisonOptions``: the train/held-out split, the baselines, the held-out evaluation):
how many warm-start conversations to generate and how often the warm-start teacher errs,
which training pairs the judge sees. The tiny
model's size is the trainer's ``model.tiny``; the warm start's steps, learning rate and
batch size are its ``warm_start`` fields.
"""

from __future__ import annotations

from pydantic import Field

from pairrl.recipes.comparison.options import ComparisonOptions

__all__ = ["ToyAdditionOptions"]


class ToyAdditionOptions(ComparisonOptions):
    """Toy-recipe settings: split, warm-start data, teacher error; the comparison's own
    (held-out evaluation, baselines) are ``ComparisonOptions``'."""

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
