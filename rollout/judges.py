"""Pairwise and pointwise judges on any :class:`~rollout.samplers.base.Sampler`.

Read-outs:

* ``sampled``: the ratings written in the judge's text, parsed by ``rewards`` (the one
  parsing policy of the project).
* ``expected``: the expectation of the rating over the ten rating tokens' next-token
  probabilities where the judge writes it (``pairrl.rollout.readouts``, which also holds
  the rating-mass floor and the A/B read-out of the pointwise judge).
* ``forced`` (``forced_pair_verdicts``, ``forced_point_verdicts``): no reasoning; the answer
  is forced to open with the rating tag and the rating read there as an expectation.

Every failure is a :class:`JudgeFailure` with a reason (sampler error, truncated output,
unparseable or missing rating, rating mass below the floor); nothing becomes a tie.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from pairrl.rewards import RatingFailure, parse_pair_ratings, parse_rating
from pairrl.rollout.aggregation import rank_candidates
from pairrl.rollout.prompts import (
    Domain,
    continuation,
    generate_with_thinking_budget,
    needs_answer,
    pairwise_messages,
    pointwise_ab_messages,
    pointwise_messages,
    think_prefixes,
)
from pairrl.rollout.readouts import (
    DEFAULT_MIN_RATING_MASS,
    JudgeFailure,
    ab_probability,
    rating_prefix,
    score_expected_ratings,
)
from pairrl.rollout.samplers.base import Completion, Prompt, Sampler, SamplingParams

Readout = Literal["sampled", "expected"]
READOUTS: tuple[str, ...] = ("sampled", "expected")
POINTWISE_MODES: tuple[str, ...] = ("rating", "ab")

DEFAULT_JUDGE_SAMPLING = SamplingParams(temperature=0.6, top_p=0.95, max_tokens=4096)


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
        """Integer ratings (expected ones rounded half up), for display and text prefixes."""
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


def forced_pair_verdicts(
    sampler: Sampler, messages: Sequence[Prompt], min_rating_mass: float
) -> list[PairVerdict | JudgeFailure]:
    """The no-reasoning pairwise read-out over judge prompts ``messages``: the answer is
    forced to open with ``<rating_A>`` and each rating is the expectation over the rating
    tokens there; B's prefix carries A's rounded rating (as the judge would have written
    it). Two scoring calls per batch, no sampling; a failure at A's tag skips B's call."""
    first = score_expected_ratings(
        sampler, [continuation(m, "<rating_A>") for m in messages], min_rating_mass
    )
    owners = [i for i, score in enumerate(first) if not isinstance(score, JudgeFailure)]
    prefixes = [
        continuation(messages[i], f"<rating_A>{round_rating(first[i][0])}</rating_A>\n<rating_B>")
        for i in owners
    ]
    second = score_expected_ratings(sampler, prefixes, min_rating_mass)
    results: list[PairVerdict | JudgeFailure] = list(first)  # type: ignore[arg-type]
    for i, score_b in zip(owners, second, strict=True):
        score_a = first[i]
        results[i] = (
            score_b
            if isinstance(score_b, JudgeFailure)
            else PairVerdict(score_a[0], score_b[0], "", rating_mass=(score_a[1], score_b[1]))
        )
    return results


def forced_point_verdicts(
    sampler: Sampler, messages: Sequence[Prompt], min_rating_mass: float
) -> list[PointVerdict | JudgeFailure]:
    """The no-reasoning pointwise read-out over judge prompts ``messages``: the answer is
    forced to open with ``<rating>`` and the rating is the expectation over the rating
    tokens there. One scoring call per batch (two where ``"10"`` splits), no sampling."""
    scores = score_expected_ratings(
        sampler, [continuation(m, "<rating>") for m in messages], min_rating_mass
    )
    return [
        score
        if isinstance(score, JudgeFailure)
        else PointVerdict(score[0], "rating", "", rating_mass=score[1])
        for score in scores
    ]


def rating_verdicts(
    sampler: Sampler,
    prompts: Sequence[Prompt],
    readout: str,
    sampling: SamplingParams = DEFAULT_JUDGE_SAMPLING,
    think_tokens: int | None = None,
    min_rating_mass: float = DEFAULT_MIN_RATING_MASS,
) -> list[PointVerdict | JudgeFailure]:
    """The pointwise 1-10 rating of each judge prompt (``pointwise_messages`` or a prompt
    kit's) under ``readout``: ``sampled`` and ``expected`` through
    :meth:`PointwiseJudge.judge_rating_prompts`, ``forced`` through
    :func:`forced_point_verdicts` (no sampling, so ``sampling`` and ``think_tokens`` are
    not read)."""
    if readout == "forced":
        return forced_point_verdicts(sampler, prompts, min_rating_mass)
    judge = PointwiseJudge(
        sampler,
        mode="rating",
        readout=readout,  # type: ignore[arg-type]
        sampling=sampling,
        think_tokens=think_tokens,
        min_rating_mass=min_rating_mass,
    )
    return judge.judge_rating_prompts(prompts)


def pointwise_ranking(scores: Sequence[float | None]) -> list[int]:
    """Candidates best first by their pointwise score (a rating or P(correct)); None marks
    a failed judgement. Ties are broken as the tournaments break them
    (:func:`~pairrl.rollout.aggregation.rank_candidates` with the score as both mu and mean
    rating: the lowest index among equal scores); failed candidates come last, by index."""
    evidence = [math.nan if s is None else float(s) for s in scores]
    return rank_candidates(evidence, evidence)


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
        prompts: list[Prompt] = [pairwise_messages(p, a, b, self.domain) for p, a, b in items]
        return self.judge_prompts(prompts, seed=seed)

    def judge_prompts(
        self, prompts: Sequence[Prompt], *, seed: int | None = None
    ) -> list[PairVerdict | JudgeFailure]:
        """:meth:`judge` on prompts already built (a prompt kit's pairwise messages)."""
        sampling = self.sampling if seed is None else replace(self.sampling, seed=seed)
        completions = _generate(self.sampler, list(prompts), sampling, self.think_tokens)
        results: list[PairVerdict | JudgeFailure | None] = [None] * len(prompts)
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
        return self.judge_rating_prompts(prompts)

    def judge_rating_prompts(self, prompts: Sequence[Prompt]) -> list[PointVerdict | JudgeFailure]:
        """The 1-10 rating, under ``readout``, on prompts already built (a prompt kit's
        pointwise messages): one batched generation, plus scoring calls for ``expected``."""
        completions = _generate(self.sampler, list(prompts), self.sampling, self.think_tokens)
        results: list[PointVerdict | JudgeFailure | None] = [None] * len(prompts)
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
        return self.judge_ab_prompts(prompts)

    def judge_ab_prompts(self, prompts: Sequence[Prompt]) -> list[PointVerdict | JudgeFailure]:
        """The A/B read-out on prompts already built (a prompt kit's yes/no messages)."""
        results: list[PointVerdict | JudgeFailure | None] = [None] * len(prompts)
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
            read = ab_probability(score, text, self.min_rating_mass)
            results[index] = (
                read
                if isinstance(read, JudgeFailure)
                else PointVerdict(read[0], "p_correct", text, rating_mass=read[1])
            )
        return [r for r in results if r is not None]


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

    def __call__(self, pairs: list[tuple[int, int]]) -> list[tuple[float, float] | None]:
        base = self.judge.sampling.seed
        # A fresh seed per round, so a pair judged again is not a replay of the same draw.
        seed = None if base is None else base + self.calls
        self.calls += 1
        items = [(self.problem, self.candidates[a], self.candidates[b]) for a, b in pairs]
        out: list[tuple[float, float] | None] = []
        for pair, verdict in zip(pairs, self.judge.judge(items, seed=seed), strict=True):
            if isinstance(verdict, JudgeFailure):
                self.failures.append((pair, verdict.reason))
                out.append(None)
            else:
                self.verdicts[pair] = verdict
                out.append(verdict.ratings)  # expected ratings keep their fractions
        return out
