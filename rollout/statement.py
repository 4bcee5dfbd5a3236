"""The problem statement a generator or judge sees for a task (the paper kit's).

HumanEval-style prompts (a signature and docstring) are shown as they are. MBPP prompts
are one sentence that does not name the function, so, as MBPP+ does, the statement adds
the required function name and the first test assert as an example (the canonical MBPP
protocol shows all three; one keeps the other two hidden).
"""

from __future__ import annotations

from typing import Any

__all__ = ["problem_text"]


def problem_text(task: Any) -> str:
    """Statement for `task` (see the module docstring)."""
    prompt = str(task.prompt).strip()
    entry = str(getattr(task, "entry_point", "") or "")
    if not entry or f"def {entry}" in prompt:
        return prompt
    text = f"{prompt}\n\nWrite a Python function named `{entry}`."
    cases = getattr(getattr(task, "tests", None), "cases", None)
    mbpp_asserts = (
        isinstance(cases, (list, tuple))
        and len(cases) > 1
        and isinstance(cases[0], str)
        and entry in cases[0]
        and not getattr(task.tests, "check_call", False)
    )
    if mbpp_asserts:
        text += f" Your code should pass this test:\n{cases[0].strip()}"
    return text
