"""The toy recipe's prompts and the exact completions its warm start teaches.

Compact prompts, not ``pairrl.rollout.prompts``' paper wording: the tiny model reads every prompt
token on two CPU cores, and the paper's reviewer instructions (about 250 tokens) would
multiply the judge's cost by ten while carrying nothing a 0.3M-parameter model can use.
The *output* formats are the product's: a fenced python block for solutions and
``<rating_A>k</rating_A>`` / ``<rating_B>k</rating_B>`` (or ``<rating>k</rating>``) parsed
by ``pairrl.rewards``, so the trainer's rollout, reward and metrics run unchanged.

Rating tokens. The tiny tokenizer splits digits, so "10" is the two tokens "1", "0" and
shares its first token with "1": an unsure judge that spreads mass over 1 and 10 emits
"1" first and the verdict is decided by the second token. The warm start therefore
teaches only single-token ratings: **9 for a correct solution, 1 for an incorrect one**.
They are read on the paper's scale unchanged, v = (r - 1) / 9, so 9 -> 0.889 and
1 -> 0.0; both lie inside the 0.2 reward threshold of their label (rewards 0.889 and 1.0).
Nothing stops RL from emitting 10 (it parses and is rewarded as the paper's 10).

Both roles think the same first thought. Every completion opens with a worked sum in
``<think>..</think>`` (the parser reads only what follows the last ``</think>``), done
column by column: ``<think>67+48: 7+8=15 6+4+1=11 115</think>`` then the solver's code, or
then the judge's checks. Restating the operands makes each column a local computation
(digits a few tokens back), the carry is an explicit ``+1``, and because solver and judge
share the thought token for token, one circuit serves both: a better solver is a better
judge.

The judge checks rather than guesses. After its sum it lines up each candidate's returned
number digit by digit with its own: own digit, candidate digit, then ``=`` or ``!``
(``A 11= 10! 55=``), so each mark compares the two tokens just before it and each rating
reads its line's marks. It rates against its *own* sum, so a judge that drops a carry
rates consistently with its mistake.

Why this format and not simpler ones (what was tried, with numbers): docs/experiments.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from pairrl.recipes.toy_addition.tasks import AdditionProblem, dropped_carry_sum, solution_text
from pairrl.rewards.tasks import Task
from pairrl.rollout.pairs import build_training_pairs
from pairrl.rollout.prompt_kit import PromptKit
from pairrl.rollout.prompts import solution_for_judge

__all__ = [
    "CORRECT_RATING",
    "INCORRECT_RATING",
    "digit_checks",
    "generation_messages",
    "pairwise_judgement_text",
    "pairwise_messages",
    "pointwise_ab_messages",
    "pointwise_judgement_text",
    "pointwise_messages",
    "prompt_kit",
    "solution_completion",
    "worked_sum",
]

CORRECT_RATING = 9
INCORRECT_RATING = 1

Messages = list[dict[str, str]]


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


def digit_checks(own_sum: int, candidate: str) -> str:
    """Own digit, candidate digit and ``=`` or ``!`` per position; a missing digit is ``_``.

    >>> digit_checks(115, "105")
    '11= 10! 55='
    >>> digit_checks(115, "15")
    '11= 15! 5_!'
    """
    own = str(own_sum)
    width = max(len(own), len(candidate))
    pairs = zip(own.ljust(width, "_"), candidate.ljust(width, "_"), strict=True)
    return " ".join(f"{x}{y}{'=' if x == y else '!'}" for x, y in pairs)


def worked_sum(problem: AdditionProblem, drop_carry: bool = False) -> tuple[str, int]:
    """The first thought of every completion, column by column, and the sum it reaches.

    Operands restated, units column, tens column (with ``+1`` when the units carry), sum.
    ``drop_carry`` leaves out the ``+1``: the mistake the warm-start teacher makes.

    >>> worked_sum(AdditionProblem(67, 48))
    ('67+48: 7+8=15 6+4+1=11 115', 115)
    >>> worked_sum(AdditionProblem(67, 48), drop_carry=True)
    ('67+48: 7+8=15 6+4=10 105', 105)
    >>> worked_sum(AdditionProblem(61, 48))
    ('61+48: 1+8=9 6+4=10 109', 109)
    """
    a, b = problem.a, problem.b
    if drop_carry and dropped_carry_sum(problem) is None:
        raise ValueError(f"{a}+{b}: no units carry to drop that keeps three digits")
    units = a % 10 + b % 10
    carry = 1 if problem.units_carry and not drop_carry else 0
    tens = a // 10 + b // 10 + carry
    total = tens * 10 + units % 10
    tens_text = f"{a // 10}+{b // 10}" + ("+1" if carry else "")
    return f"{a}+{b}: {a % 10}+{b % 10}={units} {tens_text}={tens} {total}", total


def solution_completion(problem: AdditionProblem, drop_carry: bool = False) -> str:
    """A solution: the worked sum, then code returning the sum it reached.

    >>> print(solution_completion(AdditionProblem(67, 48)))
    <think>67+48: 7+8=15 6+4+1=11 115</think>
    ```python
    def f():
        return 115
    ```
    """
    thought, total = worked_sum(problem, drop_carry)
    return f"<think>{thought}</think>\n{solution_text(total)}"


def pairwise_judgement_text(
    problem: AdditionProblem, shown_values: Sequence[int], drop_carry: bool = False
) -> str:
    """A judgement of two candidates returning ``shown_values``.

    The judge rates against its own worked sum: one that drops the carry rates
    consistently with its wrong sum, as a real self-verifier shares its blind spots.

    >>> print(pairwise_judgement_text(AdditionProblem(67, 48), [115, 105]))
    <think>67+48: 7+8=15 6+4+1=11 115
    A 11= 11= 55=
    B 11= 10! 55=</think>
    <rating_A>9</rating_A>
    <rating_B>1</rating_B>
    >>> print(pairwise_judgement_text(AdditionProblem(67, 48), [115, 105], drop_carry=True))
    <think>67+48: 7+8=15 6+4=10 105
    A 11= 01! 55=
    B 11= 00= 55=</think>
    <rating_A>1</rating_A>
    <rating_B>9</rating_B>
    """
    thought, own = worked_sum(problem, drop_carry)
    va, vb = shown_values
    lines = [thought] + [
        f"{name} {digit_checks(own, str(v))}" for name, v in (("A", va), ("B", vb))
    ]
    think = "\n".join(lines)
    ra, rb = (_rating(v == own) for v in (va, vb))
    return f"<think>{think}</think>\n<rating_A>{ra}</rating_A>\n<rating_B>{rb}</rating_B>"


def pointwise_judgement_text(
    problem: AdditionProblem, shown_value: int, drop_carry: bool = False
) -> str:
    """A pointwise judgement (for the PointRL ablation), rated against its own sum.

    >>> print(pointwise_judgement_text(AdditionProblem(67, 48), 105))
    <think>67+48: 7+8=15 6+4+1=11 115
    11= 10! 55=</think>
    <rating>1</rating>
    """
    thought, own = worked_sum(problem, drop_carry)
    think = f"{thought}\n{digit_checks(own, str(shown_value))}"
    return f"<think>{think}</think>\n<rating>{_rating(shown_value == own)}</rating>"


def prompt_kit() -> PromptKit:
    """The toy prompt builders as the trainer's prompt kit (pairs: the paper's rules)."""
    return PromptKit(
        generation=generation_messages,
        pairwise=pairwise_messages,
        pointwise=pointwise_messages,
        pointwise_ab=pointwise_ab_messages,
        for_judge=solution_for_judge,
        build_pairs=build_training_pairs,
    )
