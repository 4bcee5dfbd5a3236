"""Prompt builders and the thinking budget (scripted sampler and the tiny model end to end)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pairrl.rollout.prompts import (
    THINK_CLOSE,
    continuation,
    generate_with_thinking_budget,
    generation_messages,
    pairwise_messages,
    pointwise_ab_messages,
    pointwise_messages,
    solution_for_judge,
)
from pairrl.rollout.samplers import Completion, HFSampler, SamplerError, SamplingParams


def _text(messages: list[dict[str, str]]) -> str:
    assert [m["role"] for m in messages] == ["user"]
    return messages[0]["content"]


def test_generation_prompts() -> None:
    code = _text(generation_messages("Return the sum of a list.", "code"))
    assert "Return the sum of a list." in code and "```python" in code
    assert "step by step" in code
    math = _text(generation_messages("What is 2+2?", "math"))
    assert "\\boxed{}" in math and "What is 2+2?" in math
    with pytest.raises(ValueError, match="allowed"):
        generation_messages("x", "poetry")  # type: ignore[arg-type]


def test_pairwise_prompts_follow_the_paper() -> None:
    code = _text(pairwise_messages("PROBLEM", "SOL_A", "SOL_B", "code"))
    for phrase in (
        "Solution A",
        "Solution B",
        "edge cases",
        "more robust",
        "Reason first",
        "<rating_A>k</rating_A>",
        "<rating_B>k</rating_B>",
        "10 means correct and robust",
        "5 means borderline",
        "1 means incorrect",
    ):
        assert phrase in code, phrase
    assert code.index("PROBLEM") < code.index("SOL_A") < code.index("SOL_B")
    math = _text(pairwise_messages("PROBLEM", "SOL_A", "SOL_B", "math"))
    assert "final answer" in math and "<rating_A>k</rating_A>" in math
    assert "robust" not in math


def test_pointwise_prompts() -> None:
    rating = _text(pointwise_messages("P", "S", "code"))
    assert "<rating>k</rating>" in rating and "<rating_A>" not in rating
    ab = _text(pointwise_ab_messages("P", "S", "code"))
    assert "A) yes" in ab and "B) no" in ab and ab.rstrip().endswith("A or B.")
    assert "final answer" in _text(pointwise_ab_messages("P", "S", "math"))


def test_solution_for_judge() -> None:
    completion = "I think...\n```python\ndef f():\n    return 1\n```\nDone."
    assert solution_for_judge(completion, "code") == "```python\ndef f():\n    return 1\n```"
    # No code block: the judge sees the whole (no_code) completion.
    assert solution_for_judge("no code here ", "code") == "no code here"
    assert solution_for_judge("so \\boxed{4}", "math") == "so \\boxed{4}"


def test_continuation() -> None:
    chat = [{"role": "user", "content": "q"}]
    assert continuation(chat, "ab") == [*chat, {"role": "assistant", "content": "ab"}]
    twice = continuation(continuation(chat, "ab"), "cd")
    assert twice[-1] == {"role": "assistant", "content": "abcd"} and len(twice) == 2
    assert continuation("raw ", "x") == "raw x"
    assert chat == [{"role": "user", "content": "q"}]  # inputs are not mutated


class PhaseSampler:
    """Scripted: the thinking phase returns fixed completions; answers echo their prefix."""

    def __init__(self, thinking: list[Completion], answer_error: SamplerError | None = None):
        self.thinking = thinking
        self.answer_error = answer_error
        self.calls: list[tuple[list, int, SamplingParams]] = []

    def generate(
        self, prompts: Sequence, n: int, sampling: SamplingParams
    ) -> list[list[Completion]]:
        self.calls.append((list(prompts), n, sampling))
        if len(self.calls) == 1:
            assert sampling.stop == (THINK_CLOSE,)
            return [self.thinking[i * n : (i + 1) * n] for i in range(len(prompts))]
        if self.answer_error is not None:
            return [[Completion.failed(self.answer_error)] for _ in prompts]
        return [
            [Completion(text="ANSWER", token_ids=[9], logprobs=[-0.5], finish_reason="stop")]
            for _ in prompts
        ]

    def next_token_logprobs(self, prompts, candidates):  # pragma: no cover - unused here
        raise AssertionError("not used")


def test_thinking_budget_forces_close_and_continues() -> None:
    thinking = [
        Completion("long thought", [1, 2, 3], [-1.0] * 3, "length"),  # budget ran out
        Completion("short", [4, 5], [-1.0] * 2, "stop", matched_stop=THINK_CLOSE),  # closed
        Completion("direct answer", [6], [-1.0], "stop"),  # end of sequence, no thinking
        Completion.failed(SamplerError("timeout", "slow")),
    ]
    sampler = PhaseSampler(thinking)
    prompt = [{"role": "user", "content": "q"}]
    answer = SamplingParams(max_tokens=50, stop=("```",), seed=4)
    rows = generate_with_thinking_budget(sampler, [prompt, prompt], 2, answer, think_tokens=3)
    (first, second), (third, fourth) = rows
    assert sampler.calls[0][2].max_tokens == 3 and sampler.calls[0][2].stop == (THINK_CLOSE,)
    answer_prompts, n, answer_params = sampler.calls[1]
    assert n == 1 and answer_params.max_tokens == 50 and answer_params.stop == ("```",)
    assert answer_params.seed == 5  # the answer phase does not replay the thinking stream
    assert answer_prompts[0][-1] == {
        "role": "assistant",
        "content": "long thought</think>\n\n",
    }
    assert first.text == "long thought</think>\n\nANSWER"
    assert first.token_ids == [1, 2, 3, 9] and first.logprobs == [-1.0, -1.0, -1.0, -0.5]
    assert first.finish_reason == "stop"
    assert second.text == "short</think>\n\nANSWER"
    assert third.text == "direct answer" and third.token_ids == [6]  # left as it was
    assert fourth.error is not None and fourth.error.kind == "timeout"


def test_thinking_budget_answer_failure_is_reported() -> None:
    thinking = [Completion("t", [1], [-1.0], "length")]
    sampler = PhaseSampler(thinking, answer_error=SamplerError("transport", "refused"))
    ((c,),) = generate_with_thinking_budget(sampler, ["p"], 1, SamplingParams(), 2)
    assert c.error is not None and c.error.kind == "transport"
    assert "answer phase" in c.error.reason


def test_thinking_budget_on_tiny_model(tiny_model_dir) -> None:
    sampler = HFSampler.from_pretrained(tiny_model_dir, device="cpu")
    prompts = [generation_messages("Add two numbers.", "code"), generation_messages("2+2", "math")]
    params = SamplingParams(temperature=1.0, max_tokens=4, seed=0)
    rows = generate_with_thinking_budget(sampler, prompts, 2, params, think_tokens=5)
    forced = 0
    for row in rows:
        assert len(row) == 2
        for c in row:
            assert c.ok and len(c.token_ids) == len(c.logprobs)
            if THINK_CLOSE + "\n\n" not in c.text:  # ended (end of sequence) while thinking
                assert c.finish_reason == "stop" and len(c.token_ids) <= 5
                continue
            forced += 1
            thought = c.text.split(THINK_CLOSE + "\n\n", 1)[0]
            # The thinking is the first k <= 5 sampled tokens; the answer adds at most 4.
            decoded = [sampler._text(c.token_ids[:k]) for k in range(1, 6)]
            assert thought in decoded
            assert len(c.token_ids) <= 5 + 4
    assert forced >= 1  # a random model does not close thinking by itself in 5 tokens
