"""The in-process vLLM sampler on the tiny model (vLLM's CPU build here), checked against
transformers: seeded sampling, log-probabilities, next-token scores, the CPU backend's
quirks pairrl avoids, the benchmark on the vLLM engine, and the CPU weight reload that
vLLM colocate training uses.

One engine for the module (``pairrl.eval.models.vllm_sampler``, the benchmark's own, so
the benchmark test reuses it); the weight-reload test comes last and restores the weights.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from vllm_support import require_vllm

from pairrl.rollout.samplers import SamplingParams

pytestmark = pytest.mark.slow

CHAT = [{"role": "user", "content": "write a python function that returns the sum"}]
PROMPTS: list[Any] = [CHAT, "def add(x, y):", [*CHAT, {"role": "assistant", "content": "def"}]]


@pytest.fixture(scope="module")
def sampler(tiny_model_dir: Path) -> Iterator[Any]:
    require_vllm()
    from pairrl.eval.models import vllm_sampler

    # float32 named: the log-probs are compared with transformers' float32 ones
    yield vllm_sampler(str(tiny_model_dir), "float32")


@pytest.fixture(scope="module")
def hf(tiny_model_dir: Path) -> Any:
    from pairrl.tiny_model import load_tiny_model

    model, _ = load_tiny_model(tiny_model_dir)
    return model.eval()


def hf_logprobs(model: Any, ids: list[int]) -> torch.Tensor:
    """log p(ids[i] | ids[:i]) for i >= 1 under the full softmax (temperature 1)."""
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), -1)
    return logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]


def test_the_cpu_build_is_found_and_reported(sampler: Any) -> None:
    from pairrl.doctor import check_vllm
    from pairrl.rollout.samplers.vllm import installed_vllm

    build = installed_vllm()
    assert build is not None
    check = check_vllm()
    assert check.ok and f"{build.distribution} {build.version}" in check.detail
    if sampler.cpu:
        assert build.cpu and "CPU backend" in check.detail and "NCCL" in check.detail
        config = sampler.llm.llm_engine.model_config
        assert str(config.dtype) == "torch.float32"  # not vLLM's bfloat16 "auto" on CPU
        assert config.enforce_eager
        assert torch.set_num_threads.__module__ == "torch"  # the worker's no-op was undone


def test_seeded_sampling_is_reproducible(sampler: Any) -> None:
    params = SamplingParams(temperature=1.0, max_tokens=12, seed=7, top_logprobs=3)
    first = sampler.generate(PROMPTS, 3, params)
    again = sampler.generate(PROMPTS, 3, params)
    other = sampler.generate(PROMPTS, 3, SamplingParams(temperature=1.0, max_tokens=12, seed=8))
    ids = [[c.token_ids for c in row] for row in first]
    assert ids == [[c.token_ids for c in row] for row in again]
    assert ids != [[c.token_ids for c in row] for row in other]
    for prompt, row in zip(PROMPTS, first, strict=True):
        assert len(row) == 3
        for c in row:
            assert c.ok and c.finish_reason in ("stop", "length") and c.token_ids
            assert len(c.logprobs) == len(c.token_ids) == len(c.top_logprobs)
            assert c.usage.prompt_tokens == len(sampler.encode(prompt))
            assert c.usage.completion_tokens == len(c.token_ids)


def test_logprobs_agree_with_transformers(sampler: Any, hf: Any) -> None:
    """Sampled-token log-probs and next-token scores are the full softmax's (float32)."""
    rows = sampler.generate(PROMPTS, 2, SamplingParams(temperature=1.0, max_tokens=16, seed=1))
    worst = 0.0
    for prompt, row in zip(PROMPTS, rows, strict=True):
        ids = sampler.encode(prompt)
        for c in row:
            expected = hf_logprobs(hf, ids + c.token_ids)[len(ids) - 1 :]
            worst = max(worst, float((expected - torch.tensor(c.logprobs)).abs().max()))
    assert worst < 1e-3, worst
    tokenizer = sampler.tokenizer
    for prompt in PROMPTS:
        ids = sampler.encode(prompt)
        with torch.no_grad():
            logp = torch.log_softmax(hf(torch.tensor([ids])).logits[0, -1].float(), -1)
        top = torch.topk(logp, 6).indices.tolist()
        wanted = {tokenizer.decode([t], skip_special_tokens=False): float(logp[t]) for t in top}
        wanted = {t: v for t, v in wanted.items() if "\ufffd" not in t}  # partial UTF-8 bytes
        assert len(wanted) >= 3
        (scores,) = sampler.next_token_logprobs([prompt], list(wanted))
        assert set(scores) == set(wanted)
        assert max(abs(scores[t] - wanted[t]) for t in wanted) < 1e-3


def test_seeded_batch_of_long_prompts_survives(sampler: Any) -> None:
    """8 seeded prompts of ~700 tokens x n=8: with chunked prefill the CPU engine dies on
    such a batch (``CPU Generator does not use offset``); pairrl starts it without."""
    prompts = [f"{i} " + "compare solution a and solution b " * 120 for i in range(8)]
    assert min(len(sampler.encode(p)) for p in prompts) > 600
    rows = sampler.generate(prompts, 8, SamplingParams(temperature=0.6, max_tokens=8, seed=3))
    assert all(c.ok for row in rows for c in row), rows[0][0].error
    again = sampler.generate(PROMPTS, 1, SamplingParams(max_tokens=2, seed=0))
    assert all(row[0].ok for row in again)  # the engine is still alive


def test_prompt_longer_than_the_context_fails_alone(sampler: Any) -> None:
    long = "word " * (sampler.max_model_len + 10)
    rows = sampler.generate([long, "def f():"], 2, SamplingParams(max_tokens=4, seed=0))
    assert [c.ok for c in rows[0]] == [False, False] and rows[0][0].error.kind == "invalid_request"
    assert "does not fit" in rows[0][0].error.reason
    assert all(c.ok for c in rows[1])
    scores = sampler.next_token_logprobs([long, "def f():"], ["x"])
    assert scores[0].kind == "invalid_request" and isinstance(scores[1], dict)


def test_benchmark_on_the_vllm_engine(
    sampler: Any, tiny_model_dir: Path, shared_data_dir: Path, tmp_path: Path
) -> None:
    """`candidates.engine: vllm` samples through the in-process engine, and the gate PASSes."""
    from pairrl.config import parse_config
    from pairrl.eval.config import EvalConfig
    from pairrl.eval.runner import run_eval

    cfg = parse_config(
        {
            "kind": "eval",
            "out_dir": str(tmp_path / "ev"),
            "tasks": {"path": str(shared_data_dir / "mbpp_sanitized.json"), "limit": 3},
            # the fixture's engine (float32), shared, not a second one in the rule's dtype
            "candidates": {"source": "model", "model": str(tiny_model_dir), "engine": "vllm",
                           "dtype": "float32", "k": 2, "sampling": {"max_tokens": 24}},
            "selectors": ["random", "first", "oracle"],
            "executor": {"workers": 1},
            "bootstrap": 200,
        },
        EvalConfig,
    )  # fmt: skip
    requests = sampler.usage_log.requests
    outcome = run_eval(cfg, show_progress=False)
    assert sampler.usage_log.requests - requests == 3  # one request per task
    assert outcome.gate.verdict == "PASS", outcome.gate.reasons
    records = [json.loads(line) for line in (tmp_path / "ev" / "records.jsonl").open()]
    assert sum(r.get("kind") == "candidate" for r in records) == 6


def _engine_prompt_logprobs(llm: Any, ids: list[int]) -> torch.Tensor:
    from vllm import SamplingParams as VSamplingParams

    params = VSamplingParams(max_tokens=1, temperature=1.0, prompt_logprobs=0)
    (out,) = llm.generate([{"prompt_token_ids": ids}], params, use_tqdm=False)
    return torch.tensor([out.prompt_logprobs[i][ids[i]].logprob for i in range(1, len(ids))])


def test_cpu_weight_reload_reaches_the_kernels(sampler: Any, tiny_model_dir: Path) -> None:
    """What vLLM colocate training does after each step, on this engine: new weights in,
    logits as transformers computes them with those weights. Without re-packing the tied
    lm_head the logits stay stale (the negative control). The weights are restored."""
    if not sampler.cpu:
        pytest.skip("the CPU reload route applies to vLLM's CPU backend only")
    from pairrl.tiny_model import load_tiny_model
    from pairrl.train.vllm_cpu import reload_weights

    model, _ = load_tiny_model(tiny_model_dir)
    model.eval()
    original = {k: v.clone() for k, v in model.state_dict().items()}
    ids = sampler.encode([*CHAT, {"role": "assistant", "content": "def f(xs): return sum(xs)"}])

    def perturb(seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.05 * torch.randn(p.shape, generator=generator))

    def gap() -> float:
        return float(
            (_engine_prompt_logprobs(sampler.llm, ids) - hf_logprobs(model, ids)).abs().max()
        )

    try:
        perturb(1)
        assert reload_weights(sampler.llm, model.named_parameters())  # tied: lm_head re-packed
        assert gap() < 1e-3
        perturb(2)  # the reload alone, as a naive port of TRL's sync would do it
        worker = sampler.llm.llm_engine.model_executor.driver_worker
        worker.reload_weights(weights_iterator=model.named_parameters(), is_checkpoint_format=True)
        sampler.llm.reset_prefix_cache()
        assert gap() > 0.05, "without the re-tie the logits should be stale"
    finally:
        model.load_state_dict(original)
        reload_weights(sampler.llm, model.named_parameters())
    assert gap() < 1e-3
