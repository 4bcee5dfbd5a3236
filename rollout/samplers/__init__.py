"""Samplers: one protocol (``Sampler``), three backends (HF, vLLM, OpenAI-compatible HTTP).

Backends are imported lazily so that ``import rollout.samplers`` never pulls torch,
transformers, httpx or vLLM until a backend is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rollout.samplers.base import (
    ChatMessage,
    Completion,
    Prompt,
    Sampler,
    SamplerError,
    SamplingParams,
    is_continuation,
)

if TYPE_CHECKING:
    from rollout.samplers.hf import HFSampler
    from rollout.samplers.openai_http import OpenAISampler
    from rollout.samplers.vllm import VLLMSampler

_LAZY = {
    "HFSampler": "rollout.samplers.hf",
    "OpenAISampler": "rollout.samplers.openai_http",
    "VLLMSampler": "rollout.samplers.vllm",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rollout.samplers' has no attribute {name!r}")


__all__ = [
    "ChatMessage",
    "Completion",
    "HFSampler",
    "OpenAISampler",
    "Prompt",
    "Sampler",
    "SamplerError",
    "SamplingParams",
    "VLLMSampler",
    "is_continuation",
]
