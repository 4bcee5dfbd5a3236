"""The tiny local model: tokenizer round trip, chat template, determinism, generation."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch

from pairrl.tiny_model import build_tiny_model, load_tiny_model


def _digests(folder: Path) -> dict[str, str]:
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(folder.iterdir())}


def test_tokenizer_round_trip_and_digits(tiny_model_dir: Path) -> None:
    _, tokenizer = load_tiny_model(tiny_model_dir)
    text = "def add(a, b):\n    return a + b  # 1234 <rating_A>10</rating_A> ünïcode ✓"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == text
    # Digits are split one per token, so "10" is two tokens and "1234" four.
    assert tokenizer.tokenize("1234") == ["1", "2", "3", "4"]
    assert [t.lstrip("Ġ") for t in tokenizer.tokenize(" 10")][-2:] == ["1", "0"]


def test_special_tokens_and_padding_side(tiny_model_dir: Path) -> None:
    _, tokenizer = load_tiny_model(tiny_model_dir)
    assert tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.pad_token == "<|endoftext|>"
    assert tokenizer.pad_token_id != tokenizer.eos_token_id
    assert tokenizer.padding_side == "left"
    for token in ("<|im_start|>", "<|im_end|>", "<think>", "</think>"):
        assert len(tokenizer.tokenize(token)) == 1, token
    _, right = load_tiny_model(tiny_model_dir, padding_side="right")
    assert right.padding_side == "right"


def test_chat_template(tiny_model_dir: Path) -> None:
    _, tokenizer = load_tiny_model(tiny_model_dir)
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    rendered = tokenizer.apply_chat_template(messages, tokenize=False)
    assert rendered == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nyo<|im_end|>\n"
    prompt = tokenizer.apply_chat_template(messages[:1], tokenize=False, add_generation_prompt=True)
    assert prompt == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    # The assistant turn is marked for assistant-only SFT loss.
    out = tokenizer.apply_chat_template(
        messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    mask = out["assistant_masks"]
    assistant_ids = [i for i, m in zip(out["input_ids"], mask, strict=True) if m]
    assert tokenizer.decode(assistant_ids) == "yo<|im_end|>"


def test_same_seed_same_files_other_seed_differs(tmp_path: Path) -> None:
    first = build_tiny_model(tmp_path / "a", seed=3)
    second = build_tiny_model(tmp_path / "b", seed=3)
    other = build_tiny_model(tmp_path / "c", seed=4)
    assert _digests(first) == _digests(second)
    assert _digests(first)["model.safetensors"] != _digests(other)["model.safetensors"]


def test_size_and_generation(tiny_model_dir: Path) -> None:
    model, tokenizer = load_tiny_model(tiny_model_dir)
    params = sum(p.numel() for p in model.parameters())
    assert 100_000 < params < 1_000_000
    assert model.config.model_type == "qwen3"
    batch = tokenizer(
        ["hello", "a much longer prompt than the first"], return_tensors="pt", padding=True
    )
    torch.manual_seed(0)
    out = model.generate(**batch, max_new_tokens=8, do_sample=True)
    prompt_len = batch["input_ids"].shape[1]
    assert out.shape[0] == 2
    assert prompt_len < out.shape[1] <= prompt_len + 8
    assert torch.equal(out[:, :prompt_len], batch["input_ids"])
    # Left padding: the last prompt position holds a real token for both rows.
    assert (batch["attention_mask"][:, -1] == 1).all()


@pytest.mark.parametrize("seed", [0])
def test_reloaded_model_is_deterministic_under_seed(tiny_model_dir: Path, seed: int) -> None:
    model, tokenizer = load_tiny_model(tiny_model_dir)
    batch = tokenizer(["def f(x):"], return_tensors="pt")
    runs = []
    for _ in range(2):
        torch.manual_seed(seed)
        runs.append(model.generate(**batch, max_new_tokens=6, do_sample=True).tolist())
    assert runs[0] == runs[1]
