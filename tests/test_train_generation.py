"""Per-phase sampling through TRL's generation path (its private symbols are pinned in
tests/test_trl_seam.py)."""

from __future__ import annotations

from types import SimpleNamespace

from transformers import GenerationConfig

from pairrl.rollout.config import PhaseSamplingConfig, SamplingConfig
from pairrl.rollout.trl_generation import TRLGenerator, phase_sampling


def _fake_trainer(seen: list) -> SimpleNamespace:
    config = GenerationConfig(max_new_tokens=99, temperature=0.6, top_p=0.95, do_sample=True)
    trainer = SimpleNamespace(
        use_vllm=False,
        generation_config=config,
        generation_kwargs={"max_new_tokens": 99, "temperature": 0.6},
    )

    def generate(prompt_ids, images, multimodal_fields, num_generations):
        cfg = trainer.generation_config
        seen.append(
            (
                cfg.max_new_tokens,
                cfg.temperature,
                cfg.top_p,
                trainer.generation_kwargs["max_new_tokens"],
            )
        )
        return [[7, 0] for _ in prompt_ids], None

    trainer._generate_single_turn = generate
    return trainer


def test_phase_settings_swap_in_and_back() -> None:
    seen: list = []
    trainer = _fake_trainer(seen)
    sampling = PhaseSamplingConfig(
        solution=SamplingConfig(temperature=0.6, top_p=0.95, max_tokens=40),
        judgement=SamplingConfig(temperature=1.0, top_p=0.5, max_tokens=12),
    )
    gen = TRLGenerator(trainer, sampling)
    ids, logprobs = gen.generate([[1, 2], [3]], "judgement", 1)
    assert ids == [[7, 0], [7, 0]] and logprobs is None
    gen.generate([[1]], "solution", 4)
    assert seen == [(12, 1.0, 0.5, 12), (40, 0.6, 0.95, 40)]
    # Restored after each call.
    assert trainer.generation_config.max_new_tokens == 99
    assert trainer.generation_kwargs == {"max_new_tokens": 99, "temperature": 0.6}


def test_vllm_engine_settings_swap() -> None:
    engine = SimpleNamespace(temperature=0.6, top_p=0.95, max_completion_length=99)
    trainer = SimpleNamespace(use_vllm=True, vllm_generation=engine)
    with phase_sampling(trainer, SamplingConfig(temperature=1.0, top_p=0.5, max_tokens=12)):
        assert (engine.temperature, engine.top_p, engine.max_completion_length) == (1.0, 0.5, 12)
    assert (engine.temperature, engine.top_p, engine.max_completion_length) == (0.6, 0.95, 99)
