"""OpenAI-compatible HTTP sampler (vLLM, SGLang, ``pairrl.rollout.serve``) on plain httpx.

No SDK: the OpenAI SDK retries silently, which multiplies a slow request and hides
failures. Here timeouts are explicit (connect and read), retries are bounded, counted and
only for failures that can pass (transport errors, timeouts, HTTP 408/429/5xx), and every
failure comes back as a :class:`SamplerError` with its reason, never as a default value.
A server that stops with requests in flight is noticed within seconds, not after the read
timeout (a watchdog on its port; ``pairrl.rollout.samplers.http_transport``).

Chat prompts go to ``/chat/completions``; raw text prompts to ``/completions``. A chat
prompt ending in an assistant message is continued with vLLM's ``continue_final_message``
extension (also understood by SGLang and ``pairrl.rollout.serve``). With ``vllm_extensions`` on
(the default) the request also asks for ``return_token_ids`` so completions carry token
ids; servers that ignore it give completions with empty ``token_ids``. Turn it off for
servers that reject unknown fields (the OpenAI API itself). The response's ``usage`` is
passed on as each completion's :class:`TokenUsage` and kept per prompt
(:meth:`OpenAISampler.measured_usage`); None where the server reports none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pairrl.rollout.samplers.base import (
    MAX_TOP_LOGPROBS,
    Completion,
    Prompt,
    SamplerError,
    SamplingParams,
    TokenUsage,
    UsageLog,
    is_continuation,
    logaddexp,
    prompt_seeds,
    validate_prompts,
)
from pairrl.rollout.samplers.http_transport import Batch, HttpTransport


class MalformedResponse(ValueError):
    """A 2xx body that does not follow the OpenAI response schema."""


class OpenAISampler:
    """A :class:`~rollout.samplers.base.Sampler` talking to an OpenAI-compatible server.

    ``base_url`` ends in ``/v1`` (e.g. ``http://localhost:8000/v1``). One request is made
    per prompt (with ``n`` choices), up to ``max_concurrency`` at a time. The watchdog
    (``liveness_interval_s``, ``liveness_failures``) and ``deadline_s`` are described in
    ``pairrl.rollout.samplers.http_transport``.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        connect_timeout: float = 5.0,
        read_timeout: float = 600.0,
        max_retries: int = 2,
        *,
        api_key: str | None = None,
        retry_backoff_s: float = 1.0,
        max_concurrency: int = 32,
        vllm_extensions: bool = True,
        liveness_interval_s: float | None = 2.0,
        liveness_failures: int = 2,
        deadline_s: float | None = None,
    ) -> None:
        self.transport = HttpTransport(
            base_url,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_retries=max_retries,
            retry_backoff_s=retry_backoff_s,
            max_concurrency=max_concurrency,
            headers={"Authorization": f"Bearer {api_key}"} if api_key else {},
            liveness_interval_s=liveness_interval_s,
            liveness_failures=liveness_failures,
            deadline_s=deadline_s,
        )
        self.base_url = self.transport.base_url
        self.model = model
        self.vllm_extensions = vllm_extensions
        self.usage_log = UsageLog()

    def close(self) -> None:
        """Nothing to release: each call opens and closes its own connections."""

    def __enter__(self) -> OpenAISampler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def measured_usage(self, prompt: Prompt) -> TokenUsage | None:
        """The server's ``usage`` for the latest request on ``prompt`` (None if none)."""
        return self.usage_log.usage(prompt)

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any] | SamplerError:
        """POST with bounded retries; the parsed JSON body or the last failure's reason."""
        return self.transport.post_one(path, body)

    # ---- requests --------------------------------------------------------------------------

    def _body(self, prompt: Prompt) -> tuple[str, dict[str, Any]]:
        if isinstance(prompt, str):
            return "/completions", {"model": self.model, "prompt": prompt}
        body: dict[str, Any] = {"model": self.model, "messages": prompt}
        if is_continuation(prompt):
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        return "/chat/completions", body

    def generate(
        self, prompts: Sequence[Prompt], n: int, sampling: SamplingParams
    ) -> list[list[Completion]]:
        """``n`` completions per prompt; a failed request gives ``n`` error completions."""
        validate_prompts(prompts)
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        seeds = (
            [None] * len(prompts) if sampling.seed is None else prompt_seeds(sampling.seed, prompts)
        )
        jobs = list(zip(prompts, seeds, strict=True))
        return self.transport.map(
            lambda b, job: self._generate_one(b, job[0], n, sampling, job[1]), jobs
        )

    async def _generate_one(
        self, batch: Batch, prompt: Prompt, n: int, sampling: SamplingParams, seed: int | None
    ) -> list[Completion]:
        path, body = self._body(prompt)
        body.update(
            n=n,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=sampling.max_tokens,
        )
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if seed is not None:
            body["seed"] = seed
        if path == "/completions":
            body["logprobs"] = sampling.top_logprobs
        else:
            body["logprobs"] = True
            body["top_logprobs"] = sampling.top_logprobs
        if self.vllm_extensions:
            body["return_token_ids"] = True
        data = await self.transport.post(batch, path, body)
        if isinstance(data, SamplerError):
            return [Completion.failed(data) for _ in range(n)]
        try:
            choices = _choices(data, n)
            parse = _chat_completion if path == "/chat/completions" else _text_completion
            usage = _usage(data)
            completions = [
                _with_usage(parse(choice, sampling.top_logprobs), usage, n) for choice in choices
            ]
        except (MalformedResponse, KeyError, TypeError, ValueError) as exc:
            error = SamplerError("malformed_response", f"{path}: {type(exc).__name__}: {exc}")
            return [Completion.failed(error) for _ in range(n)]
        self.usage_log.record(prompt, completions[0].usage)
        return completions

    def next_token_logprobs(
        self, prompts: Sequence[Prompt], candidates: Sequence[str]
    ) -> list[dict[str, float] | SamplerError]:
        """Candidates among the server's top-20 next tokens (greedy one-token request)."""
        validate_prompts(prompts)
        wanted = set(candidates)
        return self.transport.map(lambda b, p: self._score_one(b, p, wanted), list(prompts))

    async def _score_one(
        self, batch: Batch, prompt: Prompt, wanted: set[str]
    ) -> dict[str, float] | SamplerError:
        path, body = self._body(prompt)
        body.update(n=1, temperature=0.0, max_tokens=1)
        if path == "/completions":
            body["logprobs"] = MAX_TOP_LOGPROBS
        else:
            body["logprobs"] = True
            body["top_logprobs"] = MAX_TOP_LOGPROBS
        data = await self.transport.post(batch, path, body)
        if isinstance(data, SamplerError):
            return data
        try:
            (choice,) = _choices(data, 1)
            if path == "/completions":
                tops = _text_completion(choice, MAX_TOP_LOGPROBS).top_logprobs
            else:
                tops = _chat_completion(choice, MAX_TOP_LOGPROBS).top_logprobs
            if not tops:
                raise MalformedResponse("no top logprobs for the first token")
            usage = _usage(data)
        except (MalformedResponse, KeyError, TypeError, ValueError) as exc:
            return SamplerError("malformed_response", f"{path}: {type(exc).__name__}: {exc}")
        if usage is not None:  # a scoring call writes no text: its completion count is 0
            self.usage_log.record(prompt, TokenUsage(usage[0], 0))
        return {token: logprob for token, logprob in tops[0].items() if token in wanted}


# ---- response parsing (pure functions; raise MalformedResponse / KeyError / TypeError) -----


def _choices(data: dict[str, Any], n: int) -> list[dict[str, Any]]:
    choices = data["choices"]
    if not isinstance(choices, list) or len(choices) != n:
        got = len(choices) if isinstance(choices, list) else type(choices).__name__
        raise MalformedResponse(f"expected {n} choices, got {got}")
    return sorted(choices, key=lambda c: int(c["index"]))


def _usage(data: dict[str, Any]) -> tuple[int, int] | None:
    """(prompt_tokens, completion_tokens summed over the choices) from ``usage``, if given."""
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None  # not measured: the counts stay unknown rather than made up
    return prompt, completion


def _with_usage(completion: Completion, usage: tuple[int, int] | None, n: int) -> Completion:
    """The completion with its measured usage: the server's count when it is the only
    choice, else its own token ids (or log-probability entries), one per generated token."""
    if usage is None:
        return completion
    if n == 1:
        own: int | None = usage[1]
    else:
        own = len(completion.token_ids or completion.logprobs) or None
    if own is None:
        return completion
    return replace(completion, usage=TokenUsage(usage[0], own))


def _finish(choice: dict[str, Any]) -> tuple[str, str | None]:
    reason = choice["finish_reason"]
    if reason not in ("stop", "length"):
        raise MalformedResponse(f"finish_reason {reason!r} is neither 'stop' nor 'length'")
    stop_reason = choice.get("stop_reason")
    return reason, stop_reason if isinstance(stop_reason, str) else None


def _merge(pairs: Sequence[tuple[str, float]]) -> dict[str, float]:
    merged: dict[str, float] = {}
    for token, logprob in pairs:
        value = float(logprob)
        merged[token] = logaddexp(merged[token], value) if token in merged else value
    return merged


def _require_tops(tops: list[dict[str, float]], text: str) -> None:
    if text and not tops:
        raise MalformedResponse("top_logprobs were requested but the response has none")


def _token_ids(choice: dict[str, Any]) -> list[int]:
    ids = choice.get("token_ids") or []
    if not all(isinstance(i, int) for i in ids):
        raise MalformedResponse("token_ids must be integers")
    return list(ids)


def _chat_completion(choice: dict[str, Any], top_k: int) -> Completion:
    finish, matched = _finish(choice)
    content = choice["message"]["content"]
    if not isinstance(content, str):
        raise MalformedResponse(f"message.content is {type(content).__name__}, not str")
    entries = (choice.get("logprobs") or {}).get("content") or []
    logprobs = [float(e["logprob"]) for e in entries]
    tops = None
    if top_k:
        tops = [_merge([(t["token"], t["logprob"]) for t in e["top_logprobs"]]) for e in entries]
        _require_tops(tops, content)
    return Completion(
        text=content,
        token_ids=_token_ids(choice),
        logprobs=logprobs,
        finish_reason=finish,  # type: ignore[arg-type]
        matched_stop=matched,
        top_logprobs=tops,
    )


def _text_completion(choice: dict[str, Any], top_k: int) -> Completion:
    finish, matched = _finish(choice)
    text = choice["text"]
    if not isinstance(text, str):
        raise MalformedResponse(f"text is {type(text).__name__}, not str")
    block = choice.get("logprobs") or {}
    logprobs = [float(x) for x in block.get("token_logprobs") or []]
    tops = None
    if top_k:
        tops = [_merge(list((top or {}).items())) for top in block.get("top_logprobs") or []]
        _require_tops(tops, text)
    return Completion(
        text=text,
        token_ids=_token_ids(choice),
        logprobs=logprobs,
        finish_reason=finish,  # type: ignore[arg-type]
        matched_stop=matched,
        top_logprobs=tops,
    )
