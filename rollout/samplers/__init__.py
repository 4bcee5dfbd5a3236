"""Samplers: one protocol (``Sampler``), three backends (HF, vLLM, OpenAI-compatible HTTP).

Backends are imported lazily so that ``import pairrl.rollout.samplers`` never pulls torch,
transformers, httpx or vLLM until a backend is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pairrl.rollout.samplers.base import (
    ChatMessage,
    Completion,
    Prompt,
    Sampler,
    SamplerError,
    SamplingParams,
    TokenUsage,
    is_continuation,
)

if TYPE_CHECKING:
    from pairrl.rollout.samplers.hf import HFSampler
    from pairrl.rollout.samplers.openai_http import OpenAISampler
    from pairrl.rollout.samplers.vllm import VLLMSampler

_LAZY = {
    "HFSampler": "pairrl.rollout.samplers.hf",
    "OpenAISampler": "pairrl.rollout.samplers.openai_http",
    "VLLMSampler": "pairrl.rollout.samplers.vllm",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'pairrl.rollout.samplers' has no attribute {name!r}")


__all__ = [
    "ChatMessage",
    "Completion",
    "HFSampler",
    "OpenAISampler",
    "Prompt",
    "Sampler",
    "SamplerError",
    "SamplingParams",
    "TokenUsage",
    "VLLMSampler",
    "is_continuation",
]
