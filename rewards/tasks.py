"""Tasks and their normalised tests; all test material stays in the trusted parent.

Four test kinds cover every format the project reads:

* :class:`AssertTests` - test source run by the trusted driver: HumanEval's
  ``def check(candidate)`` (``check_call=True``) or MBPP's list of assert lines.
* :class:`IOTests` - argument tuples whose expected return values are computed once from
  the canonical solution and cached (MBPP+/HumanEval+ ``base_input``/``plus_input``).
* :class:`StdioTests` - (stdin, expected stdout) pairs for whole programs.
* :class:`AnswerTests` - a gold final answer (math): a completion's last ``\\boxed{}`` answer
  is compared with it by math-verify (``pairrl.rewards.answers``); nothing is executed.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AssertTests:
    """Test source executed by the trusted driver, calling the candidate through proxies.

    ``cases`` holds independent snippets (MBPP asserts, one per case) or a single module
    (HumanEval's ``check``); ``setup`` runs first in the driver (test imports, METADATA).
    With ``check_call`` the driver calls ``check(<entry point proxy>)`` after each case.
    """

    cases: tuple[str, ...]
    setup: str = ""
    check_call: bool = False


@dataclass(frozen=True)
class IOTests:
    """Argument lists for the entry point; expected values come from the canonical solution."""

    inputs: tuple[Any, ...]
    atol: float = 0.0
    # "equal" (EvalPlus's equality / float closeness), or one of EvalPlus's special
    # oracles (pairrl.rewards.evalplus_compat.oracle_for): "not_none", "set_equal",
    # "equal_or_zero", "pyramid_area", "digit_distance", "always_pass", "poly_root".
    oracle: str = "equal"


@dataclass(frozen=True)
class StdioTests:
    """Whole-program cases: stdin text and the expected stdout (compared line by line, trimmed)."""

    cases: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class AnswerTests:
    """The gold final answer of a math problem (LaTeX or plain: ``\\frac{1}{2}``, ``0.5``)."""

    gold: str


TestSpec = AssertTests | IOTests | StdioTests | AnswerTests


@dataclass(frozen=True)
class Task:
    """One problem: what the model sees (``prompt``) and how a candidate is judged (``tests``).

    ``helpers`` is trusted code from the prompt (imports and helper functions such as
    HumanEval/32's ``poly``) that the driver defines for the tests itself, so a candidate
    cannot redefine them. ``canonical_solution`` is a complete program when given.
    """

    task_id: str
    prompt: str
    entry_point: str
    tests: TestSpec
    canonical_solution: str | None = None
    helpers: str = ""
    source: str = field(default="memory", compare=False)

    @functools.cached_property
    def _digest(self) -> str:
        payload = json.dumps(
            [self.entry_point, self.helpers, _spec_to_json(self.tests)], default=repr
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    def tests_digest(self) -> str:
        """A hash of everything that decides a verdict (cache key together with the code)."""
        return self._digest


def _spec_to_json(spec: TestSpec) -> list[Any]:
    if isinstance(spec, AssertTests):
        return ["assert", list(spec.cases), spec.setup, spec.check_call]
    if isinstance(spec, IOTests):
        return ["io", repr(spec.inputs), spec.atol, spec.oracle]
    if isinstance(spec, AnswerTests):
        return ["answer", spec.gold]
    return ["stdio", [list(case) for case in spec.cases]]


def prompt_helpers(prompt: str, entry_point: str) -> str:
    """Top-level imports, assignments and definitions of ``prompt`` other than the entry point.

    The prompt may end with a signature and docstring but no body; a ``pass`` is appended
    for parsing when needed. Returns "" when the prompt does not parse at all.
    """
    for source in (prompt, prompt.rstrip() + "\n    pass\n"):
        try:
            module = ast.parse(source)
        except SyntaxError:
            continue
        keep = [
            node
            for node in module.body
            if not (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and node.name == entry_point
            )
            and not isinstance(node, ast.Expr)
        ]
        return "\n\n".join(ast.unparse(node) for node in keep)
    return ""
