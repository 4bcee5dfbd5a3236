"""The demo's toy task family: two-digit additions whose sum has three digits.

Each problem asks for a python function ``f()`` returning ``a + b`` and is a real
``rewards.Task``: its hidden test ``assert f() == <sum>`` runs in the sandboxed executor,
exactly as a code benchmark's tests do. The family is chosen for what a tiny model can
learn on two CPU cores (2-digit addition is learnable by GRPO at this size, with
errors that are systematic but sometimes sampled right, such as a dropped carry), and the
sum always has three digits so that answers have a fixed width.

The train and held-out problems are disjoint and fixed by ``split_seed`` alone, so every
training seed is measured on the same held-out set.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from pairrl.rewards.tasks import AssertTests, Task

__all__ = [
    "AdditionProblem",
    "all_problems",
    "distractor_answers",
    "dropped_carry_sum",
    "overcounted_units_sum",
    "solution_code",
    "solution_text",
    "split_problems",
]

TASK_PREFIX = "toy/add"


@dataclass(frozen=True)
class AdditionProblem:
    """``a + b`` with two-digit ``a`` and ``b`` whose sum has three digits."""

    a: int
    b: int

    def __post_init__(self) -> None:
        if not (10 <= self.a <= 99 and 10 <= self.b <= 99 and self.a + self.b >= 100):
            raise ValueError(f"need two-digit a, b with a three-digit sum, got {self.a} + {self.b}")

    @property
    def answer(self) -> int:
        """The true sum, computed (the hidden test's expected value)."""
        return self.a + self.b

    @property
    def units_carry(self) -> bool:
        """Whether the units column carries into the tens (7 + 8 = 15 does)."""
        return self.a % 10 + self.b % 10 >= 10

    @property
    def task_id(self) -> str:
        return f"{TASK_PREFIX}/{self.a}+{self.b}"

    @property
    def prompt(self) -> str:
        return f"Write f() returning {self.a} + {self.b}."

    def to_task(self) -> Task:
        """The problem as a code task checked by execution (``pairrl.rewards.Executor``)."""
        return Task(
            task_id=self.task_id,
            prompt=self.prompt,
            entry_point="f",
            tests=AssertTests(cases=(f"assert f() == {self.answer}",)),
            canonical_solution=solution_code(self.answer),
            source="pairrl.recipes.toy_addition",
        )


def all_problems() -> list[AdditionProblem]:
    """Every problem of the family (4860 ordered pairs), in a fixed order."""
    return [AdditionProblem(a, b) for a in range(10, 100) for b in range(10, 100) if a + b >= 100]


def split_problems(
    num_heldout: int = 200, split_seed: int = 1234
) -> tuple[list[AdditionProblem], list[AdditionProblem]]:
    """``(train, heldout)``: a seeded disjoint split of the family (train order shuffled)."""
    problems = all_problems()
    if not 1 <= num_heldout < len(problems):
        raise ValueError(f"num_heldout must be in 1..{len(problems) - 1}, got {num_heldout}")
    rng = random.Random(split_seed)
    rng.shuffle(problems)
    return problems[num_heldout:], problems[:num_heldout]


def solution_code(value: int) -> str:
    """The program a solution holds: ``f`` returning an integer literal."""
    return f"def f():\n    return {value}\n"


def solution_text(value: int) -> str:
    """A solution completion in the generation format: one fenced python block."""
    return f"```python\n{solution_code(value)}```"


def dropped_carry_sum(problem: AdditionProblem) -> int | None:
    """The sum with the units carry dropped; None if the units do not carry or the result
    would lose a digit (answers keep three digits).

    >>> [dropped_carry_sum(AdditionProblem(a, b)) for a, b in ((67, 48), (61, 48), (55, 47))]
    [105, None, None]
    """
    dropped = problem.answer - 10
    if not problem.units_carry or dropped < 100:
        return None
    return dropped


# The units facts the solver teacher gets wrong part of the time: digit pairs summing to
# 11..15 (8+3, 7+5, 9+6, ...; 30 of the 100 ordered pairs). A fact at a time, unlike a
# dropped carry, which is one decision shared by every problem: the correctness reward
# repairs them one by one, so wrong solutions stay common through training.
CONFUSED_UNITS_SUMS = range(11, 16)


def overcounted_units_sum(problem: AdditionProblem) -> int | None:
    """The sum with the units fact one too many (7+5=13 for 12); None unless the units
    digits are one of the confused facts (``CONFUSED_UNITS_SUMS``). The carry is kept.

    >>> [overcounted_units_sum(AdditionProblem(a, b)) for a, b in ((67, 45), (61, 48), (69, 49))]
    [113, None, None]
    """
    if problem.a % 10 + problem.b % 10 not in CONFUSED_UNITS_SUMS:
        return None
    return problem.answer + 1


def distractor_answers(problem: AdditionProblem) -> list[int]:
    """Plausible wrong sums, the mistakes a digit-by-digit adder makes.

    Dropped carry from the units, a spurious carry, and units or tens digits off by one.
    All differ from the true sum and have three digits; used only to give the warm
    start's judge examples realistic incorrect candidates.

    >>> distractor_answers(AdditionProblem(67, 48))  # 115; 7 + 8 carries, so dropped carry = 105
    [105, 116, 114, 125]
    """
    true = problem.answer
    candidates = [
        true - 10 if problem.units_carry else true + 10,  # dropped or spurious carry into the tens
        true + 1,
        true - 1,
        true + 10,
        true - 10,
    ]
    out: list[int] = []
    for value in candidates:
        if value != true and 100 <= value <= 999 and value not in out:
            out.append(value)
    return out
