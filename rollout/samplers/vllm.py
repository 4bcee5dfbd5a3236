"""vLLM in-process sampler: a thin layer over vLLM's public ``LLM`` / ``SamplingParams`` API.

vLLM is imported only here, when a :class:`VLLMSampler` is built, and needs a CUDA GPU:
install it with the ``pairrl[vllm]`` extra. Prompts are rendered with the model's chat
template here (the same rules as the HF backend) and passed to vLLM as token ids, so a
template's BOS token is never added twice.

``next_token_logprobs`` reads the top ``max_logprobs`` next-token alternatives (vLLM caps
how many it returns): a candidate outside them is absent from the result, as the
``Sampler`` protocol allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pairrl.rollout.samplers.base import (
    Completion,
    Prompt,
    SamplerError,
    SamplingParams,
    logaddexp,
    prompt_seed,
    render_prompt,
    validate_prompts,
)

VLLM_EXTRA_HINT = (
    "vLLM is not installed. It is an optional extra that needs a CUDA GPU: "
    "pip install -e '.[vllm]' (i.e. pairrl[vllm])"
)


def import_vllm() -> Any:
    """Import vLLM or raise ImportError naming the ``pairrl[vllm]`` extra."""
    try:
        import vllm
    except ImportError as exc:
        raise ImportError(VLLM_EXTRA_HINT) from exc
    return vllm


class VLLMSampler:
    """A :class:`~rollout.samplers.base.Sampler` on an in-process ``vllm.LLM``."""

    def __init__(
        self,
        model: str,
        *,
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        max_model_len: int | None = None,
        dtype: str = "auto",
        max_logprobs: int = 20,
        seed: int = 0,
    ) -> None:
        vllm = import_vllm()
        self._vllm = vllm
        self.max_logprobs = max_logprobs
        self.llm = vllm.LLM(
            model=model,
            tensor_parallel_size=tensor_parallel_size,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            dtype=dtype,
            max_logprobs=max_logprobs,
            seed=seed,
        )
        self.tokenizer = self.llm.get_tokenizer()

    def render(self, prompt: Prompt) -> str:
        """The exact text the model sees (chat template applied to messages)."""
        return render_prompt(self.tokenizer, prompt)

    def _token_prompts(self, prompts: Sequence[Prompt]) -> list[dict[str, list[int]]]:
        return [
            {
                "prompt_token_ids": list(
                    self.tokenizer(self.render(p), add_special_tokens=isinstance(p, str))[
                        "input_ids"
                    ]
                )
            }
            for p in prompts
        ]

    def generate(
        self, prompts: Sequence[Prompt], n: int, sampling: SamplingParams
    ) -> list[list[Completion]]:
        """``n`` completions per prompt from one ``LLM.generate`` call."""
        validate_prompts(prompts)
        params = [
            self._vllm.SamplingParams(
                n=n,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                max_tokens=sampling.max_tokens,
                stop=list(sampling.stop) or None,
                seed=None if sampling.seed is None else prompt_seed(sampling.seed, index),
                logprobs=sampling.top_logprobs,  # 0: only the sampled token's log-probability
                skip_special_tokens=False,
            )
            for index in range(len(prompts))
        ]
        try:
            outputs = self.llm.generate(self._token_prompts(prompts), params, use_tqdm=False)
        except Exception as exc:  # vLLM raises many types; report, never crash the caller
            error = SamplerError("backend", f"{type(exc).__name__}: {exc}")
            return [[Completion.failed(error) for _ in range(n)] for _ in prompts]
        return [[self._completion(o, sampling) for o in out.outputs] for out in outputs]

    def _completion(self, output: Any, sampling: SamplingParams) -> Completion:
        if output.finish_reason not in ("stop", "length"):
            return Completion.failed(
                SamplerError("backend", f"finish_reason {output.finish_reason!r}")
            )
        token_ids = list(output.token_ids)
        positions = output.logprobs or []
        logprobs = [float(pos[t].logprob) for t, pos in zip(token_ids, positions, strict=False)]
        tops = None
        if sampling.top_logprobs:
            tops = [
                {
                    str(lp.decoded_token): float(lp.logprob)
                    for lp in sorted(pos.values(), key=lambda lp: lp.rank or 0)[
                        : sampling.top_logprobs
                    ]
                }
                for pos in positions
            ]
        matched = output.stop_reason if isinstance(output.stop_reason, str) else None
        return Completion(
            text=output.text,
            token_ids=token_ids,
            logprobs=logprobs,
            finish_reason=output.finish_reason,
            matched_stop=matched,
            top_logprobs=tops,
        )

    def next_token_logprobs(
        self, prompts: Sequence[Prompt], candidates: Sequence[str]
    ) -> list[dict[str, float] | SamplerError]:
        """Candidates among the top ``max_logprobs`` next tokens, with their log-probabilities."""
        validate_prompts(prompts)
        params = self._vllm.SamplingParams(
            n=1, temperature=0.0, max_tokens=1, logprobs=self.max_logprobs
        )
        try:
            outputs = self.llm.generate(self._token_prompts(prompts), params, use_tqdm=False)
        except Exception as exc:
            error = SamplerError("backend", f"{type(exc).__name__}: {exc}")
            return [error for _ in prompts]
        wanted = set(candidates)
        results: list[dict[str, float] | SamplerError] = []
        for out in outputs:
            positions = out.outputs[0].logprobs
            if not positions:
                results.append(SamplerError("backend", "vLLM returned no logprobs"))
                continue
            found: dict[str, float] = {}
            for lp in positions[0].values():
                token = str(lp.decoded_token)
                if token in wanted:
                    found[token] = logaddexp(found.get(token, float("-inf")), float(lp.logprob))
            results.append(found)
        return results
