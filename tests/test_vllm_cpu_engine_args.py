"""The engine arguments the CPU colocate build gets (``pairrl.train.vllm_cpu.cpu_colocate``):
without chunked prefill a batch must hold the longest sequence, so the batched-token budget
is at least the context: the config's ``engine.max_model_len`` or, left open, the model's
own (SmolLM2's 8192 is above TRL's 4096, which vLLM refuses)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pairrl.train import vllm_cpu

pytest.importorskip("vllm", reason="vLLM is not installed: the colocated engine is not used")


@pytest.mark.parametrize(("max_model_len", "budget"), [(None, 8192), (2048, 4096), (6000, 6000)])
def test_the_batched_token_budget_holds_the_longest_sequence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, max_model_len: int | None, budget: int
) -> None:
    import trl.generation.vllm_generation as vllm_generation

    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "llama", "max_position_embeddings": 8192})
    )
    seen: dict[str, Any] = {}
    monkeypatch.setattr(vllm_generation, "LLM", lambda **kwargs: seen.update(kwargs))
    monkeypatch.setattr(vllm_cpu, "wants_cpu_colocate", lambda args: True)
    with vllm_cpu.cpu_colocate(None, dtype="float32") as applied:
        vllm_generation.LLM(
            model=str(tmp_path), max_model_len=max_model_len, max_num_batched_tokens=4096
        )
    assert applied
    assert seen["max_num_batched_tokens"] == budget
    assert seen["dtype"] == "float32" and seen["enable_chunked_prefill"] is False
