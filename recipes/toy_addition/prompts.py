"""The toy recipe's prompts and the exact completions its warm start teaches.

Compact prompts, not ``pairrl.rollout.prompts``' paper wording: the tiny model reads every
prompt token on two CPU cores, and the paper's reviewer instructions (about 250 tokens)
would multiply the judge's cost by ten while carrying nothing a 0.6M-parameter model can
use. The *output* formats are the product's: a fenced python block for solutions and
``<rating_A>k</rating_A>`` / ``<rating_B>k</rating_B>`` (or ``<rating>k</rating>``)
parsed by ``pairrl.rewards``, so the trainer's rollout, reward and metrics run unchanged.

Rating tokens. The tiny tokenizer splits digits, so "10" is the two tokens "1", "0" and
shares its first token with "1": an unsure judge that spreads mass over 1 and 10 emits
"1" first and the verdict is decided by the second token. The warm start therefore
teaches only single-token ratings: **9 for a correct solution, 1 for an incorrect one**,
read on the paper's scale unchanged (v = (r - 1) / 9: 9 -> 0.889, 1 -> 0.0, both inside
the 0.2 reward threshold of their label).

Solving and checking are different skills. The solver adds, column by column, with an
explicit carry: ``<think>67+48: 7+8=15 6+4+1=11 115</think>`` then the code. The judge
never adds: it checks a candidate c by subtracting, column by column with an explicit
borrow, c - a, and comparing the difference with b digit by digit:
``A 115-67: 15-7=8 11-1-6=4 48 44= 88=`` (units 15-7 borrows; the tens take the borrow
back, ``-1``; 48 is b, so each digit check is ``=``), then 9 or 1. The judge's decisions
that matter are the ``-1`` after the borrow and comparing the units digit at all; the
solver's are its addition facts. They are sampled tokens of two different computations,
so training one does not train the other: a judgement sample (PairRL) is the only thing
that trains the judge's.

Why this format and the teachers' errors: docs/experiments.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from pairrl.recipes.toy_addition.tasks import (
    AdditionProblem,
    dropped_carry_sum,
    overcounted_units_sum,
    solution_text,
)
from pairrl.rewards.tasks import Task
from pairrl.rollout.prompt_kit import Messages, PromptKit
from pairrl.rollout.prompts import solution_for_judge

__all__ = [
    "CORRECT_RATING",
    "INCORRECT_RATING",
    "check_line",
    "digit_checks",
    "generation_messages",
    "pairwise_judgement_text",
    "pairwise_messages",
    "pointwise_ab_messages",
    "pointwise_judgement_text",
    "pointwise_messages",
    "prompt_kit",
    "solution_completion",
    "worked_difference",
    "worked_sum",
]

CORRECT_RATING = 9
INCORRECT_RATING = 1


def generation_messages(task: Task) -> Messages:
    """The solution prompt: the task's own text."""
    return [{"role": "user", "content": task.prompt}]


def pairwise_messages(task: Task, solution_a: str, solution_b: str) -> Messages:
    """Compare two shown solutions; answer with the paper's two rating tags."""
    return [
        {
            "role": "user",
            "content": (f"Rate A, B: {task.prompt}\nA:\n{solution_a}\nB:\n{solution_b}"),
        }
    ]


def pointwise_messages(task: Task, solution: str) -> Messages:
    """Rate one shown solution; answer with one rating tag."""
    return [{"role": "user", "content": f"Rate: {task.prompt}\n{solution}"}]


def pointwise_ab_messages(task: Task, solution: str) -> Messages:
    """The yes/no question the benchmark's pointwise A/B read-out asks (not taught)."""
    return [{"role": "user", "content": f"Correct? A yes B no: {task.prompt}\n{solution}"}]


def _rating(correct: bool) -> int:
    return CORRECT_RATING if correct else INCORRECT_RATING


def digit_checks(expected: int, found: str) -> str:
    """Expected digit, found digit and ``=`` or ``!`` per position; a missing digit is ``_``.

    >>> digit_checks(48, "48")
    '44= 88='
    >>> digit_checks(48, "38")
    '43! 88='
    >>> digit_checks(48, "148")
    '41! 84! _8!'
    """
    own = str(expected)
    width = max(len(own), len(found))
    pairs = zip(own.ljust(width, "_"), found.ljust(width, "_"), strict=True)
    return " ".join(f"{x}{y}{'=' if x == y else '!'}" for x, y in pairs)


def worked_sum(
    problem: AdditionProblem, drop_carry: bool = False, overcount_units: bool = False
) -> tuple[str, int]:
    """The solver's thought, column by column, and the sum it reaches.

    Operands restated, units column, tens column (with ``+1`` when the units carry), sum.
    ``drop_carry`` leaves out the ``+1``; ``overcount_units`` writes a confused units fact
    one too many (``overcounted_units_sum``): the mistakes the warm-start solver teacher
    makes.

    >>> worked_sum(AdditionProblem(67, 48))
    ('67+48: 7+8=15 6+4+1=11 115', 115)
    >>> worked_sum(AdditionProblem(67, 48), drop_carry=True)
    ('67+48: 7+8=15 6+4=10 105', 105)
    >>> worked_sum(AdditionProblem(61, 48))
    ('61+48: 1+8=9 6+4=10 109', 109)
    >>> worked_sum(AdditionProblem(67, 45), overcount_units=True)
    ('67+45: 7+5=13 6+4+1=11 113', 113)
    """
    a, b = problem.a, problem.b
    if drop_carry and dropped_carry_sum(problem) is None:
        raise ValueError(f"{a}+{b}: no units carry to drop that keeps three digits")
    if overcount_units and overcounted_units_sum(problem) is None:
        raise ValueError(f"{a}+{b}: the units digits are not a confused fact")
    units = a % 10 + b % 10 + (1 if overcount_units else 0)
    carry = 1 if problem.units_carry and not drop_carry else 0
    tens = a // 10 + b // 10 + carry
    total = tens * 10 + units % 10
    tens_text = f"{a // 10}+{b // 10}" + ("+1" if carry else "")
    return f"{a}+{b}: {a % 10}+{b % 10}={units} {tens_text}={tens} {total}", total


def worked_difference(
    problem: AdditionProblem, candidate: int, drop_borrow: bool = False
) -> tuple[str, int]:
    """The judge's check of one candidate c: c - a column by column, and the difference.

    Units: ``c0-a0``, or ``1c0-a0`` when c0 < a0 (a borrow). Tens: the rest of c (its
    hundreds and tens, ``11`` for 115) minus the borrow ``-1`` minus a's tens digit.
    ``drop_borrow`` leaves out the ``-1``: the mistake the warm-start judge teacher makes.

    >>> worked_difference(AdditionProblem(67, 48), 115)
    ('115-67: 15-7=8 11-1-6=4 48', 48)
    >>> worked_difference(AdditionProblem(67, 48), 105)
    ('105-67: 15-7=8 10-1-6=3 38', 38)
    >>> worked_difference(AdditionProblem(67, 48), 105, drop_borrow=True)
    ('105-67: 15-7=8 10-6=4 48', 48)
    >>> worked_difference(AdditionProblem(61, 48), 109)
    ('109-61: 9-1=8 10-6=4 48', 48)
    """
    a = problem.a
    c0, rest = candidate % 10, candidate // 10
    a0, a1 = a % 10, a // 10
    borrow = c0 < a0
    units = c0 + 10 * borrow - a0
    units_text = f"{'1' if borrow else ''}{c0}-{a0}={units}"
    take = 1 if borrow and not drop_borrow else 0
    tens = rest - take - a1
    tens_text = f"{rest}-1-{a1}={tens}" if take else f"{rest}-{a1}={tens}"
    diff = tens * 10 + units
    return f"{candidate}-{a}: {units_text} {tens_text} {diff}", diff


def check_line(
    problem: AdditionProblem,
    candidate: int,
    drop_borrow: bool = False,
    units_only: bool = False,
    tens_only: bool = False,
) -> tuple[str, bool]:
    """The worked difference and its digit checks against b; whether they all match.

    ``units_only`` checks the units digit alone: a lenient judge teacher's habit, which
    then accepts any candidate whose difference ends like b (a dropped-carry sum among
    them). ``tens_only`` checks every digit but the units: the other lenient habit, which
    accepts a sum whose units fact was overcounted.

    >>> check_line(AdditionProblem(67, 48), 105)
    ('105-67: 15-7=8 10-1-6=3 38 43! 88=', False)
    >>> check_line(AdditionProblem(67, 48), 105, units_only=True)
    ('105-67: 15-7=8 10-1-6=3 38 88=', True)
    >>> check_line(AdditionProblem(67, 45), 113, tens_only=True)
    ('113-67: 13-7=6 11-1-6=4 46 44=', True)
    """
    if units_only and tens_only:
        raise ValueError("a check is units_only or tens_only, not both")
    text, diff = worked_difference(problem, candidate, drop_borrow)
    if units_only:
        own, found = str(problem.b)[-1], str(diff)[-1]
        return f"{text} {own}{found}{'=' if own == found else '!'}", own == found
    if tens_only:
        own, found = str(problem.b)[:-1], str(diff)[:-1]
        return f"{text} {digit_checks(int(own), found)}", own == found
    return f"{text} {digit_checks(problem.b, str(diff))}", diff == problem.b


def solution_completion(
    problem: AdditionProblem, drop_carry: bool = False, overcount_units: bool = False
) -> str:
    """A solution: the worked sum, then code returning the sum it reached.

    >>> print(solution_completion(AdditionProblem(67, 48)))
    <think>67+48: 7+8=15 6+4+1=11 115</think>
    ```python
    def f():
        return 115
    ```
    """
    thought, total = worked_sum(problem, drop_carry, overcount_units)
    return f"<think>{thought}</think>\n{solution_text(total)}"


def pairwise_judgement_text(
    problem: AdditionProblem,
    shown_values: Sequence[int],
    drop_borrow: bool = False,
    units_only: bool = False,
    tens_only: bool = False,
) -> str:
    """A judgement of two candidates returning ``shown_values``: each checked by its own
    worked difference and rated 9 (matches b) or 1, consistently with the judge's checks,
    as a real verifier acts on its own (possibly wrong) checking.

    >>> print(pairwise_judgement_text(AdditionProblem(67, 48), [115, 105]))
    <think>A 115-67: 15-7=8 11-1-6=4 48 44= 88=
    B 105-67: 15-7=8 10-1-6=3 38 43! 88=</think>
    <rating_A>9</rating_A>
    <rating_B>1</rating_B>
    >>> print(pairwise_judgement_text(AdditionProblem(67, 48), [115, 105], drop_borrow=True))
    <think>A 115-67: 15-7=8 11-6=5 58 45! 88=
    B 105-67: 15-7=8 10-6=4 48 44= 88=</think>
    <rating_A>1</rating_A>
    <rating_B>9</rating_B>
    """
    (line_a, ok_a), (line_b, ok_b) = (
        check_line(problem, v, drop_borrow, units_only, tens_only) for v in shown_values
    )
    think = f"A {line_a}\nB {line_b}"
    return (
        f"<think>{think}</think>\n<rating_A>{_rating(ok_a)}</rating_A>\n"
        f"<rating_B>{_rating(ok_b)}</rating_B>"
    )


def pointwise_judgement_text(
    problem: AdditionProblem,
    shown_value: int,
    drop_borrow: bool = False,
    units_only: bool = False,
    tens_only: bool = False,
) -> str:
    """A pointwise judgement (for the PointRL ablation): the same check, one rating.

    >>> print(pointwise_judgement_text(AdditionProblem(67, 48), 105))
    <think>105-67: 15-7=8 10-1-6=3 38 43! 88=</think>
    <rating>1</rating>
    """
    line, ok = check_line(problem, shown_value, drop_borrow, units_only, tens_only)
    return f"<think>{line}</think>\n<rating>{_rating(ok)}</rating>"


def prompt_kit() -> PromptKit:
    """The toy prompt builders as the trainer's prompt kit."""
    return PromptKit(
        generation=generation_messages,
        pairwise=pairwise_messages,
        pointwise=pointwise_messages,
        pointwise_ab=pointwise_ab_messages,
        for_judge=solution_for_judge,
    )
