"""Judge calls through the stage cache, with cost accounting and failure classes.

`CachedJudge` wraps `pairrl.rollout.judges.PairwiseJudge` / `PointwiseJudge`, with the
prompts of the run's prompt kit (`pairrl.rollout.prompt_kit`). Every judgement is stored
under a content key (judge identity, read-out, sampling, thinking budget, the prompt
messages themselves, so a change of wording is a new judgement, and for a pair asked
again by the same tournament its occurrence: a repeat is a fresh sample, with its own
sampling seed, never a replay of the first). In `compute` mode cached verdicts are reused; cached
*infrastructure* failures (transport, timeout, scoring call) are retried once per run,
while judge-output failures (unparseable, truncated) are kept: they are the judge's
answer. In `replay` mode (the gate) the model is never called: an absent entry comes
back as a `missing` verdict and is recorded.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pairrl.eval.cache import StageCache, content_key

__all__ = ["CachedJudge", "Verdict", "is_infra_failure"]

INFRA_PREFIXES: tuple[str, ...] = (
    "sampler failed:",
    "scoring call failed:",
    "answer phase after thinking failed",
)


def is_infra_failure(reason: str) -> bool:
    """True when a failure came from transport or the backend, not from the judge's text."""
    return any(p in reason for p in INFRA_PREFIXES)


@dataclass
class Verdict:
    """One judgement as cached: values (pair ratings or one score), or a failure."""

    key: str
    values: list[float] | None
    failure: str | None
    missing: bool = False
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    wall_s: float = 0.0
    text: str = ""

    @property
    def ok(self) -> bool:
        """A usable judgement."""
        return self.values is not None and self.failure is None and not self.missing

    def to_cache(self) -> dict[str, Any]:
        """The cached value."""
        return {
            "values": self.values,
            "failure": self.failure,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "wall_s": self.wall_s,
            "text": _clipped(self.text),
        }

    @classmethod
    def from_cache(cls, key: str, value: dict[str, Any]) -> Verdict:
        """Inverse of to_cache."""
        return cls(key=key, **value)


def _clipped(text: str, keep: int = 2000) -> str:
    """``text`` as cached: whole up to 2 x ``keep`` characters, else its head and its tail
    (where a verdict and the end of thinking are) around a marker."""
    if len(text) <= 2 * keep:
        return text
    return f"{text[:keep]}\n[... {len(text) - 2 * keep} characters not cached ...]\n{text[-keep:]}"


@dataclass
class CachedJudge:
    """Pairwise and pointwise judging through the cache (see the module docstring)."""

    identity: str
    sampler: Any | None  # None in replay mode
    kit: Any  # pairrl.rollout.prompt_kit.PromptKit
    sampling: Any  # pairrl.rollout.samplers.SamplingParams
    readout: str
    think_tokens: int
    pair_cache: StageCache
    point_cache: StageCache
    batch_size: int = 16
    min_rating_mass: float = 0.5
    fresh_calls: int = field(default=0)

    def _settings(self) -> dict[str, Any]:
        s = self.sampling
        return {
            "judge": self.identity,
            "temperature": s.temperature,
            "top_p": s.top_p,
            "max_tokens": s.max_tokens,
            "seed": s.seed,
            "min_rating_mass": self.min_rating_mass,
        }

    def pair_key(self, messages: Any, occurrence: int = 0) -> str:
        """Cache key of one pairwise judgement (A/B order is in the prompt; ``occurrence``
        counts earlier asks of the same shown pair in one tournament)."""
        parts: tuple = ("pair", self._settings(), self.readout, messages)
        return content_key(*parts) if occurrence == 0 else content_key(*parts, occurrence)

    def point_key(self, mode: str, messages: Any) -> str:
        """Cache key of one pointwise judgement (`ab`, `ab_think`, or `rating` under the
        judge's read-out)."""
        if mode == "rating":
            return content_key("point", self._settings(), mode, self.readout, messages)
        think = self.think_tokens if mode == "ab_think" else None
        return content_key("point", self._settings(), mode, think, messages)

    def pairwise(
        self, items: Sequence[tuple[Any, str, str]], occurrences: Sequence[int] | None = None
    ) -> list[Verdict]:
        """(task, A, B) triples -> verdicts with values [r_a, r_b] (real numbers in
        [1, 10]: integers when sampled, expectations under the expected read-outs)."""
        occ = list(occurrences) if occurrences is not None else [0] * len(items)
        prompts = [self.kit.pairwise(task, a, b) for task, a, b in items]
        keys = [self.pair_key(p, o) for p, o in zip(prompts, occ, strict=True)]
        asks = list(zip(prompts, occ, strict=True))
        return self._resolve(keys, asks, self.pair_cache, self._judge_pairs)

    def pointwise(self, mode: str, items: Sequence[tuple[Any, str]]) -> list[Verdict]:
        """(task, solution) pairs -> verdicts with values [P(correct)] (modes `ab`,
        `ab_think`: the kit's yes/no prompt) or [rating] (mode `rating`: the kit's 1-10
        pointwise prompt; a real number in [1, 10], an integer when sampled)."""
        build = self.kit.pointwise if mode == "rating" else self.kit.pointwise_ab
        prompts = [build(task, s) for task, s in items]
        keys = [self.point_key(mode, p) for p in prompts]
        return self._resolve(
            keys, prompts, self.point_cache, lambda xs: self._judge_points(mode, xs)
        )

    def _resolve(
        self, keys: list[str], items: list[Any], cache: StageCache, compute: Any
    ) -> list[Verdict]:
        out: list[Verdict | None] = [None] * len(keys)
        todo: list[int] = []
        for i, key in enumerate(keys):
            entry = cache.get(key)
            if entry is not None:
                cached = Verdict.from_cache(key, entry)
                retry = (
                    self.sampler is not None and cached.failure and is_infra_failure(cached.failure)
                )
                if not retry:
                    out[i] = cached
                    continue
            if self.sampler is None:
                out[i] = Verdict(key, None, "missing from cache", missing=True)
            else:
                todo.append(i)
        # Deduplicate within the batch: the same judgement asked twice is computed once.
        unique: dict[str, int] = {}
        for i in todo:
            unique.setdefault(keys[i], i)
        order = list(unique.values())
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            fresh = compute([items[i] for i in chunk])
            self.fresh_calls += len(chunk)
            for i, verdict in zip(chunk, fresh, strict=True):
                verdict.key = keys[i]
            cache.put_many((v.key, v.to_cache()) for v in fresh)
        for i in todo:
            entry = cache.get(keys[i])
            assert entry is not None
            out[i] = Verdict.from_cache(keys[i], entry)
        return [v for v in out if v is not None]

    # ---- model calls ------------------------------------------------------------------

    def _judge_pairs(self, asks: list[tuple[Any, int]]) -> list[Verdict]:
        from pairrl.rollout.judges import JudgeFailure, PairwiseJudge

        t0 = time.perf_counter()
        prompts = [p for p, _ in asks]
        if self.readout == "forced":
            results = self._forced_pairs(prompts)  # deterministic: no sample to refresh
        else:
            judge = PairwiseJudge(
                self.sampler,  # type: ignore[arg-type]
                readout=self.readout,  # type: ignore[arg-type]
                sampling=self.sampling,
                min_rating_mass=self.min_rating_mass,
            )
            results = self._by_occurrence(judge, asks)
        per_item = (time.perf_counter() - t0) / max(1, len(prompts))
        out: list[Verdict] = []
        for prompt, res in zip(prompts, results, strict=True):
            values = None if isinstance(res, JudgeFailure) else [float(r) for r in res.ratings]
            scored_at = self._forced_prefix(prompt) if self.readout == "forced" else None
            out.append(self._verdict(res, values, prompt, per_item, scored_at))
        return out

    def _by_occurrence(self, judge: Any, asks: list[tuple[Any, int]]) -> list[Any]:
        """One batch per occurrence, each with its own seed (base seed + occurrence), so a
        repeat is sampled afresh."""
        results: list[Any] = [None] * len(asks)
        base = self.sampling.seed
        for occurrence in sorted({o for _, o in asks}):
            idx = [i for i, (_, o) in enumerate(asks) if o == occurrence]
            seed = None if base is None else base + occurrence
            batch = judge.judge_prompts([asks[i][0] for i in idx], seed=seed)
            for i, res in zip(idx, batch, strict=True):
                results[i] = res
        return results

    def _forced_pairs(self, messages: list[Any]) -> list[Any]:
        """The no-reasoning read-out: the answer is forced to open with `<rating_A>`, and
        each rating is the expectation over the ten rating tokens there (B's prefix
        carries A's rounded rating, as the judge would have written it)."""
        from pairrl.rollout.judges import forced_pair_verdicts

        return forced_pair_verdicts(self.sampler, messages, self.min_rating_mass)

    @staticmethod
    def _forced_prefix(messages: Any) -> Any:
        """Where the forced read-out reads A's rating: the answer opened with `<rating_A>`."""
        from pairrl.rollout.prompts import continuation

        return continuation(messages, "<rating_A>")

    def _judge_points(self, mode: str, prompts: list[Any]) -> list[Verdict]:
        from pairrl.rollout.judges import JudgeFailure, PointwiseJudge

        if mode == "rating":
            return self._judge_ratings(prompts)
        think = self.think_tokens if mode == "ab_think" else None
        judge = PointwiseJudge(
            self.sampler,  # type: ignore[arg-type]
            mode="ab",
            sampling=self.sampling,
            think_tokens=think,
            min_rating_mass=self.min_rating_mass,
        )
        t0 = time.perf_counter()
        results = judge.judge_ab_prompts(prompts)
        per_item = (time.perf_counter() - t0) / max(1, len(prompts))
        out: list[Verdict] = []
        for prompt, res in zip(prompts, results, strict=True):
            values = None if isinstance(res, JudgeFailure) else [float(res.value)]
            out.append(self._verdict(res, values, prompt, per_item))
        return out

    def _judge_ratings(self, prompts: list[Any]) -> list[Verdict]:
        """1-10 ratings under the judge's read-out: `sampled` parses the `<rating>` tag,
        `expected` reads the expectation over the rating tokens where the judge wrote the
        tag, `forced` forces the answer to open with `<rating>` and reads it there."""
        from pairrl.rollout.judges import JudgeFailure, rating_verdicts
        from pairrl.rollout.prompts import continuation

        t0 = time.perf_counter()
        results = rating_verdicts(
            self.sampler,  # type: ignore[arg-type]
            prompts,
            self.readout,
            self.sampling,
            None,
            self.min_rating_mass,
        )
        per_item = (time.perf_counter() - t0) / max(1, len(prompts))
        out: list[Verdict] = []
        for prompt, res in zip(prompts, results, strict=True):
            values = None if isinstance(res, JudgeFailure) else [float(res.value)]
            scored_at = continuation(prompt, "<rating>") if self.readout == "forced" else None
            out.append(self._verdict(res, values, prompt, per_item, scored_at))
        return out

    def _verdict(
        self,
        res: Any,
        values: list[float] | None,
        prompt: Any,
        per_item: float,
        scored_at: Any | None = None,
    ) -> Verdict:
        """A fresh judgement as a cache entry: `values` when it succeeded, else its failure."""
        failure = res.reason if values is None else None
        prompt_tokens, completion_tokens = self._tokens(prompt, res.text, scored_at)
        return Verdict(
            "", values, failure, False, prompt_tokens, completion_tokens, per_item, res.text
        )

    def _tokens(
        self, prompt: Any, text: str, scored_at: Any | None = None
    ) -> tuple[int | None, int | None]:
        """(prompt, completion) tokens of one judgement. Measured where the sampler reports
        its engine's counts (vLLM, servers returning `usage`): those of the latest request
        on the judge prompt, or on `scored_at` (the forced read-out's first prefix) when
        the prompt itself was not sent; a judgement read from log-probabilities alone
        wrote no text (0 completion tokens). Otherwise counted with the sampler's
        tokenizer, and None where there is neither: never a 0 that was not measured."""
        measured = getattr(self.sampler, "measured_usage", None)
        if callable(measured):
            usage = measured(prompt)
            if usage is None and scored_at is not None:
                usage = measured(scored_at)
            if usage is not None:
                completion = usage.completion_tokens
                if not completion and text:
                    # the latest request on this prompt scored it (A/B after an answer
                    # that closed no thinking): the text was written by the one before
                    completion = self._count(text)
                return usage.prompt_tokens, completion
        return self._count_prompt(prompt), self._count(text)

    def _count_prompt(self, messages: Any) -> int | None:
        encode = getattr(self.sampler, "encode", None)
        return len(encode(messages)) if callable(encode) else None

    def _count(self, text: str) -> int | None:
        tokenizer = getattr(self.sampler, "tokenizer", None)
        if tokenizer is None or not text:
            return 0 if tokenizer is not None else None
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])
