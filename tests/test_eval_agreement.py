"""Execution agreement: input extraction and clustering."""

from __future__ import annotations

from pairrl.eval.agreement import (
    CallInput,
    choose_by_agreement,
    encode_output,
    extract_call_inputs,
)


def test_extract_inputs_from_docstring_examples() -> None:
    prompt = '''def f(xs, t):
    """Examples:
    >>> f([1.0, 2.0, (3, 4)], 0.5)
    False
    f("a(b)", t=2) ==> True
    >>> f(x, 1)
    >>> f([1.0, 2.0, (3, 4)], 0.5)
    """
'''
    found = extract_call_inputs(prompt, ["f"])
    # The def line itself is a call shape with non-literal args; the variable call is
    # skipped; the duplicate is dropped; keyword args are kept.
    assert found == [CallInput(([1.0, 2.0, (3, 4)], 0.5)), CallInput(("a(b)",), (("t", 2),))]


def test_extract_inputs_from_asserts_by_name_and_candidate() -> None:
    tests = "assert remove_Occ('hello','l') == 'heo'\nassert candidate(3) == 4\nassert g(1)"
    assert extract_call_inputs(tests, ["remove_Occ", "candidate"]) == [
        CallInput(("hello", "l")),
        CallInput((3,)),
    ]
    assert len(extract_call_inputs("f(1) f(2) f(3)", ["f"], limit=2)) == 2


def test_choose_largest_cluster_ties_to_earliest() -> None:
    a, b = "[1, [2, 3]]", "[1, [2, 4]]"  # two candidates' encoded outputs
    # clusters: a = {1, 3}, b = {0, 2}; equal size, b holds the earliest candidate.
    choice = choose_by_agreement([b, a, b, a, None])
    assert (choice.chosen, choice.cluster_size, choice.num_clusters) == (0, 2, 2)
    choice = choose_by_agreement([None, a, b, a])
    assert (choice.chosen, choice.cluster_size) == (1, 2)
    fallback = choose_by_agreement([None, None])
    assert fallback.chosen == 0 and fallback.fallback


def test_encoding_tolerates_float_noise_and_tuple_list() -> None:
    assert encode_output(0.1 + 0.2) == encode_output(0.3)
    assert encode_output((1, 2)) == encode_output([1, 2])
    assert encode_output(1) != encode_output("1")


def test_encode_output_huge_int_and_unencodable() -> None:
    assert encode_output(7**5000) == encode_output(7**5000) != encode_output(7**5000 + 1)
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    assert encode_output(deep).startswith("<unencodable:list")
