"""Ratings read from next-token log-probabilities, and the failure every read-out reports.

* ``expected``: at the point where the judge writes a rating (just after ``<rating_A>``,
  ``<rating_B>`` or ``<rating>`` in its answer, past any whitespace the judge wrote there,
  so whitespace-only tokens are skipped), the expectation of the rating under the model's
  next-token probabilities of the ten rating tokens, renormalised over those ten.
* ``ab``: P(A) / (P(A) + P(B)) at the first token of a yes/no answer.

Rating 10 under tokenizers that split digits: ``"10"`` is then the two tokens ``"1"``,
``"0"``, and ``P(next = "1")`` holds the mass of both rating 1 and rating 10. One more
scoring call at ``prefix + "1"`` gives the next-digit probabilities ``P(d | "1")``; then
``P(10) = P("1") * P("0" | "1")`` and ``P(1) = P("1") * (1 - sum_d P(d | "1"))`` (the mass
of 11..19, which are not ratings, is dropped). Where ``"10"`` is one token its own
probability is used and no extra call is made. Each rating is also tried with a leading
space (``" 7"``), for tokenizers that merge a space into the digit token. Over HTTP only the
server's top-20 next tokens are visible: rating tokens outside them count as probability 0.

Rating mass. The ten rating tokens' probability at the rating position is the read-out's
evidence that the judge is answering with a rating at all. Below ``min_mass``
(``DEFAULT_MIN_RATING_MASS``, 0.5: most of the next-token mass) the read-out is a failure
with its reason, not an expectation over a few stray tokens. The A/B read-out applies the
same floor to the mass on "A" and "B".
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pairrl.rewards import RatingFailure
from pairrl.rollout.prompts import THINK_CLOSE, continuation
from pairrl.rollout.samplers.base import Prompt, Sampler, SamplerError

__all__ = [
    "DEFAULT_MIN_RATING_MASS",
    "JudgeFailure",
    "ab_probability",
    "expected_rating",
    "rating_distribution",
    "rating_prefix",
    "score_expected_ratings",
]

RATINGS = tuple(range(1, 11))
_SPACE_VARIANTS = ("", " ")
_DIGITS = tuple(str(d) for d in range(10))
DEFAULT_MIN_RATING_MASS = 0.5


@dataclass(frozen=True)
class JudgeFailure:
    """A judgement that yields no rating; ``text`` is the judge's output when there was one."""

    reason: str
    text: str = ""


def rating_distribution(
    first: dict[str, float], after_one: dict[str, dict[str, float]]
) -> dict[int, float]:
    """Unnormalised P(rating = k) for k in 1..10 from next-token log-probabilities.

    ``first`` maps candidate strings (``"7"``, ``" 7"``, ``"10"``...) to log-probabilities
    at the rating position; absent means probability 0. ``after_one[v]`` maps digits to
    log-probabilities *after* ``v + "1"`` for each space variant ``v`` whose ``"1"`` was
    seen and whose ``"10"`` is not a single token (see the module docstring).
    Worked example (digit-split tokenizer): P("1") = 0.4, P("7") = 0.2, P("0"|"1") = 0.5,
    P("2"|"1") = 0.1 give P(10) = 0.2, P(1) = 0.4 * 0.4 = 0.16, P(7) = 0.2.
    """
    probs = dict.fromkeys(RATINGS, 0.0)
    for variant in _SPACE_VARIANTS:
        for k in RATINGS:
            logprob = first.get(variant + str(k))
            if logprob is not None:
                probs[k] += math.exp(logprob)
        one = first.get(variant + "1")
        if one is None or variant not in after_one:
            continue
        following = {d: math.exp(lp) for d, lp in after_one[variant].items() if d in _DIGITS}
        p_one = math.exp(one)
        # P(variant+"1") was credited to rating 1 above; split it between 1 and 10.
        probs[1] -= p_one
        probs[1] += p_one * max(0.0, 1.0 - sum(following.values()))
        probs[10] += p_one * following.get("0", 0.0)
    return probs


def expected_rating(probs: dict[int, float]) -> tuple[float, float] | None:
    """(expected rating, total mass) of an unnormalised distribution; None if mass is 0."""
    mass = sum(probs.values())
    if mass <= 0.0:
        return None
    return sum(k * p for k, p in probs.items()) / mass, mass


def score_expected_ratings(
    sampler: Sampler,
    prefixes: Sequence[Prompt],
    min_mass: float = DEFAULT_MIN_RATING_MASS,
) -> list[tuple[float, float] | JudgeFailure]:
    """Expected rating and rating mass at the end of each prefix (two batched calls at most);
    a failure when the mass on the rating tokens is below ``min_mass``."""
    candidates = [v + str(k) for v in _SPACE_VARIANTS for k in RATINGS]
    firsts = sampler.next_token_logprobs(prefixes, candidates) if prefixes else []
    followups: list[tuple[int, str, Prompt]] = []
    for index, first in enumerate(firsts):
        if isinstance(first, SamplerError):
            continue
        for variant in _SPACE_VARIANTS:
            if variant + "1" in first and variant + "10" not in first:
                followups.append((index, variant, continuation(prefixes[index], variant + "1")))
    seconds = (
        sampler.next_token_logprobs([f[2] for f in followups], list(_DIGITS)) if followups else []
    )
    after_one: list[dict[str, dict[str, float]]] = [{} for _ in prefixes]
    failed: dict[int, SamplerError] = {}
    for (index, variant, _), second in zip(followups, seconds, strict=True):
        if isinstance(second, SamplerError):
            failed[index] = second
        else:
            after_one[index][variant] = second
    results: list[tuple[float, float] | JudgeFailure] = []
    for index, first in enumerate(firsts):
        error = first if isinstance(first, SamplerError) else failed.get(index)
        if error is not None:
            results.append(JudgeFailure(f"scoring call failed: {error}"))
            continue
        assert isinstance(first, dict)
        value = expected_rating(rating_distribution(first, after_one[index]))
        if value is None:
            results.append(JudgeFailure("no probability on any rating token 1..10"))
        elif value[1] < min_mass:
            results.append(
                JudgeFailure(
                    f"rating mass {value[1]:.3f} below the floor {min_mass} "
                    "(the judge is not answering with a rating here)"
                )
            )
        else:
            results.append(value)
    return results


def rating_prefix(text: str, tag: str) -> str | RatingFailure:
    """The judge's text up to where it writes the rating of ``<tag>`` (whitespace skipped).

    Uses the last ``<tag>`` in the answer part (after the last ``</think>``), as the parser.
    """
    start = text.lower().rfind(THINK_CLOSE)
    start = 0 if start < 0 else start + len(THINK_CLOSE)
    matches = list(re.finditer(rf"<{tag}>", text[start:], re.IGNORECASE))
    if not matches:
        return RatingFailure(f"missing <{tag}> tag")
    position = start + matches[-1].end()
    while position < len(text) and text[position].isspace():
        position += 1
    return text[:position]


def ab_probability(
    score: dict[str, float] | SamplerError, text: str, min_mass: float
) -> tuple[float, float] | JudgeFailure:
    """(P(yes), A/B mass) from the next-token log-probabilities of "A"/"B" (and " A"/" B"),
    or a failure: a scoring error, no A/B token at all, or mass below ``min_mass``."""
    if isinstance(score, SamplerError):
        return JudgeFailure(f"scoring call failed: {score}", text)
    p_yes = sum(math.exp(score[t]) for t in ("A", " A") if t in score)
    p_no = sum(math.exp(score[t]) for t in ("B", " B") if t in score)
    if p_yes + p_no <= 0.0:
        return JudgeFailure("neither A nor B among the next-token probabilities", text)
    if p_yes + p_no < min_mass:
        return JudgeFailure(
            f"A/B mass {p_yes + p_no:.3f} below the floor {min_mass} "
            "(the judge is not answering A or B here)",
            text,
        )
    return p_yes / (p_yes + p_no), p_yes + p_no
