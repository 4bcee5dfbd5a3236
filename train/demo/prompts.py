"""The demo's prompts and the exact completions its warm start teaches.

Compact prompts, not ``rollout.prompts``' paper wording: the tiny model reads every prompt
token on two CPU cores, and the paper's reviewer instructions (about 250 tokens) would
multiply the judge's cost by ten while carrying nothing a 0.3M-parameter model can use.
The *output* formats are the product's: a fenced python block for solutions and
``<rating_A>k</rating_A>`` / ``<rating_B>k</rating_B>`` (or ``<rating>k</rating>``) parsed
by ``rewards``, so the trainer's rollout, reward and metrics run unchanged.

Rating tokens. The tiny tokenizer splits digits, so "10" is the two tokens "1", "0" and
shares its first token with "1": an unsure judge that spreads mass over 1 and 10 emits
"1" first and the verdict is decided by the second token. The warm start therefore
teaches only single-token ratings: **9 for a correct solution, 1 for an incorrect one**.
They are read on the paper's scale unchanged, v = (r - 1) / 9, so 9 -> 0.889 and
1 -> 0.0; both lie inside the 0.2 reward threshold of their label (rewards 0.889 and 1.0).
Nothing stops RL from emitting 10 (it parses and is rewarded as the paper's 10).

Both roles think the same first thought. Every completion opens with a worked sum in
``<think>..</think>`` (the parser reads only what follows the last ``</think>``):
``<think>67+48=115</think>`` then the solver's code, or then the judge's checks. Restating
the operands next to the sum makes the sum a local computation (digits a few tokens
back), and because solver and judge share it token for token, one circuit serves both: a
better solver is a better judge, which is what the issue asks the toy to show.

The judge checks rather than guesses. After its sum it lines up each candidate's returned
number digit by digit with its own: own digit, candidate digit, then ``=`` or ``!``
(``A 11= 10! 55=``), so each mark compares the two tokens just before it and each rating
reads its line's marks.

Measured on this machine (plain SFT probes, seed 0, batch 32, lr 1e-3): with only the sum in
``<think>`` and the candidates ~40 tokens back, judge balanced accuracy stayed at ~0.5
through 1,150 steps; with marks written before the candidate digit (``1=1 1!0``) or without
the worked sum in the solver's completion, it stalled near 0.6-0.7 because the judge copied
a candidate (often right in the warm-start data) as its own sum. With this format the judge
reached 0.70-0.78 after 400-500 steps, tracking the solver.
"""

from __future__ import annotations

from collections.abc import Sequence

from rewards.tasks import Task
from train.demo.tasks import AdditionProblem, solution_text

__all__ = [
    "CORRECT_RATING",
    "INCORRECT_RATING",
    "digit_checks",
    "generation_messages",
    "pairwise_judgement_text",
    "pairwise_messages",
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


def worked_sum(problem: AdditionProblem) -> str:
    """The first thought of every completion: ``67+48=115``."""
    return f"{problem.a}+{problem.b}={problem.answer}"


def solution_completion(problem: AdditionProblem) -> str:
    """The solution the warm start teaches: the worked sum, then the code.

    >>> print(solution_completion(AdditionProblem(67, 48)))
    <think>67+48=115</think>
    ```python
    def f():
        return 115
    ```
    """
    return f"<think>{worked_sum(problem)}</think>\n{solution_text(problem.answer)}"


def pairwise_judgement_text(problem: AdditionProblem, shown_values: Sequence[int]) -> str:
    """The judgement the warm start teaches for two candidates returning ``shown_values``.

    >>> print(pairwise_judgement_text(AdditionProblem(67, 48), [115, 105]))
    <think>67+48=115
    A 11= 11= 55=
    B 11= 10! 55=</think>
    <rating_A>9</rating_A>
    <rating_B>1</rating_B>
    """
    va, vb = shown_values
    lines = [worked_sum(problem)] + [
        f"{name} {digit_checks(problem.answer, str(v))}" for name, v in (("A", va), ("B", vb))
    ]
    think = "\n".join(lines)
    ra, rb = (_rating(v == problem.answer) for v in (va, vb))
    return f"<think>{think}</think>\n<rating_A>{ra}</rating_A>\n<rating_B>{rb}</rating_B>"


def pointwise_judgement_text(problem: AdditionProblem, shown_value: int) -> str:
    """The pointwise judgement the warm start teaches (for the PointRL ablation).

    >>> print(pointwise_judgement_text(AdditionProblem(67, 48), 105))
    <think>67+48=115
    11= 10! 55=</think>
    <rating>1</rating>
    """
    think = f"{worked_sum(problem)}\n{digit_checks(problem.answer, str(shown_value))}"
    return f"<think>{think}</think>\n<rating>{_rating(shown_value == problem.answer)}</rating>"


def prompt_kit() -> object:
    """The demo's prompt builders as the trainer's ``train.rollout.PromptKit``."""
    from rollout.pairs import build_training_pairs
    from rollout.prompts import solution_for_judge
    from train.rollout import PromptKit

    return PromptKit(
        generation=generation_messages,
        pairwise=pairwise_messages,
        pointwise=pointwise_messages,
        for_judge=solution_for_judge,
        build_pairs=build_training_pairs,
    )
