"""The simple-function templates: one short Python function each, most with a constant.

A template is a family of tasks: ``multiply_by_{k}`` with k = 2, 3, 4, ... gives one task
per constant. Every test is computed from the template's reference implementation on fixed
inputs, so a task's hidden tests are right by construction. The held-out split is by
template (``pairrl.recipes.simple_functions.tasks``): a held-out task is never a trained
task with another constant.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["TEMPLATES", "Template"]


@dataclass(frozen=True)
class Template:
    """A task family: ``name`` and ``description`` are formatted with ``{k}`` (one task per
    value of ``constants``; no constants: one task); ``reference(k)`` is the function the
    tests are computed from, called on every tuple of ``inputs``."""

    key: str
    name: str
    params: str
    description: str
    reference: Callable[[Any], Callable[..., Any]]
    inputs: tuple[tuple[Any, ...], ...]
    constants: tuple[Any, ...] = ()


def _t(key: str, params: str, description: str, reference: Callable[[Any], Callable[..., Any]],
       inputs: tuple[tuple[Any, ...], ...], constants: tuple[Any, ...] = (),
       name: str | None = None) -> Template:  # fmt: skip
    return Template(key, name or key, params, description, reference, inputs, constants)


_INTS = ((0,), (3,), (-4,), (12,))
_NUMS = (([1, 2, 3],), ([],), ([-5, 10, 0, 7],), ([4, 4, 9],))
_STRS = (("hello",), ("",), ("banana",), ("a b c",))
_ITEMS = (([7, 8, 9, 10],), (["a", "b", "c"],), ([1],))
_WORDS = (("the quick brown fox",), ("",), ("a bb ccc dddd",))

TEMPLATES: tuple[Template, ...] = (
    # with a constant
    _t("multiply_by", "n", "returns n multiplied by {k}", lambda k: lambda n: n * k, _INTS,
       (2, 3, 4, 5, 6, 10), "multiply_by_{k}"),
    _t("add_constant", "n", "returns n plus {k}", lambda k: lambda n: n + k, _INTS,
       (1, 2, 3, 5, 10, 100), "add_{k}"),
    _t("subtract_constant", "n", "returns n minus {k}", lambda k: lambda n: n - k, _INTS,
       (1, 3, 7, 10), "subtract_{k}"),
    _t("power", "n", "returns n raised to the power {k}", lambda k: lambda n: n**k, _INTS,
       (2, 3, 4, 5), "power_{k}"),
    _t("remainder", "n", "returns the remainder of the non-negative integer n divided by {k}",
       lambda k: lambda n: n % k, ((0,), (7,), (12,), (23,)), (2, 3, 4, 5, 7, 10),
       "remainder_{k}"),
    _t("floor_divide", "n", "returns n divided by {k}, rounded down to a whole number",
       lambda k: lambda n: n // k, ((0,), (7,), (12,), (25,)), (2, 3, 4, 10), "divide_by_{k}"),
    _t("divisible", "n", "returns True if the integer n is divisible by {k}, otherwise False",
       lambda k: lambda n: n % k == 0, ((0,), (9,), (10,), (14,), (15,)), (2, 3, 4, 5, 7),
       "divisible_by_{k}"),
    _t("greater_than", "n", "returns True if the number n is greater than {k}, otherwise False",
       lambda k: lambda n: n > k, ((-1,), (0,), (10,), (51,)), (0, 5, 10, 50), "greater_than_{k}"),
    _t("add_to_all", "nums", "returns a new list with {k} added to every number of the list nums",
       lambda k: lambda nums: [x + k for x in nums], _NUMS, (1, 2, 5, 10), "add_{k}_to_all"),
    _t("multiply_all", "nums",
       "returns a new list with every number of the list nums multiplied by {k}",
       lambda k: lambda nums: [x * k for x in nums], _NUMS, (2, 3, 4, 10), "multiply_all_by_{k}"),
    _t("count_above", "nums", "returns how many numbers in the list nums are greater than {k}",
       lambda k: lambda nums: sum(1 for x in nums if x > k), _NUMS, (0, 3, 5, 8),
       "count_above_{k}"),
    _t("sum_above", "nums",
       "returns the sum of the numbers in the list nums that are greater than {k}",
       lambda k: lambda nums: sum(x for x in nums if x > k), _NUMS, (0, 3, 5, 8), "sum_above_{k}"),
    _t("keep_below", "nums",
       "returns a list of the numbers in the list nums that are smaller than {k}, in order",
       lambda k: lambda nums: [x for x in nums if x < k], _NUMS, (0, 3, 5, 8), "keep_below_{k}"),
    _t("keep_multiples", "nums",
       "returns a list of the numbers in the list nums that are divisible by {k}, in order",
       lambda k: lambda nums: [x for x in nums if x % k == 0], _NUMS, (2, 3, 5),
       "multiples_of_{k}"),
    _t("first_chars", "s", "returns the first {k} characters of the string s",
       lambda k: lambda s: s[:k], _STRS, (1, 2, 3, 5), "first_{k}_chars"),
    _t("last_chars", "s", "returns the last {k} characters of the string s (all of s if shorter)",
       lambda k: lambda s: s[-k:], _STRS, (1, 2, 3), "last_{k}_chars"),
    _t("repeat", "s", "returns the string s repeated {k} times", lambda k: lambda s: s * k,
       _STRS, (2, 3, 4, 5), "repeat_{k}_times"),
    _t("first_items", "items", "returns a list of the first {k} elements of the list items",
       lambda k: lambda items: items[:k], _ITEMS, (1, 2, 3, 4), "first_{k}_items"),
    _t("drop_items", "items", "returns the list items without its first {k} elements",
       lambda k: lambda items: items[k:], _ITEMS, (1, 2, 3), "drop_{k}_items"),
    _t("count_letter", "s", "returns how many times the letter '{k}' occurs in the string s",
       lambda k: lambda s: s.count(k), _STRS, ("a", "e", "l", "n", "o", "s"), "count_{k}"),
    _t("starts_with", "s",
       "returns True if the string s starts with the letter '{k}', otherwise False",
       lambda k: lambda s: s.startswith(k), (*_STRS, ("ax",), ("za",)), ("a", "b", "h"),
       "starts_with_{k}"),
    _t("ends_with", "s", "returns True if the string s ends with the letter '{k}', otherwise False",
       lambda k: lambda s: s.endswith(k), (*_STRS, ("say",)), ("a", "o", "y"), "ends_with_{k}"),
    _t("remove_letter", "s", "returns the string s with every letter '{k}' removed",
       lambda k: lambda s: s.replace(k, ""), _STRS, ("a", "e", "l", "o"), "remove_{k}"),
    _t("append_letter", "s", "returns the string s followed by the letter '{k}'",
       lambda k: lambda s: s + k, _STRS, ("x", "y", "z"), "append_{k}"),
    _t("line_of", "n", "returns a string made of n copies of the letter '{k}'",
       lambda k: lambda n: k * n, ((0,), (1,), (4,)), ("a", "b", "x", "z"), "line_of_{k}"),
    _t("multiples_list", "n", "returns a list of the first n positive multiples of {k}",
       lambda k: lambda n: [k * i for i in range(1, n + 1)], ((0,), (1,), (4,)), (2, 3, 5),
       "first_multiples_of_{k}"),
    _t("max_with", "n", "returns the larger of the number n and {k}", lambda k: lambda n: max(n, k),
       _INTS, (0, 10), "max_with_{k}"),
    _t("min_with", "n", "returns the smaller of the number n and {k}",
       lambda k: lambda n: min(n, k), _INTS, (0, 10), "min_with_{k}"),
    _t("contains_number", "nums",
       "returns True if the list nums contains the number {k}, otherwise False",
       lambda k: lambda nums: k in nums, _NUMS, (0, 4, 7), "contains_{k}"),
    _t("index_of", "nums",
       "returns the index of the first {k} in the list nums, or -1 if nums does not contain {k}",
       lambda k: lambda nums: nums.index(k) if k in nums else -1, _NUMS, (0, 4, 7),
       "index_of_{k}"),
    _t("long_words", "s",
       "returns how many words of the string s (separated by spaces) have more than {k} letters",
       lambda k: lambda s: sum(1 for w in s.split() if len(w) > k), _WORDS, (1, 2, 3),
       "words_longer_than_{k}"),
    _t("sum_first", "nums", "returns the sum of the first {k} numbers of the list nums",
       lambda k: lambda nums: sum(nums[:k]), _NUMS, (1, 2, 3), "sum_first_{k}"),
    _t("has_length", "s",
       "returns True if the string s has exactly {k} characters, otherwise False",
       lambda k: lambda s: len(s) == k, (*_STRS, ("abc",)), (0, 3, 5), "has_length_{k}"),
    _t("item_at", "items", "returns the element at index {k} of the list items",
       lambda k: lambda items: items[k], ((([7, 8, 9, 10],), (["a", "b", "c"],))), (0, 1, 2),
       "item_at_{k}"),
    # one task each
    _t("reverse_string", "s", "returns the string s reversed", lambda _: lambda s: s[::-1], _STRS),
    _t("list_sum", "nums", "returns the sum of the numbers in the list nums",
       lambda _: lambda nums: sum(nums), _NUMS),
    _t("list_max", "nums", "returns the largest number in the non-empty list nums",
       lambda _: lambda nums: max(nums), _NUMS[:1] + _NUMS[2:]),
    _t("list_min", "nums", "returns the smallest number in the non-empty list nums",
       lambda _: lambda nums: min(nums), _NUMS[:1] + _NUMS[2:]),
    _t("count_vowels", "s",
       "returns how many vowels (a, e, i, o, u, lowercase) the string s contains",
       lambda _: lambda s: sum(1 for c in s if c in "aeiou"), _STRS),
    _t("is_even", "n", "returns True if the integer n is even and False otherwise",
       lambda _: lambda n: n % 2 == 0, (*_INTS, (7,))),
    _t("is_odd", "n", "returns True if the integer n is odd and False otherwise",
       lambda _: lambda n: n % 2 == 1, (*_INTS, (7,))),
    _t("square", "n", "returns n multiplied by itself", lambda _: lambda n: n * n, _INTS),
    _t("add", "a, b", "returns the sum of a and b", lambda _: lambda a, b: a + b,
       ((2, 3), (-1, 1), (0, 0))),
    _t("is_palindrome", "s", "returns True if the string s reads the same forwards and backwards",
       lambda _: lambda s: s == s[::-1], (*_STRS, ("racecar",))),
    _t("factorial", "n", "returns n! for a non-negative integer n",
       lambda _: lambda n: math.factorial(n), ((0,), (1,), (5,))),
    _t("to_upper", "s", "returns the string s in upper case", lambda _: lambda s: s.upper(), _STRS),
    _t("first_element", "items", "returns the first element of the non-empty list items",
       lambda _: lambda items: items[0], _ITEMS),
    _t("last_element", "items", "returns the last element of the non-empty list items",
       lambda _: lambda items: items[-1], _ITEMS),
    _t("string_length", "s", "returns the number of characters in the string s",
       lambda _: lambda s: len(s), _STRS),
    _t("count_evens", "nums", "returns how many even numbers the list nums contains",
       lambda _: lambda nums: sum(1 for x in nums if x % 2 == 0), _NUMS),
    _t("abs_value", "n", "returns the absolute value of the number n",
       lambda _: lambda n: abs(n), _INTS),
    _t("max_of_two", "a, b", "returns the larger of the two numbers a and b",
       lambda _: lambda a, b: max(a, b), ((3, 7), (9, 2), (-1, -1))),
    _t("sum_to_n", "n", "returns the sum of the integers from 1 to n inclusive",
       lambda _: lambda n: n * (n + 1) // 2, ((1,), (3,), (10,))),
    _t("remove_spaces", "s", "returns the string s with every space removed",
       lambda _: lambda s: s.replace(" ", ""), _STRS),
    _t("word_count", "s",
       "returns the number of words in the string s (words are separated by spaces)",
       lambda _: lambda s: len(s.split()), _WORDS),
    _t("celsius_to_fahrenheit", "c",
       "converts a temperature c in degrees Celsius to degrees Fahrenheit",
       lambda _: lambda c: c * 9 / 5 + 32, ((0,), (100,), (-40,))),
    _t("fizz", "n", "returns 'Fizz' if n is divisible by 3 and otherwise returns n as a string",
       lambda _: lambda n: "Fizz" if n % 3 == 0 else str(n), ((9,), (4,), (3,))),
)  # fmt: skip
