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

The judge first writes its own sum inside ``<think>..</think>`` (the parser reads only what
follows the last ``</think>``), then rates each candidate against it: checking is a copy
and compare once the judge has done the problem itself, so a better solver is a better
judge, which is what the issue asks the toy to show.
"""

from __future__ import annotations

from collections.abc import Sequence

from rewards.tasks import Task

__all__ = [
    "CORRECT_RATING",
    "INCORRECT_RATING",
    "generation_messages",
    "pairwise_judgement_text",
    "pairwise_messages",
    "pointwise_judgement_text",
    "pointwise_messages",
    "prompt_kit",
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


def pairwise_judgement_text(own_answer: int, correct: Sequence[bool]) -> str:
    """The judgement the warm start teaches: own result, then one rating per candidate."""
    ca, cb = correct
    return (
        f"<think>{own_answer}</think>\n"
        f"<rating_A>{_rating(ca)}</rating_A>\n<rating_B>{_rating(cb)}</rating_B>"
    )


def pointwise_judgement_text(own_answer: int, correct: bool) -> str:
    """The pointwise judgement the warm start teaches (for the PointRL ablation)."""
    return f"<think>{own_answer}</think>\n<rating>{_rating(correct)}</rating>"


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
