"""A small, permissive code task set for CPU runs of the trainer with the tiny model.

Each task asks for ``f(x)`` with a property that many one-line programs have (returns an
int, returns something larger than x, ...), and its hidden tests check only that
property, so a short sampled program passes or fails for a real reason. A random tiny
model writes no valid code at all; ``warm_start_examples`` gives a short supervised warm
start on code-shaped answers (some right for the task, some wrong, some broken) and on
the judge's rating format, so that after it sampled solutions sometimes pass and
sometimes fail. The warm start teaches the format, not the task: its answers are drawn
from a pool shared by every task.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from pairrl.rewards.tasks import AssertTests, Task

__all__ = ["ANSWER_POOL", "tiny_code_tasks", "warm_start_examples"]

# (task id, what f must do, the hidden asserts)
_SPECS: list[tuple[str, str, tuple[str, ...]]] = [
    (
        "tiny/int",
        "returns an integer",
        ("assert isinstance(f(3), int)", "assert isinstance(f(8), int)"),
    ),
    ("tiny/larger", "returns a number larger than x", ("assert f(3) > 3", "assert f(10) > 10")),
    ("tiny/smaller", "returns a number smaller than x", ("assert f(5) < 5", "assert f(9) < 9")),
    ("tiny/even", "returns an even integer", ("assert f(3) % 2 == 0", "assert f(4) % 2 == 0")),
    ("tiny/list", "returns a list", ("assert isinstance(f(3), list)",)),
    ("tiny/string", "returns a string", ("assert isinstance(f(3), str)",)),
    ("tiny/bool", "returns a boolean", ("assert isinstance(f(2), bool)",)),
    ("tiny/same", "returns x unchanged", ("assert f(7) == 7", "assert f(2) == 2")),
]

# One-line bodies for `def f(x):`; the last three are broken on purpose.
ANSWER_POOL: tuple[str, ...] = (
    "return x + 1",
    "return x * 2",
    "return x - 1",
    "return x // 2",
    "return x",
    "return 0",
    "return [x]",
    "return str(x)",
    "return x > 0",
    "return True",
    "return x +",
    "retur x",
    "return y",
)


def _prompt(spec: str) -> str:
    return f"Write a python function f(x) that {spec}."


def tiny_code_tasks() -> list[Task]:
    """The task set (8 tasks); prompts are unique so the rollout can map them back."""
    return [
        Task(task_id=tid, prompt=_prompt(spec), entry_point="f", tests=AssertTests(cases=cases))
        for tid, spec, cases in _SPECS
    ]


def answer_text(body: str) -> str:
    """A solution completion in the generation format: one fenced python block."""
    return f"```python\ndef f(x):\n    {body}\n```"


def warm_start_examples(
    tasks: list[Task],
    generation_messages: Callable[[Task], list[dict[str, str]]],
    pairwise_messages: Callable[[Task, str, str], list[dict[str, str]]],
    num_examples: int,
    seed: int = 0,
    judge_every: int = 4,
) -> list[list[dict[str, str]]]:
    """Chat conversations (prompt + assistant answer) for the warm start.

    Every ``judge_every``-th example (0: none) is a pairwise judgement of two pool answers
    with ratings drawn at random (format only, no discrimination); the rest are solutions
    (a random pool answer).
    """
    rng = random.Random(seed)
    conversations = []
    for k in range(num_examples):
        task = rng.choice(tasks)
        if judge_every == 0 or k % judge_every:
            answer = answer_text(rng.choice(ANSWER_POOL))
            conversations.append(
                [*generation_messages(task), {"role": "assistant", "content": answer}]
            )
        else:
            a, b = rng.sample(ANSWER_POOL, 2)
            ratings = f"<rating_A>{rng.randint(1, 10)}</rating_A> <rating_B>{rng.randint(1, 10)}</rating_B>"
            messages = pairwise_messages(task, answer_text(a), answer_text(b))
            conversations.append([*messages, {"role": "assistant", "content": ratings}])
    return conversations
