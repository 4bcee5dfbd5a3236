"""The sampler interface every backend implements (HF transformers, vLLM, OpenAI-compatible HTTP).

Prompts are either raw text (``str``, sent to the model verbatim) or chat messages
(``list[dict]`` with ``role`` and ``content``). Chat messages are rendered with the model's
chat template and a generation prompt, except when the last message has role
``"assistant"``: then that message is a partial answer and is *continued* (no new turn is
opened). Continuation is how the thinking budget forces ``</think>`` and how judges read
rating probabilities at a point inside their own answer.

Failures are values, never defaults: a completion that could not be produced carries a
:class:`SamplerError` in ``error`` (with empty text and no finish reason), and a scoring
call that failed returns a :class:`SamplerError` in place of its dict.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

ChatMessage = dict[str, str]
Prompt = str | list[ChatMessage]
FinishReason = Literal["stop", "length"]

# What went wrong, in a few fixed words that reports can count by.
ErrorKind = Literal[
    "transport",  # connection refused/reset, DNS, TLS: the request never got an answer
    "timeout",  # connect or read timeout
    "http_status",  # the server answered with a non-2xx status
    "malformed_response",  # 2xx but the body is not what the OpenAI API specifies
    "invalid_request",  # the caller's input cannot be served (e.g. prompt longer than context)
    "backend",  # the local engine raised
    "deadline",  # the run's deadline for remote calls had passed: not sent, or abandoned
]

MAX_TOP_LOGPROBS = 20  # the OpenAI API's and vLLM's default cap


@dataclass(frozen=True)
class SamplerError:
    """Why a generation or scoring call produced nothing; ``kind`` is one of ErrorKind."""

    kind: ErrorKind
    reason: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.reason}"


@dataclass(frozen=True)
class SamplingParams:
    """Decoding settings shared by all backends (OpenAI semantics).

    ``temperature == 0`` is greedy decoding. ``stop`` strings end a completion and are not
    included in its text (``Completion.matched_stop`` says which one fired). ``seed`` makes
    sampling reproducible on backends that support it (HF: the same random draws in any
    batch, see :func:`prompt_seeds`; tokens equal up to the float rounding of padded
    batches).
    ``top_logprobs`` > 0 asks for that many most likely tokens per generated position.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    seed: int | None = None
    top_logprobs: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.temperature <= 10.0:
            raise ValueError(f"temperature must be in [0, 10], got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if isinstance(self.stop, str) or any(not isinstance(s, str) or not s for s in self.stop):
            raise ValueError(f"stop must be a tuple of non-empty strings, got {self.stop!r}")
        if not 0 <= self.top_logprobs <= MAX_TOP_LOGPROBS:
            raise ValueError(
                f"top_logprobs must be in 0..{MAX_TOP_LOGPROBS}, got {self.top_logprobs}"
            )
        object.__setattr__(self, "stop", tuple(self.stop))

    @property
    def greedy(self) -> bool:
        """Whether decoding is greedy (temperature 0)."""
        return self.temperature == 0.0


@dataclass(frozen=True)
class TokenUsage:
    """Tokens an engine reports having read and written for one completion (measured by the
    engine or server, never estimated): the prompt's tokens and this completion's own."""

    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Completion:
    """One sampled continuation, or a failure (``error`` set, nothing else meaningful).

    ``token_ids`` and ``logprobs`` cover the sampled tokens in order (one log-probability
    per token, under the sampling distribution's model logits at temperature 1 on HF and as
    the server reports on HTTP). ``top_logprobs``, when requested, holds per position a map
    from token string to log-probability. ``finish_reason`` is ``"stop"`` (end of sequence
    or a stop string) or ``"length"`` (hit ``max_tokens``). ``usage`` is the engine's own
    token count where it reports one (vLLM, and servers that return ``usage``), else None.
    """

    text: str
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish_reason: FinishReason | None = None
    matched_stop: str | None = None
    top_logprobs: list[dict[str, float]] | None = None
    error: SamplerError | None = None
    usage: TokenUsage | None = None

    @property
    def ok(self) -> bool:
        """True when the completion was produced (no error)."""
        return self.error is None

    @classmethod
    def failed(cls, error: SamplerError) -> Completion:
        """A completion that carries only its failure."""
        return cls(text="", error=error)


@runtime_checkable
class Sampler(Protocol):
    """What judges, the trainer and the benchmark need from a model."""

    def generate(
        self, prompts: Sequence[Prompt], n: int, sampling: SamplingParams
    ) -> list[list[Completion]]:
        """Return ``n`` completions per prompt, in prompt order (failures as error completions)."""
        ...

    def next_token_logprobs(
        self, prompts: Sequence[Prompt], candidates: Sequence[str]
    ) -> list[dict[str, float] | SamplerError]:
        """Per prompt, the log-probability that the next token is each candidate string.

        A candidate is matched against single vocabulary tokens by their decoded string.
        Candidates that are not one token (e.g. ``"10"`` under a digit-splitting tokenizer)
        or that fall outside the top log-probabilities a server returns are *absent* from
        the dict: the caller decides what absence means (see ``pairrl.rollout.judges``).
        """
        ...


class UsageLog:
    """The measured :class:`TokenUsage` of the latest request made for each prompt.

    Samplers whose engine reports usage keep one, so that callers holding only a prompt
    (a judge's cost accounting) can read what the engine counted for it: ``usage(prompt)``,
    None where nothing was measured; ``requests``, ``prompt_tokens`` and
    ``completion_tokens`` total every measured request. Bounded (oldest entries dropped)
    and thread-safe.
    """

    def __init__(self, capacity: int = 16384) -> None:
        self._entries: OrderedDict[str, TokenUsage] = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()
        self.requests = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    @staticmethod
    def _key(prompt: Prompt) -> str:
        return hashlib.sha1(json.dumps(prompt, sort_keys=True).encode()).hexdigest()

    def record(self, prompt: Prompt, usage: TokenUsage | None) -> None:
        """Remember ``usage`` for ``prompt`` (nothing when it is None)."""
        if usage is None:
            return
        key = self._key(prompt)
        with self._lock:
            self.requests += 1
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens
            self._entries[key] = usage
            self._entries.move_to_end(key)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)

    def usage(self, prompt: Prompt) -> TokenUsage | None:
        """The latest measured usage for ``prompt``, or None."""
        with self._lock:
            return self._entries.get(self._key(prompt))


def prompt_seeds(seed: int, prompts: Sequence[Prompt]) -> list[int]:
    """The seed of each prompt of a seeded ``generate`` call.

    It comes from the call's seed, the prompt's content and how many identical prompts came
    before it in the call, never from its position: a prompt samples alike alone, in any
    batch and in any order (a benchmark's verdicts do not depend on which others were
    computed with them), and repeats of one prompt in a call are distinct draws. Every
    backend uses it; over HTTP each request carries its prompt's seed, and a server takes
    a request's seed as the seed of its prompts (as vLLM's does).
    """
    seen: dict[str, int] = {}
    out = []
    for prompt in prompts:
        text = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True)
        rank = seen.get(text, 0)
        seen[text] = rank + 1
        digest = hashlib.blake2b(f"{seed}\0{rank}\0{text}".encode(), digest_size=8).digest()
        out.append(int.from_bytes(digest, "big") % (2**31 - 1))
    return out


def is_continuation(prompt: Prompt) -> bool:
    """Whether a chat prompt ends in a partial assistant message that must be continued."""
    return isinstance(prompt, list) and bool(prompt) and prompt[-1].get("role") == "assistant"


def validate_prompts(prompts: Sequence[Prompt]) -> None:
    """Raise ValueError naming the first malformed prompt (wrong type or message shape)."""
    if isinstance(prompts, str):
        raise ValueError("prompts must be a sequence of prompts, not one string")
    for index, prompt in enumerate(prompts):
        if isinstance(prompt, str):
            continue
        if not isinstance(prompt, list) or not prompt:
            raise ValueError(f"prompt {index} must be a str or a non-empty list of messages")
        for message in prompt:
            if (
                not isinstance(message, dict)
                or not isinstance(message.get("role"), str)
                or not isinstance(message.get("content"), str)
            ):
                raise ValueError(
                    f"prompt {index}: each message needs str 'role' and 'content', got {message!r}"
                )


def logaddexp(a: float, b: float) -> float:
    """log(exp(a) + exp(b)) without overflow (for merging tokens that decode alike)."""
    high, low = max(a, b), min(a, b)
    return high if low == -math.inf else high + math.log1p(math.exp(low - high))


def render_prompt(tokenizer: Any, prompt: Prompt) -> str:
    """The exact text a local model sees for ``prompt``: text as is, messages through the
    chat template (continuing a final assistant message instead of opening a new turn)."""
    if isinstance(prompt, str):
        return prompt
    continuation = is_continuation(prompt)
    return tokenizer.apply_chat_template(
        prompt,
        tokenize=False,
        add_generation_prompt=not continuation,
        continue_final_message=continuation,
    )
