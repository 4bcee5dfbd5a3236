"""The toy recipe's warm-start conversations (trained by ``pairrl.train.warm_start``).

They teach three formats on training problems only (see ``prompts`` beside this module):
solutions (the column-by-column worked sum in ``<think>``, then a fenced ``f()`` returning it),
pairwise judgements and pointwise judgements (the same worked sum, digit-by-digit checks
of each candidate against it, then 9 for a match and 1 otherwise). Judge candidates are
the true sum or the mistakes a digit adder makes (``distractor_answers``), in random A/B
order; pairs with no correct candidate are common (35%) so that copying a candidate as the
judge's own sum does not pay.

The teacher is imperfect on purpose, in one way RL can fix: with probability
``recipe.options.teacher_dropped_carry`` its worked sum drops the units carry (``6+4=10`` for
``6+4+1=11``), in solutions and in the judge's own sum alike, and the judge then rates
against its wrong sum. The warm-started model therefore samples a dropped carry about as
often, as solver and as judge; the verification and correctness rewards both favour the
``+1``, so PairRL can train one shared decision from both roles.
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
    solution_text,
)

__all__ = ["teacher_drops_carry", "warm_start_conversations"]

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


def warm_start_conversations(
    problems: Sequence[AdditionProblem],
    num_examples: int,
    seed: int = 0,
    dropped_carry_rate: float = 0.0,
) -> list[list[dict[str, str]]]:
    """``num_examples`` chat conversations (prompt + assistant target) in the MIX shares.

    ``dropped_carry_rate``: how often the teacher's worked sum drops the units carry, in
    solutions and in the judge's own sum alike (the judge then rates against that sum).
    """
    if not problems:
        raise ValueError("warm_start_conversations needs at least one problem")
    if not 0.0 <= dropped_carry_rate <= 1.0:
        raise ValueError(f"dropped_carry_rate must be in [0, 1], got {dropped_carry_rate}")
    rng = random.Random(seed)
    kinds, weights = zip(*PAIR_KINDS, strict=True)
    out: list[list[dict[str, str]]] = []
    for _ in range(num_examples):
        problem = rng.choice(problems)
        task = problem.to_task()
        roll = rng.random()
        drop_carry = teacher_drops_carry(problem, dropped_carry_rate, rng)
        if roll < MIX[0]:
            messages = generation_messages(task)
            target = solution_completion(problem, drop_carry)
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
            target = pairwise_judgement_text(problem, values, drop_carry)
        else:
            correct_one = rng.random() < 0.5
            value = _candidate(problem, correct_one, rng)
            messages = pointwise_messages(task, solution_text(value))
            target = pointwise_judgement_text(problem, value, drop_carry)
        out.append([*messages, {"role": "assistant", "content": target}])
    return out
