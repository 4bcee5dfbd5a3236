"""EvalPlus's (MBPP+/HumanEval+, version 0.3.1) grading rules, re-implemented here.

Input restoration. MBPP+ stores every input as JSON, so tuples, sets and complex numbers
arrive as lists and strings; EvalPlus restores them per task (``mbpp_deserialize_inputs``
in evalplus/data/mbpp.py) before running anything. Without it the canonical solutions
themselves fail (Mbpp/106 concatenates a list with a tuple).

Output comparison (``unsafe_execute`` in evalplus/eval/__init__.py), per input:

1. ``out == exp`` decides first, with no type check: ``0`` passes for ``False`` and ``1.0``
   for ``1``.
2. A task's special oracle (matched, as EvalPlus does, by MBPP entry-point name, or
   HumanEval/32) replaces or widens that equality (``oracle_for``).
3. If still not equal: when the expected value is a float or a non-empty flat list/tuple
   of floats (``is_floats``) and the task's atol is 0, atol becomes 1e-6. With a non-zero
   atol the answer must have exactly the expected top-level type and, for a sequence, its
   length, and then be ``numpy.allclose`` to it (rtol 1e-7, NaN never equal). Otherwise
   it fails: ``[2.0]`` is not ``2.0`` and ``(1, 2)`` is not ``[1, 2]``.

Two deliberate differences, both stricter, neither ever a pass EvalPlus refuses: in
EvalPlus 0.3.1 a forced 1e-6 atol carries over to the later inputs of a task (so a wrong
large integer can pass after a float input), and HumanEval/32's root oracle never records
a pass (no answer, not even the canonical one, can pass). Here the atol is per input, and
the root oracle accepts a root within atol, as later EvalPlus releases do.

Time limits. EvalPlus times the canonical solution on every input (in its own process,
once per machine) and gives each input ``max(1.0 s, 4 x its time)`` of wall time around
``fn(*inp)`` alone (``untrusted_check``); ``reference_limit`` is that rule, used by the
executor's ``time_limit="reference"`` mode for every task format with a reference
solution. The executor times the reference on this machine when a task is first judged,
and times both it and the candidates on the candidate's own clock (wall less waiting for
a CPU), so that other workers and jobs sharing the CPU do not count (docs/time_limits.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

# Task numbers per restoration rule, as in EvalPlus's mbpp_deserialize_inputs.
_EACH_ARG_TO_TUPLE = {2, 116, 132, 143, 222, 261, 273, 394, 399, 421, 424, 429, 470, 560,
                      579, 596, 616, 630, 726, 740, 744, 809}  # fmt: skip
_EACH_ARGS_ITEMS_TO_TUPLE = {63, 64, 70, 94, 120, 237, 272, 299, 400, 409, 417, 438, 473,
                             614, 780}  # fmt: skip
_FIRST_ARGS_ITEMS_TO_TUPLE = {75, 413, 444, 753}
_SECOND_ARG_TO_TUPLE = {106, 750}
_FIRST_ARG_TO_TUPLE = {250, 405, 446, 617, 720, 763, 808}
_ITEMS_THEN_ARGS_TO_TUPLE = {259, 401, 445}
_ALL_LISTS_TO_TUPLES = {580, 615, 791}

# Tasks graded by an oracle other than equality (EvalPlus's "special oracles").
MBPP_NOT_NONE_ENTRY_POINTS = {"check_str", "text_match_three", "text_starta_endb"}
MBPP_SET_EQ_ENTRY_POINTS = {"similar_elements", "find_char_long", "common_in_nested_lists",
                            "extract_singly", "larg_nnum", "intersection_array",
                            "find_dissimilar", "Diff"}  # fmt: skip
FORCED_FLOAT_ATOL = 1e-6
RTOL = 1e-7
LIMIT_FACTOR = 4.0
LIMIT_FLOOR_S = 1.0


def _deep_tuple(value: Any) -> Any:
    return tuple(_deep_tuple(item) for item in value) if isinstance(value, list) else value


def restore_mbpp_inputs(task_id: str, inputs: list[Any]) -> list[Any]:
    """Give MBPP+ inputs back the Python types JSON lost (tuples, sets, complex)."""
    n = int(str(task_id).split("/")[-1])
    if n in _EACH_ARG_TO_TUPLE:
        return [[tuple(arg) for arg in inp] for inp in inputs]
    if n in _EACH_ARGS_ITEMS_TO_TUPLE:
        return [[[tuple(item) for item in arg] for arg in inp] for inp in inputs]
    if n in _FIRST_ARGS_ITEMS_TO_TUPLE:
        return [[[tuple(item) for item in inp[0]], inp[1]] for inp in inputs]
    if n in _SECOND_ARG_TO_TUPLE:
        return [[inp[0], tuple(inp[1])] for inp in inputs]
    if n == 115:  # EvalPlus turns empty members into {} (a dict); kept for parity
        return [
            [[set(item) if isinstance(item, list) and item else {} for item in inp[0]]]
            for inp in inputs
        ]
    if n == 124:
        return [[float(inp[0]), complex(inp[1])] for inp in inputs]
    if n in _FIRST_ARG_TO_TUPLE:
        return [[tuple(inp[0]), inp[1]] for inp in inputs]
    if n in _ITEMS_THEN_ARGS_TO_TUPLE:
        return [[tuple(tuple(item) for item in arg) for arg in inp] for inp in inputs]
    if n == 278:
        return [
            [tuple(tuple(item) if isinstance(item, list) else item for item in inp[0])]
            for inp in inputs
        ]
    if n == 307:
        return [[tuple(inp[0]), inp[1], inp[2]] for inp in inputs]
    if n == 722:
        return [[{key: tuple(value) for key, value in inp[0].items()}, *inp[1:]] for inp in inputs]
    if n == 252:
        return [[complex(inp[0])] for inp in inputs]
    if n in _ALL_LISTS_TO_TUPLES:
        return [_deep_tuple(inp) for inp in inputs]
    return inputs


def oracle_for(task_id: str, entry_point: str) -> str:
    """The grading rule EvalPlus applies to this task (see :class:`pairrl.rewards.tasks.IOTests`)."""
    if task_id.startswith("Mbpp/"):
        if entry_point == "are_equivalent":
            return "always_pass"  # Mbpp/164: EvalPlus accepts any returned value
        if entry_point == "sum_div":
            return "equal_or_zero"  # Mbpp/295
        if entry_point == "surface_Area":
            return "pyramid_area"  # Mbpp/581
        if entry_point == "digit_distance_nums":
            return "digit_distance"  # Mbpp/558
        if entry_point in MBPP_SET_EQ_ENTRY_POINTS:
            return "set_equal"
        if entry_point in MBPP_NOT_NONE_ENTRY_POINTS:
            return "not_none"
    if task_id.startswith("HumanEval/") and entry_point == "find_zero":
        return "poly_root"
    return "equal"


def is_floats(value: Any) -> bool:
    """A float, or a non-empty list/tuple whose items are all floats (top level only).

    >>> is_floats(2.0), is_floats([1.5, 2.0]), is_floats([1, 2.0]), is_floats([[1.0]])
    (True, True, False, False)
    """
    if isinstance(value, float):
        return True
    if isinstance(value, list | tuple) and value:
        return all(isinstance(item, float) for item in value)
    return False


def _equal(out: Any, exp: Any) -> bool:
    try:
        return bool(out == exp)
    except Exception:  # an answer whose comparison raises is not equal
        return False


def _allclose(out: Any, exp: Any, atol: float) -> bool:
    import numpy as np

    try:
        return bool(np.allclose(out, exp, rtol=RTOL, atol=atol, equal_nan=False))
    except Exception:  # strings, None, ragged nesting: not close
        return False


def compare(exact: bool, out: Any, exp: Any, atol: float) -> bool:
    """Steps 1-3 of the module docstring once ``exact`` (equality, or an oracle's verdict)
    is known: the float tolerance path, else ``exact``."""
    if atol == 0 and is_floats(exp):
        atol = FORCED_FLOAT_ATOL
    if exact or atol == 0:
        return exact
    if type(out) is not type(exp):
        return False
    if isinstance(exp, list | tuple) and len(out) != len(exp):
        return False
    return _allclose(out, exp, atol)


def outputs_match(out: Any, exp: Any, atol: float) -> bool:
    """EvalPlus's comparison of one answer with the expected value.

    >>> outputs_match(False, 0, 0), outputs_match(1.0000005, 1.0, 0), outputs_match([2.0], 2.0, 0)
    (True, True, False)
    """
    return compare(_equal(out, exp), out, exp, atol)


def _pyramid_area(base: float, height: float) -> float:
    return round(base**2 + 2 * base * math.sqrt((base / 2) ** 2 + height**2))


def _digit_distance(a: int, b: int) -> int:
    x, y = str(a), str(b)
    width = max(len(x), len(y))
    return sum(abs(int(p) - int(q)) for p, q in zip(x.zfill(width), y.zfill(width), strict=True))


def _poly(xs: Sequence[float], x: float) -> float:
    return sum(c * math.pow(x, i) for i, c in enumerate(xs))


def oracle_accepts(oracle: str, atol: float, args: Sequence[Any], out: Any, exp: Any) -> bool:
    """Grade one answer with the task's oracle (``oracle_for``) and EvalPlus's comparison."""
    try:
        if oracle == "always_pass":
            return True
        if oracle == "poly_root":
            return abs(_poly(list(args[0]), out)) <= atol
        if oracle == "not_none":
            flag = exp is not None  # EvalPlus keeps only whether the canonical answer was None
            exact = _equal(out, flag) if isinstance(out, bool) else flag == (out is not None)
            return compare(exact, out, flag, atol)
        if oracle == "set_equal":
            return compare(set(out) == set(exp), out, exp, atol)
        exact = _equal(out, exp)
        if oracle == "equal_or_zero":
            exact = exact or _equal(out, 0)
        elif oracle == "pyramid_area":
            exact = exact or abs(out - _pyramid_area(*args)) <= atol
        elif oracle == "digit_distance":
            exact = exact or _equal(out, _digit_distance(*args))
        return compare(exact, out, exp, atol)
    except Exception:  # an answer the oracle cannot even read fails
        return False


def reference_limit(
    reference_s: float, factor: float = LIMIT_FACTOR, floor_s: float = LIMIT_FLOOR_S
) -> float:
    """EvalPlus's time limit for one input (or, here, one task) from the reference's time.

    >>> reference_limit(0.01), reference_limit(0.6)
    (1.0, 2.4)
    """
    return max(floor_s, factor * reference_s)
