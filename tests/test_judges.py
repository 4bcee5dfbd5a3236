"""Judges: read-outs with hand-worked numbers, scripted samplers, and the tiny model end to end."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import pytest
import torch

from pairrl.rollout.judges import (
    JudgeFailure,
    PairVerdict,
    PairwiseJudge,
    PointVerdict,
    PointwiseJudge,
    TournamentJudge,
    round_rating,
)
from pairrl.rollout.prompts import continuation, pointwise_ab_messages
from pairrl.rollout.readouts import (
    expected_rating,
    rating_distribution,
    rating_prefix,
    score_expected_ratings,
)
from pairrl.rollout.samplers import Completion, HFSampler, SamplerError, SamplingParams

ln = math.log
ITEM = ("Add a and b.", "def f(a, b):\n    return a + b", "def f(a, b):\n    return a - b")
PARAMS = SamplingParams(temperature=1.0, max_tokens=12, seed=0)


def _last_text(prompt) -> str:
    return prompt if isinstance(prompt, str) else prompt[-1]["content"]


class ScriptedSampler:
    """Generation from a function of the prompt; scoring from a function of the prompt."""

    def __init__(
        self,
        write: Callable[[object], Completion],
        score: Callable[[object], dict[str, float] | SamplerError] | None = None,
    ) -> None:
        self.write, self.score = write, score
        self.generate_calls: list[SamplingParams] = []
        self.score_calls: list[list] = []

    def generate(self, prompts: Sequence, n: int, sampling: SamplingParams):
        self.generate_calls.append(sampling)
        return [[self.write(p) for _ in range(n)] for p in prompts]

    def next_token_logprobs(self, prompts: Sequence, candidates: Sequence[str]):
        assert self.score is not None
        self.score_calls.append(list(prompts))
        return [
            s if isinstance(s, SamplerError) else {c: v for c, v in s.items() if c in candidates}
            for s in map(self.score, prompts)
        ]


def _says(text: str, finish: str = "stop") -> Callable[[object], Completion]:
    return lambda _prompt: Completion(
        text=text, token_ids=[1], logprobs=[-1.0], finish_reason=finish
    )


# ---- pure read-out arithmetic -------------------------------------------------------------


def test_rating_distribution_digit_split_hand_worked() -> None:
    # P("1") = 0.4, P("7") = 0.2; after "1": P("0") = 0.5, P("2") = 0.1 (rating 12: dropped).
    first = {"1": ln(0.4), "7": ln(0.2)}
    probs = rating_distribution(first, {"": {"0": ln(0.5), "2": ln(0.1), "<": ln(0.3)}})
    assert probs[10] == pytest.approx(0.4 * 0.5)  # 0.2
    assert probs[1] == pytest.approx(0.4 * (1 - 0.5 - 0.1))  # 0.16; "<" (end of number) counts
    assert probs[7] == pytest.approx(0.2)
    assert sum(probs.values()) == pytest.approx(0.56)
    value, mass = expected_rating(probs)
    assert value == pytest.approx((1 * 0.16 + 7 * 0.2 + 10 * 0.2) / 0.56)  # 6.357142857
    assert mass == pytest.approx(0.56)


def test_rating_distribution_single_token_ten_and_space_variants() -> None:
    # "10" is one token here: no follow-up, P(1) is P("1") itself. " 9" adds to rating 9.
    probs = rating_distribution({"1": ln(0.1), "10": ln(0.3), "9": ln(0.2), " 9": ln(0.1)}, {})
    assert probs[1] == pytest.approx(0.1) and probs[10] == pytest.approx(0.3)
    assert probs[9] == pytest.approx(0.3)
    assert expected_rating(dict.fromkeys(range(1, 11), 0.0)) is None


def test_rating_prefix_skips_whitespace_and_thinking() -> None:
    text = "<think>maybe <rating_A>3</think>\nok <rating_A> \n 8</rating_A>"
    assert rating_prefix(text, "rating_A") == text[: text.index("8")]
    assert rating_prefix("no tags", "rating_B").reason == "missing <rating_B> tag"
    assert rating_prefix("<RATING_A>5", "rating_A") == "<RATING_A>"


def test_round_rating() -> None:
    assert [round_rating(x) for x in (1.0, 1.49, 1.5, 6.5, 9.99, 10.0)] == [1, 1, 2, 7, 10, 10]


# ---- scripted samplers --------------------------------------------------------------------


def test_pairwise_sampled() -> None:
    good = ScriptedSampler(_says("A is right.\n<rating_A>9</rating_A>\n<rating_B>2</rating_B>"))
    (verdict,) = PairwiseJudge(good, sampling=PARAMS).judge([ITEM])
    assert isinstance(verdict, PairVerdict) and verdict.ratings == (9, 2)
    assert verdict.rounded() == (9, 2) and verdict.rating_mass is None
    bad = ScriptedSampler(_says("<rating_A>11</rating_A><rating_B>2</rating_B>"))
    (failure,) = PairwiseJudge(bad, sampling=PARAMS).judge([ITEM])
    assert isinstance(failure, JudgeFailure) and "out of range" in failure.reason
    cut = ScriptedSampler(_says("<rating_A>9</rating_A><rating_B>2</rating_B>", "length"))
    (failure,) = PairwiseJudge(cut, sampling=PARAMS).judge([ITEM])
    assert isinstance(failure, JudgeFailure) and "truncated" in failure.reason
    broken = ScriptedSampler(lambda p: Completion.failed(SamplerError("timeout", "read 600 s")))
    (failure,) = PairwiseJudge(broken, sampling=PARAMS).judge([ITEM])
    assert "timeout" in failure.reason and "read 600 s" in failure.reason


def test_pairwise_expected_from_scripted_logprobs() -> None:
    def score(prompt) -> dict[str, float]:
        text = _last_text(prompt)
        if text.endswith("<rating_A>"):
            return {"1": ln(0.4), "7": ln(0.2), " ": ln(0.3)}  # whitespace is ignored
        if text.endswith("<rating_A>1"):
            return {"0": ln(0.5), "2": ln(0.1)}
        if text.endswith("<rating_B> "):  # the judge wrote a space: it is skipped
            return {"3": ln(0.5), "4": ln(0.5)}
        raise AssertionError(f"unexpected prefix {text[-30:]!r}")

    sampler = ScriptedSampler(_says("ok <rating_A>10</rating_A> <rating_B> 3</rating_B>"), score)
    (verdict,) = PairwiseJudge(sampler, readout="expected", sampling=PARAMS).judge([ITEM])
    assert isinstance(verdict, PairVerdict)
    assert verdict.rating_a == pytest.approx(3.56 / 0.56)  # the hand-worked case above
    assert verdict.rating_b == pytest.approx(3.5)
    assert verdict.rating_mass == pytest.approx((0.56, 1.0))
    assert verdict.rounded() == (6, 4)  # 6.357 -> 6, 3.5 -> 4 (half up)
    assert len(sampler.score_calls) == 2  # one batched first call, one batched follow-up
    assert len(sampler.score_calls[0]) == 2 and len(sampler.score_calls[1]) == 1


def test_expected_failures_have_reasons() -> None:
    no_tag = ScriptedSampler(_says("I cannot decide"), lambda p: {})
    (failure,) = PairwiseJudge(no_tag, readout="expected", sampling=PARAMS).judge([ITEM])
    assert failure.reason == "missing <rating_A> tag"
    no_mass = ScriptedSampler(_says("<rating_A>5</rating_A><rating_B>5</rating_B>"), lambda p: {})
    (failure,) = PairwiseJudge(no_mass, readout="expected", sampling=PARAMS).judge([ITEM])
    assert "no probability on any rating token" in failure.reason
    dead = ScriptedSampler(
        _says("<rating_A>5</rating_A><rating_B>5</rating_B>"),
        lambda p: SamplerError("transport", "refused"),
    )
    (failure,) = PairwiseJudge(dead, readout="expected", sampling=PARAMS).judge([ITEM])
    assert "scoring call failed" in failure.reason and "refused" in failure.reason


def test_pointwise_rating_and_ab_scripted() -> None:
    sampler = ScriptedSampler(
        _says("fine <rating>8</rating>"), lambda p: {"A": ln(0.3), "B": ln(0.1), " A": ln(0.1)}
    )
    (verdict,) = PointwiseJudge(sampler, sampling=PARAMS).judge([ITEM[:2]])
    assert verdict == PointVerdict(8.0, "rating", "fine <rating>8</rating>")
    (ab,) = PointwiseJudge(sampler, mode="ab", sampling=PARAMS).judge([ITEM[:2]])
    assert ab.kind == "p_correct" and ab.value == pytest.approx(0.4 / 0.5)  # (0.3+0.1)/0.5
    assert sampler.score_calls[-1][0] == pointwise_ab_messages(*ITEM[:2])  # read at the first token
    neither = ScriptedSampler(_says(""), lambda p: {"C": 0.0})
    (failure,) = PointwiseJudge(neither, mode="ab", sampling=PARAMS).judge([ITEM[:2]])
    assert isinstance(failure, JudgeFailure) and "neither A nor B" in failure.reason


def test_judge_arguments_validated() -> None:
    sampler = ScriptedSampler(_says(""))
    with pytest.raises(ValueError, match="readout"):
        PairwiseJudge(sampler, readout="mean")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mode"):
        PointwiseJudge(sampler, mode="yesno")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="think_tokens"):
        PairwiseJudge(sampler, think_tokens=0)


def test_tournament_judge_adapter_keeps_failure_reasons() -> None:
    def write(prompt) -> Completion:
        text = _last_text(prompt)
        if "return 0" in text:
            return Completion.failed(SamplerError("http_status", "HTTP 503"))
        return Completion("<rating_A>8</rating_A><rating_B>3</rating_B>", [1], [-1.0], "stop")

    sampler = ScriptedSampler(write)
    judge = PairwiseJudge(sampler, sampling=SamplingParams(seed=10))
    adapter = TournamentJudge(judge, "P", ["return 1", "return 2", "return 0"])
    assert adapter([(0, 1), (2, 0)]) == [(8, 3), None]
    assert adapter([(1, 0)]) == [(8, 3)]
    assert adapter.calls == 2 and adapter.failures == [
        ((2, 0), "sampler failed: http_status: HTTP 503")
    ]
    assert [s.seed for s in sampler.generate_calls] == [10, 11]  # a fresh seed per round


# ---- the tiny model, end to end -------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tiny_model_dir) -> HFSampler:
    return HFSampler.from_pretrained(tiny_model_dir, device="cpu")


def _next_probs(sampler: HFSampler, prompt) -> torch.Tensor:
    ids = sampler.encode(prompt)
    with torch.no_grad():
        logits = sampler.model(input_ids=torch.tensor([ids])).logits[0, -1].float()
    return torch.softmax(logits, dim=-1)


def _token(sampler: HFSampler, text: str) -> int:
    (token_id,) = sampler.tokenizer.encode(text, add_special_tokens=False)
    return token_id


def test_expected_readout_on_tiny_model_matches_a_manual_forward(tiny: HFSampler) -> None:
    """Rating 10 = P("1") P("0" | "1") under the digit-splitting tiny tokenizer."""
    prefix = continuation([{"role": "user", "content": "rate it"}], "ok <rating_A>")
    ((value, mass),) = score_expected_ratings(tiny, [prefix], min_mass=0.0)  # random weights
    probs = _next_probs(tiny, prefix)
    after_one = _next_probs(tiny, continuation(prefix, "1"))
    p = {k: float(probs[_token(tiny, str(k))]) for k in range(2, 10)}
    p_one = float(probs[_token(tiny, "1")])
    p_digit_after_one = {d: float(after_one[_token(tiny, str(d))]) for d in range(10)}
    p[10] = p_one * p_digit_after_one[0]
    p[1] = p_one * (1 - sum(p_digit_after_one.values()))
    assert mass == pytest.approx(sum(p.values()), rel=1e-4)
    assert value == pytest.approx(sum(k * v for k, v in p.items()) / sum(p.values()), rel=1e-4)
    assert 1.0 <= value <= 10.0


def test_pairwise_expected_on_tiny_model_with_scripted_text(tiny: HFSampler) -> None:
    """Real scoring on the tiny model at the positions a (scripted) judgement gives."""

    class ForcedText:
        generate = ScriptedSampler(
            _says("fine <rating_A>7</rating_A>\n<rating_B>2</rating_B>")
        ).generate
        next_token_logprobs = tiny.next_token_logprobs

    # (random weights hold little rating mass: the floor is off for this plumbing check)
    (verdict,) = PairwiseJudge(
        ForcedText(), readout="expected", sampling=PARAMS, min_rating_mass=0.0
    ).judge([ITEM])
    assert isinstance(verdict, PairVerdict)
    assert 1.0 <= verdict.rating_a <= 10.0 and 1.0 <= verdict.rating_b <= 10.0
    assert all(0.0 < m < 1.0 for m in verdict.rating_mass)


def test_every_prompt_and_judge_runs_on_tiny_model(tiny: HFSampler) -> None:
    """Plumbing: the random model judges badly, but every result is a verdict or a reason."""
    items = [ITEM, (ITEM[0], ITEM[2], ITEM[1])]
    judges = [
        PairwiseJudge(tiny, readout="sampled", sampling=PARAMS),
        PairwiseJudge(tiny, readout="expected", sampling=PARAMS, think_tokens=4),
        PairwiseJudge(tiny, domain="math", sampling=PARAMS),
    ]
    for judge in judges:
        results = judge.judge(items)
        assert len(results) == 2
        for r in results:
            assert isinstance(r, PairVerdict) or (isinstance(r, JudgeFailure) and r.reason)
    points = [(p, s) for p, s, _ in items]
    for judge in (
        PointwiseJudge(tiny, mode="rating", sampling=PARAMS),
        PointwiseJudge(tiny, mode="rating", readout="expected", sampling=PARAMS),
        PointwiseJudge(tiny, mode="ab", sampling=PARAMS, think_tokens=3),
        PointwiseJudge(tiny, mode="ab", domain="math", sampling=PARAMS),
    ):
        results = judge.judge(points)
        assert len(results) == 2
        for r in results:
            assert isinstance(r, PointVerdict) or (isinstance(r, JudgeFailure) and r.reason)
    # The no-think A/B read-out is exact: P(A) / (P(A) + P(B)) at the generation prompt.
    # (random weights hold little A/B mass: the floor is off for this exactness check)
    (ab,) = PointwiseJudge(tiny, mode="ab", sampling=PARAMS, min_rating_mass=0.0).judge(points[:1])
    probs = _next_probs(tiny, pointwise_ab_messages(*points[0]))
    p_a, p_b = float(probs[_token(tiny, "A")]), float(probs[_token(tiny, "B")])
    assert isinstance(ab, PointVerdict) and ab.value == pytest.approx(p_a / (p_a + p_b), rel=1e-4)


def test_expected_readout_fails_below_the_mass_floor() -> None:
    # At <rating_A> the judge puts 0.3 on "7" and the rest elsewhere: the expectation would
    # be exactly 7.0, but a 0.3 mass is not an answer. The floor (0.5 by default) says so.
    def score(prompt) -> dict[str, float]:
        return {"7": ln(0.3), "x": ln(0.7)}

    sampler = ScriptedSampler(_says("<rating_A>7</rating_A> <rating_B>7</rating_B>"), score)
    (failure,) = PairwiseJudge(sampler, readout="expected", sampling=PARAMS).judge([ITEM])
    assert isinstance(failure, JudgeFailure)
    assert "rating mass 0.300 below the floor 0.5" in failure.reason
    (verdict,) = PairwiseJudge(
        sampler, readout="expected", sampling=PARAMS, min_rating_mass=0.25
    ).judge([ITEM])
    assert isinstance(verdict, PairVerdict) and verdict.rating_a == pytest.approx(7.0)
    ab = ScriptedSampler(_says(""), lambda p: {"A": ln(0.2), "B": ln(0.1)})
    (point,) = PointwiseJudge(ab, mode="ab", sampling=PARAMS).judge([(ITEM[0], ITEM[1])])
    assert isinstance(point, JudgeFailure) and "A/B mass 0.300 below the floor" in point.reason
    with pytest.raises(ValueError, match="min_rating_mass"):
        PairwiseJudge(sampler, min_rating_mass=1.5)
