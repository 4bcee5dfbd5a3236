"""Rating parsing (policy in rewards/ratings.py) and code extraction on well- and ill-formed text."""

from __future__ import annotations

import pytest

from pairrl.rewards import (
    RatingFailure,
    extract_code,
    normalise_rating,
    parse_pair_ratings,
    parse_rating,
)

# ---------------------------------------------------------------- pair ratings


def test_pair_ratings_after_reasoning() -> None:
    text = "Tracing A on [] gives 0, B crashes.\n<rating_A>9</rating_A>\n<rating_B>2</rating_B>"
    assert parse_pair_ratings(text) == (9, 2)


def test_pair_ratings_whitespace_and_case_inside_tags() -> None:
    text = "<Rating_A>\n 10 \t</rating_a> and <RATING_B> 1</RATING_B>"
    assert parse_pair_ratings(text) == (10, 1)


def test_pair_ratings_order_b_before_a_is_fine() -> None:
    assert parse_pair_ratings("<rating_B>3</rating_B><rating_A>7</rating_A>") == (7, 3)


def test_pair_ratings_identical_repeats_accepted() -> None:
    text = "<rating_A>8</rating_A><rating_B>4</rating_B> Final: <rating_A>8</rating_A>"
    assert parse_pair_ratings(text) == (8, 4)


@pytest.mark.parametrize(
    ("text", "reason_word"),
    [
        ("<rating_A>8</rating_A>", "missing <rating_B>"),
        ("<rating_B>8</rating_B>", "missing <rating_A>"),
        ("no tags at all", "missing <rating_A>"),
        ("<rating_A>8</rating_A><rating_B>4", "unclosed <rating_B>"),
        ("<rating_A>0</rating_A><rating_B>4</rating_B>", "out of range"),
        ("<rating_A>11</rating_A><rating_B>4</rating_B>", "out of range"),
        ("<rating_A>-3</rating_A><rating_B>4</rating_B>", "non-integer"),
        ("<rating_A>7.5</rating_A><rating_B>4</rating_B>", "non-integer"),
        ("<rating_A>7/10</rating_A><rating_B>4</rating_B>", "non-integer"),
        ("<rating_A>seven</rating_A><rating_B>4</rating_B>", "non-integer"),
        ("<rating_A></rating_A><rating_B>4</rating_B>", "non-integer"),
        ("<rating_A>k</rating_A><rating_B>k</rating_B>", "non-integer"),
        ("<rating_A>1</rating_A><rating_A>10</rating_A><rating_B>4</rating_B>", "conflicting"),
    ],
)
def test_pair_ratings_malformed_are_failures_with_reasons(text: str, reason_word: str) -> None:
    result = parse_pair_ratings(text)
    assert isinstance(result, RatingFailure)
    assert reason_word in result.reason


def test_thinking_block_is_ignored() -> None:
    # The thinking block quotes the format with a placeholder and a draft verdict; only
    # the answer after </think> counts, so neither the 'k' nor the draft 3 interferes.
    text = (
        "<think>I must answer <rating_A>k</rating_A>. Draft: <rating_A>3</rating_A></think>"
        "<rating_A>9</rating_A><rating_B>2</rating_B>"
    )
    assert parse_pair_ratings(text) == (9, 2)


def test_ratings_only_inside_thinking_is_missing() -> None:
    text = "<think><rating_A>9</rating_A><rating_B>2</rating_B></think> I am not sure."
    result = parse_pair_ratings(text)
    assert isinstance(result, RatingFailure)
    assert "missing" in result.reason


def test_rating_failure_is_frozen() -> None:
    failure = RatingFailure("x")
    with pytest.raises(AttributeError):
        failure.reason = "y"  # type: ignore[misc]


# ---------------------------------------------------------------- pointwise


def test_pointwise_rating() -> None:
    assert parse_rating("Looks right.\n<rating> 7 </rating>") == 7


@pytest.mark.parametrize(
    "text",
    ["<rating>12</rating>", "<rating>5", "nothing", "<rating>2</rating><rating>9</rating>"],
)
def test_pointwise_malformed(text: str) -> None:
    assert isinstance(parse_rating(text), RatingFailure)


def test_pointwise_ignores_pair_tags() -> None:
    # <rating_A> is not <rating>: a pairwise answer fed to the pointwise parser is missing.
    result = parse_rating("<rating_A>9</rating_A>")
    assert isinstance(result, RatingFailure)
    assert "missing <rating>" in result.reason


# ---------------------------------------------------------------- normalisation


def test_normalise_rating_values() -> None:
    # (r-1)/9: 1 -> 0, 10 -> 1, 5 -> 4/9. r/10: 1 -> 0.1, 10 -> 1.
    assert normalise_rating(1) == 0.0
    assert normalise_rating(10) == 1.0
    assert normalise_rating(5) == pytest.approx(4 / 9)
    assert normalise_rating(1, "over_ten") == pytest.approx(0.1)
    assert normalise_rating(10, "over_ten") == 1.0


def test_normalise_rating_takes_real_ratings() -> None:
    # An expected rating keeps its fraction: (7.51 - 1) / 9 = 0.7233..., 7.51 / 10 = 0.751.
    assert normalise_rating(7.51) == pytest.approx(6.51 / 9)
    assert normalise_rating(7.51, "over_ten") == pytest.approx(0.751)
    assert normalise_rating(5.0) == normalise_rating(5)


@pytest.mark.parametrize("bad", [0, 11, 0.99, 10.01, float("nan"), True, "7"])
def test_normalise_rating_rejects_bad_ratings(bad: object) -> None:
    with pytest.raises(ValueError, match="rating must be"):
        normalise_rating(bad)  # type: ignore[arg-type]


def test_normalise_rating_rejects_unknown_scheme() -> None:
    with pytest.raises(ValueError, match="over_ten"):
        normalise_rating(5, "sigmoid")


# ---------------------------------------------------------------- code extraction


def test_extract_last_python_block() -> None:
    text = "```python\ndef f(): return 1\n```\nbetter:\n```python\ndef f(): return 2\n```\n"
    assert extract_code(text) == "def f(): return 2\n"


def test_python_block_preferred_over_later_untagged_block() -> None:
    text = "```python\ndef f(): return 1\n```\nOutput:\n```\n1\n```"
    assert extract_code(text) == "def f(): return 1\n"


def test_untagged_block_when_no_python_block() -> None:
    assert extract_code("```\nx = 1\n```\n```text\ny = 2\n```") == "y = 2\n"


def test_py_and_case_variants_count_as_python() -> None:
    assert extract_code("```Py\nx = 1\n```\n```\nnot this\n```") == "x = 1\n"


@pytest.mark.parametrize(
    "text",
    [
        "def f(): return 1",  # no fence at all
        "```python\ndef f(): return 1\n",  # truncated: fence never closed
        "```python\n   \n```",  # blank block
        "",
    ],
)
def test_extract_code_none(text: str) -> None:
    assert extract_code(text) is None
