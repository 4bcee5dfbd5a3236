"""The simple-function recipe's prompts and the judgement texts its warm start teaches.

Compact prompts, not the paper's reviewer wording (about 320 prompt tokens, and the
untrained SmolLM2-135M-Instruct produced no parseable judgement with it in 60 tries: see
docs/experiments.md): every prompt token is read on two CPU cores. The *output* formats
are the product's, parsed by ``pairrl.rewards``: one fenced python block for a solution,
``<rating_A>k</rating_A>`` / ``<rating_B>k</rating_B>`` for a pairwise judgement and
``<rating>k</rating>`` for a pointwise one, on the paper's 1-10 scale, and the one letter
A (yes) or B (no) that the benchmark's pointwise A/B read-out scores.

The warm start teaches **9 for a correct solution, 1 for an incorrect one**: single
tokens, read on the paper's scale as v = (r - 1) / 9 (0.889 and 0.0, both within the
reward threshold of their label); RL may move the judge anywhere on the scale.
"""

from __future__ import annotations

from pairrl.rewards.tasks import Task
from pairrl.rollout.prompt_kit import Messages, PromptKit
from pairrl.rollout.prompts import solution_for_judge

__all__ = [
    "CORRECT_RATING",
    "INCORRECT_RATING",
    "generation_messages",
    "pairwise_judgement_text",
    "pairwise_messages",
    "pointwise_ab_messages",
    "pointwise_ab_text",
    "pointwise_judgement_text",
    "pointwise_messages",
    "prompt_kit",
    "solution_text",
]

CORRECT_RATING = 9
INCORRECT_RATING = 1


_SOLVE = "Answer with only the function, in one ```python code block."
_RATE_PAIR = (
    "Rate each solution from 1 (wrong) to 10 (correct). "
    "Answer with <rating_A>k</rating_A> <rating_B>k</rating_B>."
)
_RATE_ONE = "Rate the solution from 1 (wrong) to 10 (correct). Answer with <rating>k</rating>."


def generation_messages(task: Task) -> Messages:
    """The solution prompt: the task's statement and the output format."""
    return [{"role": "user", "content": f"{task.prompt}\n{_SOLVE}"}]


def pairwise_messages(task: Task, solution_a: str, solution_b: str) -> Messages:
    """Compare two shown solutions; answer with the two rating tags."""
    content = f"{task.prompt}\n\nSolution A:\n{solution_a}\n\nSolution B:\n{solution_b}\n\n"
    return [{"role": "user", "content": content + _RATE_PAIR}]


def pointwise_messages(task: Task, solution: str) -> Messages:
    """Rate one shown solution; answer with one rating tag."""
    return [{"role": "user", "content": f"{task.prompt}\n\nSolution:\n{solution}\n\n{_RATE_ONE}"}]


def pointwise_ab_messages(task: Task, solution: str) -> Messages:
    """The yes/no question of the benchmark's pointwise A/B read-out."""
    question = "Is the solution correct? Answer A for yes or B for no."
    return [{"role": "user", "content": f"{task.prompt}\n\nSolution:\n{solution}\n\n{question}"}]


def _rating(correct: bool) -> int:
    return CORRECT_RATING if correct else INCORRECT_RATING


def solution_text(code: str) -> str:
    """A solution as the warm start teaches it: the function alone in one python block.

    >>> print(solution_text("def f(n):\\n    return n\\n"))
    ```python
    def f(n):
        return n
    ```
    """
    return f"```python\n{code.strip(chr(10)).rstrip()}\n```"


def pairwise_judgement_text(correct_a: bool, correct_b: bool) -> str:
    """The two rating tags for candidates whose execution labels are given.

    >>> pairwise_judgement_text(True, False)
    '<rating_A>9</rating_A> <rating_B>1</rating_B>'
    """
    return f"<rating_A>{_rating(correct_a)}</rating_A> <rating_B>{_rating(correct_b)}</rating_B>"


def pointwise_judgement_text(correct: bool) -> str:
    """The one rating tag for a candidate whose execution label is given.

    >>> pointwise_judgement_text(False)
    '<rating>1</rating>'
    """
    return f"<rating>{_rating(correct)}</rating>"


def pointwise_ab_text(correct: bool) -> str:
    """The A/B read-out's answer for a candidate whose execution label is given: the letter
    alone, the token the read-out scores.

    >>> pointwise_ab_text(True), pointwise_ab_text(False)
    ('A', 'B')
    """
    return "A" if correct else "B"


def prompt_kit() -> PromptKit:
    """The compact prompts with the product's output formats."""
    return PromptKit(
        generation=generation_messages,
        pairwise=pairwise_messages,
        pointwise=pointwise_messages,
        pointwise_ab=pointwise_ab_messages,
        for_judge=solution_for_judge,
    )
