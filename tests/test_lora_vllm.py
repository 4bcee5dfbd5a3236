"""`vllm serve` loads a merged LoRA export: the tokens it samples have the log-probabilities
that the base model with the adapter gives them (transformers + PEFT), so serving the export
is serving the trained adapter."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_lora import export_cli, random_adapter
from vllm_support import VLLMServer, require_vllm

pytestmark = pytest.mark.slow

SERVED = "lora-merged"


def test_vllm_serves_the_merged_export(tiny_model_dir: Path, tmp_path: Path) -> None:
    require_vllm()
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from pairrl.rollout.samplers import OpenAISampler, SamplingParams

    adapter = random_adapter(tiny_model_dir, tmp_path / "adapter")
    code, out = export_cli([str(adapter), "--out", str(tmp_path / "merged")])
    assert code == 0, out
    server = VLLMServer(tmp_path / "merged", tmp_path / "server.log", served=SERVED).start()
    try:
        with OpenAISampler(server.url, SERVED, max_retries=0) as remote:
            params = SamplingParams(temperature=1.0, max_tokens=12, seed=3)
            rows = remote.generate(["def add(x, y):"], 2, params)
    finally:
        server.stop()
    tokenizer = AutoTokenizer.from_pretrained(adapter)
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    model = PeftModel.from_pretrained(base, adapter).eval()
    ids = tokenizer("def add(x, y):")["input_ids"]
    for c in rows[0]:
        assert c.ok and c.token_ids, c
        with torch.no_grad():
            logp = torch.log_softmax(
                model(input_ids=torch.tensor([ids + c.token_ids])).logits[0], -1
            )
        hf = [float(logp[len(ids) + j - 1, t]) for j, t in enumerate(c.token_ids)]
        assert max(abs(a - b) for a, b in zip(hf, c.logprobs, strict=True)) < 1e-4
