"""EvalPlus 0.3.1's grading rules, case by case. Each verdict below is what EvalPlus itself
returned for that (expected, answer, atol) through its own ``untrusted_check``; the ids
follow the case list they were produced from. The two documented deviations (both
stricter) are marked."""

from __future__ import annotations

import pytest

from pairrl.rewards.evalplus_compat import (
    is_floats,
    oracle_accepts,
    oracle_for,
    outputs_match,
    reference_limit,
)

NAN, INF = float("nan"), float("inf")

# (id, expected, answer, task atol, EvalPlus's verdict)
COMPARISONS = [
    ("T01 list for a float", 2.0, [2.0], 0, False),
    ("T02 float for a list", [2.0], 2.0, 0, False),
    ("T03 tuple for a list", [1, 2], (1, 2), 0, False),
    ("T04 list for a tuple", (1, 2), [1, 2], 0, False),
    ("T05 tuple for a float list, atol 1e-4", [1.0, 2.0], (1.0, 2.0), 1e-4, False),
    ("T06 False for 0", 0, False, 0, True),
    ("T07 0 for False", False, 0, 0, True),
    ("T08 1 for True", True, 1, 0, True),
    ("T09 True for 1", 1, True, 0, True),
    ("T10 1.0 for 1", 1, 1.0, 0, True),
    ("T11 1 for 1.0", 1.0, 1, 0, True),
    ("T12 int 2 for 2.0000001 (type)", 2.0000001, 2, 0, False),
    ("T13 within the forced 1e-6", 1.0, 1.0000005, 0, True),
    ("T14 outside the forced 1e-6", 1.0, 1.000002, 0, False),
    ("T15 rtol 1e-7 adds 1e-4 at 1000", 1000.0, 1000.00005, 0, True),
    ("T16 within task atol 1e-4", 1.0, 1.00005, 1e-4, True),
    ("T17 outside task atol 1e-4", 1.0, 1.0002, 1e-4, False),
    ("T18 flat float list", [1.0, 2.0], [1.0000001, 2.0], 0, True),
    ("T19 nested float list, atol 0", [[1.0, 2.0]], [[1.0000001, 2.0]], 0, False),
    ("T20 nested float list, atol 1e-4", [[1.0, 2.0]], [[1.0000001, 2.0]], 1e-4, True),
    ("T21 mixed list, atol 0", [1, 2.0], [1, 2.0000001], 0, False),
    ("T22 float list", [1.5, 2.0], [1.5, 2.0000001], 0, True),
    ("T23 one element longer", [1.5, 2.0], [1.5, 2.0000001, 3.0], 0, False),
    ("T24 NaN", NAN, float("nan"), 0, False),
    ("T25 [NaN]", [NAN], [float("nan")], 0, False),
    ("T26 inf", INF, float("inf"), 0, True),
    ("T30 float for an int, atol 1e-4", 10, 10.00001, 1e-4, False),
    ("T31 string", "a", "a ", 0, False),
    ("T32 None", None, None, 0, True),
]


@pytest.mark.parametrize(("case", "expected", "answer", "atol", "verdict"), COMPARISONS)
def test_comparison_matches_evalplus(
    case: str, expected: object, answer: object, atol: float, verdict: bool
) -> None:
    assert outputs_match(answer, expected, atol) is verdict, case


# (id, entry point, args, expected, answer, task atol, verdict)
ORACLES = [
    ("T35 set-eq ignores order and repeats", "similar_elements", (), (4, 5), [5, 4, 4], 0, True),
    ("T36 set-eq, a missing element", "similar_elements", (), (4, 5), (4,), 0, False),
    ("T37 not a set-eq task", "other_fn", (), (4, 5), [5, 4, 4], 0, False),
    ("T39 set-eq, not iterable", "larg_nnum", (), (4, 5), 4, 0, False),
    ("T40 are_equivalent accepts any value", "are_equivalent", (), True, "banana", 0, True),
    ("T42 sum_div accepts 0", "sum_div", (), 7, 0, 0, True),
    ("T43 sum_div, a wrong value", "sum_div", (), 7, 6, 0, False),
    ("T44 surface_Area, the canonical value", "surface_Area", (3, 4), 33, 33, 0, True),
    ("T44b surface_Area, the true area", "surface_Area", (3, 4), 33, 35, 0, True),
    ("T44c surface_Area, unrounded", "surface_Area", (3, 4), 33, 35.2, 0, False),
    ("T45 not-None: a match for True", "text_match_three", (), "m", "Found a match!", 0, True),
    ("T46 not-None: None for not-None", "text_match_three", (), "m", None, 0, False),
    ("T47 not-None: False for None", "text_match_three", (), None, False, 0, True),
    ("T48 not-None: False for not-None", "text_match_three", (), "m", False, 0, False),
    ("digit_distance_nums, zero-padded", "digit_distance_nums", (123, 45), 7, 7, 0, True),
]


@pytest.mark.parametrize(
    ("case", "entry", "args", "expected", "answer", "atol", "verdict"), ORACLES
)
def test_mbpp_special_oracles_match_evalplus(
    case: str, entry: str, args: tuple, expected: object, answer: object, atol: float, verdict: bool
) -> None:
    # T45-T48: EvalPlus stores only whether the canonical answer was None; "m" stands for
    # any non-None canonical answer.
    oracle = oracle_for("Mbpp/1", entry)
    assert oracle_accepts(oracle, atol, args, answer, expected) is verdict, case


def test_humaneval_32_root_oracle_accepts_a_root() -> None:
    """Deviation (documented): EvalPlus 0.3.1 never records this oracle's pass, so no
    answer can pass HumanEval/32 there, not even the canonical; later releases, and this
    port, accept a root within atol."""
    oracle = oracle_for("HumanEval/32", "find_zero")
    xs = [-6, 11, -6, 1]  # (x-1)(x-2)(x-3)
    assert oracle_accepts(oracle, 1e-4, (xs,), 3.00001, 1.0)  # T49: |p| = 2e-5
    assert not oracle_accepts(oracle, 1e-4, (xs,), 3.001, 1.0)  # T50: |p| ~ 2e-3
    assert not oracle_accepts(oracle, 1e-4, (xs,), "3", 1.0)


def test_forced_atol_does_not_carry_over() -> None:
    """Deviation (documented): in EvalPlus 0.3.1 an input with a float answer forces atol to
    1e-6 for the later inputs of the task too, so 10**9 + 1 then passes for 10**9 (T33);
    here every input is compared on its own (T34's verdict, whatever the order)."""
    assert outputs_match(1.5, 1.5, 0)
    assert not outputs_match(10**9 + 1, 10**9, 0)


def test_is_floats_and_time_limit_rule() -> None:
    assert is_floats(2.0) and is_floats((1.5, 2.0)) and not is_floats([]) and not is_floats(1)
    # max(1 s, 4 x the reference's time)
    assert reference_limit(0.0) == 1.0 and reference_limit(0.5) == 2.0
    assert reference_limit(0.5, factor=2.0, floor_s=0.1) == 1.0
