"""What EvalPlus (MBPP+/HumanEval+) does beyond "call and compare", re-implemented here.

MBPP+ stores every input as JSON, so tuples, sets and complex numbers arrive as lists
and strings; EvalPlus restores them per task (``mbpp_deserialize_inputs`` in
evalplus/data/mbpp.py) before running anything, and grades a few tasks with special
oracles (evalplus/evaluate.py). The task-id lists below are EvalPlus's; the code is ours.
Without the restoration the canonical solutions themselves fail (Mbpp/106 concatenates
a list with a tuple), and without the oracles correct answers are marked wrong.
"""

from __future__ import annotations

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
        if entry_point in MBPP_NOT_NONE_ENTRY_POINTS:
            return "not_none"
    if task_id.startswith("HumanEval/") and entry_point == "find_zero":
        return "poly_root"
    return "equal"
