"""Pairwise and pointwise judges on any :class:`~rollout.samplers.base.Sampler`.

Read-outs:

* ``sampled``: the ratings written in the judge's text, parsed by ``rewards`` (the one
  parsing policy of the project).
* ``expected``: at the point where the judge writes a rating (just after ``<rating_A>``,
  ``<rating_B>`` or ``<rating>`` in its answer, past any whitespace the judge wrote there,
  so whitespace-only tokens are skipped), the expectation of the rating under the model's
  next-token probabilities of the ten rating tokens, renormalised over those ten (so
  whitespace and other tokens at that position do not dilute it).

Rating 10 under tokenizers that split digits: ``"10"`` is then the two tokens ``"1"``,
``"0"``, and ``P(next = "1")`` holds the mass of both rating 1 and rating 10. One more
scoring call at ``prefix + "1"`` gives the next-digit probabilities ``P(d | "1")``; then
``P(10) = P("1") * P("0" | "1")`` and ``P(1) = P("1") * (1 - sum_d P(d | "1"))`` (the mass
of 11..19, which are not ratings, is dropped). Where ``"10"`` is one token its own
probability is used and no extra call is made. Each rating is also tried with a leading
space (``" 7"``), for tokenizers that merge a space into the digit token. Over HTTP only the
server's top-20 next tokens are visible: rating tokens outside them count as probability 0.

Rating mass. The ten rating tokens' probability at the rating position is the read-out's
evidence that the judge is answering with a rating at all. Below ``min_rating_mass``
(``DEFAULT_MIN_RATING_MASS``, 0.5: most of the next-token mass) the read-out is a failure
with its reason, not an expectation over a few stray tokens. A pointwise A/B read-out
applies the same floor to the mass on "A" and "B".

Every failure is a :class:`JudgeFailure` with a reason (sampler error, truncated output,
unparseable or missing rating, rating mass below the floor); nothing becomes a tie.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from pairrl.rewards import RatingFailure, parse_pair_ratings, parse_rating
from pairrl.rollout.prompts import (
    THINK_CLOSE,
    Domain,
    continuation,
    generate_with_thinking_budget,
    needs_answer,
    pairwise_messages,
    pointwise_ab_messages,
    pointwise_messages,
    think_prefixes,
)
from pairrl.rollout.samplers.base import Completion, Prompt, Sampler, SamplerError, SamplingParams

Readout = Literal["sampled", "expected"]
READOUTS: tuple[str, ...] = ("sampled", "expected")
POINTWISE_MODES: tuple[str, ...] = ("rating", "ab")
RATINGS = tuple(range(1, 11))
_SPACE_VARIANTS = ("", " ")
_DIGITS = tuple(str(d) for d in range(10))

DEFAULT_JUDGE_SAMPLING = SamplingParams(temperature=0.6, top_p=0.95, max_tokens=4096)
DEFAULT_MIN_RATING_MASS = 0.5


@dataclass(frozen=True)
class JudgeFailure:
    """A judgement that yields no rating; ``text`` is the judge's output when there was one."""

    reason: str
    text: str = ""


@dataclass(frozen=True)
class PairVerdict:
    """Ratings of A and B (ints when sampled, floats in [1, 10] when expected)."""

    rating_a: float
    rating_b: float
    text: str
    rating_mass: tuple[float, float] | None = None  # expected: probability on rating tokens

    @property
    def ratings(self) -> tuple[float, float]:
        return (self.rating_a, self.rating_b)

    def rounded(self) -> tuple[int, int]:
        """Integer ratings (expected ones rounded half up), as tournaments take them."""
        return (round_rating(self.rating_a), round_rating(self.rating_b))


@dataclass(frozen=True)
class PointVerdict:
    """A pointwise judgement: a rating in [1, 10] or P(correct) in [0, 1]."""

    value: float
    kind: Literal["rating", "p_correct"]
    text: str
    rating_mass: float | None = None  # probability on the rating (or A/B) tokens


def round_rating(rating: float) -> int:
    """Round half up and clamp to 1..10 (expected ratings are already inside)."""
    return min(10, max(1, math.floor(rating + 0.5)))


# ---- expected rating from next-token log-probabilities (pure parts first) -------------------


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


# ---- shared generation step -----------------------------------------------------------------


def _generate(
    sampler: Sampler, prompts: list[Prompt], sampling: SamplingParams, think_tokens: int | None
) -> list[Completion]:
    if not prompts:
        return []
    if think_tokens is None:
        rows = sampler.generate(prompts, 1, sampling)
    else:
        rows = generate_with_thinking_budget(sampler, prompts, 1, sampling, think_tokens)
    return [row[0] for row in rows]


def _usable(completion: Completion) -> JudgeFailure | None:
    if completion.error is not None:
        return JudgeFailure(f"sampler failed: {completion.error}")
    if completion.finish_reason == "length":
        return JudgeFailure("truncated: the judge hit max_tokens", completion.text)
    return None


def _check(readout: str, think_tokens: int | None, min_rating_mass: float) -> None:
    if not 0.0 <= min_rating_mass <= 1.0:
        raise ValueError(f"min_rating_mass must be in [0, 1], got {min_rating_mass}")
    if readout not in READOUTS:
        raise ValueError(f"readout {readout!r} unknown; allowed: {list(READOUTS)}")
    if think_tokens is not None and think_tokens < 1:
        raise ValueError(f"think_tokens must be None or >= 1, got {think_tokens}")


# ---- judges ---------------------------------------------------------------------------------


@dataclass
class PairwiseJudge:
    """Rates (problem, solution A, solution B) triples with the paper's pairwise prompt."""

    sampler: Sampler
    domain: Domain = "code"
    readout: Readout = "sampled"
    sampling: SamplingParams = DEFAULT_JUDGE_SAMPLING
    think_tokens: int | None = None
    min_rating_mass: float = DEFAULT_MIN_RATING_MASS

    def __post_init__(self) -> None:
        _check(self.readout, self.think_tokens, self.min_rating_mass)

    def judge(
        self, items: Sequence[tuple[str, str, str]], *, seed: int | None = None
    ) -> list[PairVerdict | JudgeFailure]:
        """One batched generation (plus scoring calls for ``expected``) for all items.

        ``seed`` overrides the sampling seed for this batch (tournaments vary it per round).
        """
        sampling = self.sampling if seed is None else replace(self.sampling, seed=seed)
        prompts: list[Prompt] = [pairwise_messages(p, a, b, self.domain) for p, a, b in items]
        completions = _generate(self.sampler, prompts, sampling, self.think_tokens)
        results: list[PairVerdict | JudgeFailure | None] = [None] * len(items)
        prefixes: list[Prompt] = []
        owners: list[int] = []
        for index, completion in enumerate(completions):
            problem = _usable(completion)
            if problem is not None:
                results[index] = problem
                continue
            text = completion.text
            if self.readout == "sampled":
                parsed = parse_pair_ratings(text)
                if isinstance(parsed, RatingFailure):
                    results[index] = JudgeFailure(parsed.reason, text)
                else:
                    results[index] = PairVerdict(parsed[0], parsed[1], text)
                continue
            cut_a, cut_b = rating_prefix(text, "rating_A"), rating_prefix(text, "rating_B")
            if isinstance(cut_a, RatingFailure) or isinstance(cut_b, RatingFailure):
                reason = cut_a.reason if isinstance(cut_a, RatingFailure) else cut_b.reason
                results[index] = JudgeFailure(reason, text)
                continue
            prefixes += [continuation(prompts[index], cut_a), continuation(prompts[index], cut_b)]
            owners.append(index)
        scores = score_expected_ratings(self.sampler, prefixes, self.min_rating_mass)
        for slot, index in enumerate(owners):
            score_a, score_b = scores[2 * slot], scores[2 * slot + 1]
            text = completions[index].text
            if isinstance(score_a, JudgeFailure) or isinstance(score_b, JudgeFailure):
                failure = score_a if isinstance(score_a, JudgeFailure) else score_b
                results[index] = JudgeFailure(failure.reason, text)
            else:
                results[index] = PairVerdict(
                    score_a[0], score_b[0], text, rating_mass=(score_a[1], score_b[1])
                )
        return [r for r in results if r is not None]


@dataclass
class PointwiseJudge:
    """Rates (problem, solution) pairs: a 1-10 rating, or P(correct) from the A/B logits.

    ``mode="ab"`` asks "is this solution correct? A yes / B no" and reads
    P(A) / (P(A) + P(B)) at the start of the answer (after thinking, when
    ``think_tokens`` is set; at the very first token otherwise); ``readout`` applies to
    ``mode="rating"`` only.
    """

    sampler: Sampler
    domain: Domain = "code"
    mode: Literal["rating", "ab"] = "rating"
    readout: Readout = "sampled"
    sampling: SamplingParams = DEFAULT_JUDGE_SAMPLING
    think_tokens: int | None = None
    min_rating_mass: float = DEFAULT_MIN_RATING_MASS
    _ab_tokens: tuple[str, ...] = field(default=("A", " A", "B", " B"), repr=False)

    def __post_init__(self) -> None:
        _check(self.readout, self.think_tokens, self.min_rating_mass)
        if self.mode not in POINTWISE_MODES:
            raise ValueError(f"mode {self.mode!r} unknown; allowed: {list(POINTWISE_MODES)}")

    def judge(self, items: Sequence[tuple[str, str]]) -> list[PointVerdict | JudgeFailure]:
        """Judge every (problem, solution) in one batch."""
        if self.mode == "ab":
            return self._judge_ab(items)
        prompts: list[Prompt] = [pointwise_messages(p, s, self.domain) for p, s in items]
        completions = _generate(self.sampler, prompts, self.sampling, self.think_tokens)
        results: list[PointVerdict | JudgeFailure | None] = [None] * len(items)
        prefixes: list[Prompt] = []
        owners: list[int] = []
        for index, completion in enumerate(completions):
            problem = _usable(completion)
            if problem is not None:
                results[index] = problem
                continue
            text = completion.text
            if self.readout == "sampled":
                parsed = parse_rating(text)
                results[index] = (
                    JudgeFailure(parsed.reason, text)
                    if isinstance(parsed, RatingFailure)
                    else PointVerdict(float(parsed), "rating", text)
                )
                continue
            cut = rating_prefix(text, "rating")
            if isinstance(cut, RatingFailure):
                results[index] = JudgeFailure(cut.reason, text)
                continue
            prefixes.append(continuation(prompts[index], cut))
            owners.append(index)
        for index, score in zip(
            owners,
            score_expected_ratings(self.sampler, prefixes, self.min_rating_mass),
            strict=True,
        ):
            text = completions[index].text
            results[index] = (
                JudgeFailure(score.reason, text)
                if isinstance(score, JudgeFailure)
                else PointVerdict(score[0], "rating", text, rating_mass=score[1])
            )
        return [r for r in results if r is not None]

    def _judge_ab(self, items: Sequence[tuple[str, str]]) -> list[PointVerdict | JudgeFailure]:
        prompts: list[Prompt] = [pointwise_ab_messages(p, s, self.domain) for p, s in items]
        results: list[PointVerdict | JudgeFailure | None] = [None] * len(items)
        read_at: list[tuple[int, Prompt, str]] = []
        if self.think_tokens is None:
            read_at = [(i, prompt, "") for i, prompt in enumerate(prompts)]
        else:
            rows = think_prefixes(self.sampler, prompts, 1, self.sampling, self.think_tokens)
            for index, (thinking,) in enumerate(rows):
                if thinking.error is not None:
                    results[index] = JudgeFailure(f"sampler failed: {thinking.error}")
                elif needs_answer(thinking):
                    read_at.append(
                        (index, continuation(prompts[index], thinking.text), thinking.text)
                    )
                else:  # answered without thinking: the answer starts at the first token
                    read_at.append((index, prompts[index], thinking.text))
        scores = self.sampler.next_token_logprobs([r[1] for r in read_at], self._ab_tokens)
        for (index, _, text), score in zip(read_at, scores, strict=True):
            results[index] = _ab_verdict(score, text, self.min_rating_mass)
        return [r for r in results if r is not None]


def _ab_verdict(
    score: dict[str, float] | SamplerError, text: str, min_mass: float
) -> PointVerdict | JudgeFailure:
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
    return PointVerdict(p_yes / (p_yes + p_no), "p_correct", text, rating_mass=p_yes + p_no)


# ---- adapter for pairrl.rollout.tournament ---------------------------------------------------------


@dataclass
class TournamentJudge:
    """``judge_pairs`` for :mod:`pairrl.rollout.tournament` over one problem's candidates.

    Each call judges one round as one batch; failures become ``None`` for the tournament
    and are kept here with their reasons (``failures``) for reporting.
    """

    judge: PairwiseJudge
    problem: str
    candidates: Sequence[str]
    calls: int = 0
    failures: list[tuple[tuple[int, int], str]] = field(default_factory=list)
    verdicts: dict[tuple[int, int], PairVerdict] = field(default_factory=dict)

    def __call__(self, pairs: list[tuple[int, int]]) -> list[tuple[int, int] | None]:
        base = self.judge.sampling.seed
        # A fresh seed per round, so a pair judged again is not a replay of the same draw.
        seed = None if base is None else base + self.calls
        self.calls += 1
        items = [(self.problem, self.candidates[a], self.candidates[b]) for a, b in pairs]
        out: list[tuple[int, int] | None] = []
        for pair, verdict in zip(pairs, self.judge.judge(items, seed=seed), strict=True):
            if isinstance(verdict, JudgeFailure):
                self.failures.append((pair, verdict.reason))
                out.append(None)
            else:
                self.verdicts[pair] = verdict
                out.append(verdict.rounded())
        return out
