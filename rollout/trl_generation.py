"""Generation through TRL's own path, with per-phase sampling settings.

``TRLGenerator`` calls ``GRPOTrainer._generate_single_turn``: the one method through which
TRL generates with the policy, whatever the engine (transformers ``generate`` with
DeepSpeed/FSDP weight gathering, vLLM colocate or vLLM server with weight sync). It is a
private method, so its signature is pinned (``pairrl.train.trl_seam``, TRL is pinned to
1.16 in pyproject). For each phase the sampling settings (temperature, top-p, max new tokens)
are swapped into TRL's generation config (transformers) or its vLLM generation object,
and restored afterwards.

The trainer scores each sample's log-probabilities at the temperature of its phase
(``pairrl.train.row_temperatures``); the paper uses one temperature (0.6) for both.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pairrl.rollout.config import PhaseSamplingConfig, SamplingConfig

__all__ = ["TRLGenerator", "phase_sampling"]


@contextmanager
def phase_sampling(trainer: Any, params: SamplingConfig) -> Iterator[None]:
    """Temporarily set TRL's sampling temperature, top-p and max tokens to ``params``."""
    if getattr(trainer, "use_vllm", False):
        engine = trainer.vllm_generation
        saved = (engine.temperature, engine.top_p, engine.max_completion_length)
        engine.temperature, engine.top_p, engine.max_completion_length = (
            params.temperature,
            params.top_p,
            params.max_tokens,
        )
        try:
            yield
        finally:
            engine.temperature, engine.top_p, engine.max_completion_length = saved
        return
    saved_config, saved_kwargs = trainer.generation_config, trainer.generation_kwargs
    overrides = {
        "max_new_tokens": params.max_tokens,
        "temperature": params.temperature,
        "top_p": params.top_p,
    }
    config = copy.deepcopy(saved_config)
    config.update(**overrides)
    trainer.generation_config = config
    trainer.generation_kwargs = {**saved_kwargs, **overrides}
    try:
        yield
    finally:
        trainer.generation_config, trainer.generation_kwargs = saved_config, saved_kwargs


class TRLGenerator:
    """``pairrl.rollout.pairrl_rollout.Generator`` backed by the trainer's own generation path."""

    def __init__(self, trainer: Any, sampling: PhaseSamplingConfig) -> None:
        self.trainer = trainer
        self.sampling = sampling

    def generate(
        self, prompt_ids: list[list[int]], phase: str, num_generations: int
    ) -> tuple[list[list[int]], list[list[float]] | None]:
        """Completion ids (EOS kept, nothing after it) and sampled-token logprobs (vLLM only)."""
        params = {"solution": self.sampling.solution, "judgement": self.sampling.judgement}[phase]
        with phase_sampling(self.trainer, params):
            completion_ids, logprobs = self.trainer._generate_single_turn(
                prompt_ids, None, {}, num_generations
            )
        completion_ids = [list(map(int, ids)) for ids in completion_ids]
        return completion_ids, logprobs
