"""The toy recipe's warm-start conversations (trained by ``pairrl.train.warm_start``).

They teach three formats on training problems only (see ``prompts`` beside this module):
solutions (the column-by-column worked sum in ``<think>``, then a fenced ``f()`` returning
it), and pairwise and pointwise judgements (each candidate checked by a worked
difference, candidate minus a, compared with b digit by digit, then 9 for a match and 1
otherwise). Judge candidates are the true sum or the mistakes a digit adder makes
(``distractor_answers``), in random A/B order; pairs with no correct candidate are common
(35%) so that a judge must check each candidate rather than compare them.

Two teachers, each imperfect in its own way, in decisions RL can fix:

* the solver teacher writes a confused units fact one too many (``7+5=13``; digit pairs
  summing to 11..15) with probability ``teacher_overcounted_units``, and can drop the
  units carry (``6+4=10`` for ``6+4+1=11``) with probability ``teacher_dropped_carry``;
* the judge teacher drops the borrow (``11-6=5`` for ``11-1-6=4``) with probability
  ``teacher_dropped_borrow`` and then rejects a true sum that carried; it compares every
  digit but the units with probability ``teacher_tens_only_check`` and then accepts an
  overcounted sum. (``teacher_units_only_check``, comparing the units alone, is the
  lenient habit that accepts a dropped-carry sum.)

The solver's and the judge's errors are drawn independently and sit in different
computations; a dropped borrow never makes an overcounted sum pass (it differs from the
true sum in the units, which a full check compares), unlike a dropped-carry sum, which it
passes exactly (a borrow is needed exactly where the sum carried). The correctness reward
(every mode) trains the solver's facts; only the verification reward (judgement samples,
PairRL and PointRL) trains the ``-1`` and the units comparison.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from pairrl.recipes.toy_addition.prompts import (
    generation_messages,
    pairwise_judgement_text,
    pairwise_messages,
    pointwise_judgement_text,
    pointwise_messages,
    solution_completion,
)
from pairrl.recipes.toy_addition.tasks import (
    AdditionProblem,
    distractor_answers,
    dropped_carry_sum,
    overcounted_units_sum,
    solution_text,
)

__all__ = ["teacher_drops_carry", "teacher_overcounts_units", "warm_start_conversations"]

# Shares of the example mix (solution, pairwise, pointwise). Pointwise examples are taught
# to every model so that the PointRL ablation starts from the same checkpoint.
MIX = (0.5, 0.4, 0.1)
# Incorrect candidates are common (35% of pairs have no correct one) so that copying a
# candidate as the judge's own sum is a poor shortcut: computing it pays more.
PAIR_KINDS = (("correct_incorrect", 0.5), ("correct_correct", 0.15), ("incorrect_incorrect", 0.35))


def _candidate(problem: AdditionProblem, correct: bool, rng: random.Random) -> int:
    return problem.answer if correct else rng.choice(distractor_answers(problem))


def teacher_drops_carry(
    problem: AdditionProblem, dropped_carry_rate: float, rng: random.Random
) -> bool:
    """Whether the warm-start teacher drops the units carry in this example: with
    probability ``dropped_carry_rate`` where there is one to drop."""
    return dropped_carry_sum(problem) is not None and rng.random() < dropped_carry_rate


def teacher_overcounts_units(
    problem: AdditionProblem, overcounted_units_rate: float, rng: random.Random
) -> bool:
    """Whether the warm-start solver teacher overcounts the units fact in this example:
    with probability ``overcounted_units_rate`` where the units digits are a confused fact
    (no draw at rate 0)."""
    if overcounted_units_rate <= 0 or overcounted_units_sum(problem) is None:
        return False
    return rng.random() < overcounted_units_rate


def warm_start_conversations(
    problems: Sequence[AdditionProblem],
    num_examples: int,
    seed: int = 0,
    dropped_carry_rate: float = 0.0,
    dropped_borrow_rate: float = 0.0,
    units_only_check_rate: float = 0.0,
    overcounted_units_rate: float = 0.0,
    tens_only_check_rate: float = 0.0,
) -> list[list[dict[str, str]]]:
    """``num_examples`` chat conversations (prompt + assistant target) in the MIX shares.

    ``dropped_carry_rate``: how often the solver teacher's worked sum drops the units
    carry. ``dropped_borrow_rate``: how often the judge teacher's worked differences drop
    the borrow (in every line of that judgement that has one); the judge then rates
    against its wrong differences. ``units_only_check_rate``: how often the judge teacher
    compares only the units digit of its differences with b (then accepting any candidate
    that ends like the sum). ``overcounted_units_rate``: how often the solver teacher
    writes a confused units fact one too many (``overcounted_units_sum``; only where the
    problem's units digits are one). ``tens_only_check_rate``: how often the judge teacher
    compares every digit of its difference with b but the units (then accepting an
    overcounted sum). The errors are drawn independently; a rate of 0 draws nothing, so
    the data of the other rates does not change.
    """
    if not problems:
        raise ValueError("warm_start_conversations needs at least one problem")
    for name, rate in (
        ("dropped_carry_rate", dropped_carry_rate),
        ("dropped_borrow_rate", dropped_borrow_rate),
        ("units_only_check_rate", units_only_check_rate),
        ("overcounted_units_rate", overcounted_units_rate),
        ("tens_only_check_rate", tens_only_check_rate),
    ):
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {rate}")
    rng = random.Random(seed)
    kinds, weights = zip(*PAIR_KINDS, strict=True)
    out: list[list[dict[str, str]]] = []
    for _ in range(num_examples):
        problem = rng.choice(problems)
        task = problem.to_task()
        roll = rng.random()
        drop_carry = teacher_drops_carry(problem, dropped_carry_rate, rng)
        drop_borrow = rng.random() < dropped_borrow_rate
        units_only = rng.random() < units_only_check_rate
        overcounted = teacher_overcounts_units(problem, overcounted_units_rate, rng)
        overcount = overcounted and not drop_carry  # one solver error per solution
        tens_only = tens_only_check_rate > 0 and rng.random() < tens_only_check_rate
        tens_only = tens_only and not units_only  # one lenient habit per judgement
        if roll < MIX[0]:
            messages = generation_messages(task)
            target = solution_completion(problem, drop_carry, overcount)
        elif roll < MIX[0] + MIX[1]:
            kind = rng.choices(kinds, weights)[0]
            correct = {
                "correct_incorrect": [True, False],
                "correct_correct": [True, True],
                "incorrect_incorrect": [False, False],
            }[kind]
            rng.shuffle(correct)
            values = [_candidate(problem, c, rng) for c in correct]
            messages = pairwise_messages(task, solution_text(values[0]), solution_text(values[1]))
            target = pairwise_judgement_text(problem, values, drop_borrow, units_only, tens_only)
        else:
            correct_one = rng.random() < 0.5
            value = _candidate(problem, correct_one, rng)
            messages = pointwise_messages(task, solution_text(value))
            target = pointwise_judgement_text(problem, value, drop_borrow, units_only, tens_only)
        out.append([*messages, {"role": "assistant", "content": target}])
    return out
