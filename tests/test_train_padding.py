"""Padding buckets for the update's forward passes (``pairrl.train.padding.forward_in_buckets``)."""

from __future__ import annotations

from pathlib import Path

import torch

from pairrl.train.padding import forward_in_buckets, padding_buckets


def test_padding_buckets_split_narrow_from_wide_rows() -> None:
    # widths [10, 3, 10, 3]; sorted rows 1, 3, 0, 2 with widths 3, 3, 10, 10.
    # No split: 4 x 10 = 40. Split after 1 row: 1x3 + 3x10 = 33; after 2: 2x3 + 2x10 = 26;
    # after 3: 3x10 + 1x10 = 40. Best: split after 2 (saves 14/40 = 35%) -> [[1, 3], [0, 2]].
    assert padding_buckets([10, 3, 10, 3]) == [[1, 3], [0, 2]]


def test_padding_buckets_keep_one_bucket_when_splitting_saves_nothing() -> None:
    # equal widths: every split costs 3 x 5 = 15, the same as no split: one bucket
    assert padding_buckets([5, 5, 5]) == [[0, 1, 2]]
    # [4, 5, 5]: no split 15; split after 1: 4 + 2x5 = 14, saves 1/15 < 25% -> one bucket
    assert padding_buckets([5, 4, 5]) == [[1, 0, 2]]
    # [1, 5, 5]: no split 15; split after 1: 1 + 2x5 = 11, saves 4/15 = 27% -> split
    assert padding_buckets([5, 1, 5]) == [[1], [0, 2]]
    # ... but not when asked for at least 30%
    assert padding_buckets([5, 1, 5], min_saving=0.3) == [[1, 0, 2]]
    assert padding_buckets([]) == [[]]


def _batch(tokenizer, prompts: list[str], completion_lengths: list[int]) -> tuple:
    """Left-padded prompts + right-padded completions, as TRL concatenates them."""
    pad = tokenizer.pad_token_id
    prompt_ids = [tokenizer(p)["input_ids"] for p in prompts]
    width = max(len(p) for p in prompt_ids)
    keep = max(completion_lengths)
    gen = torch.Generator().manual_seed(0)
    ids, mask = [], []
    for p, n in zip(prompt_ids, completion_lengths, strict=True):
        completion = torch.randint(10, 200, (n,), generator=gen).tolist()
        ids.append([pad] * (width - len(p)) + p + completion + [pad] * (keep - n))
        mask.append([0] * (width - len(p)) + [1] * len(p) + [1] * n + [0] * (keep - n))
    return torch.tensor(ids), torch.tensor(mask), keep


def test_bucketed_forward_matches_one_padded_forward(tiny_model_dir: Path) -> None:
    from pairrl.tiny_model import load_tiny_model

    model, tokenizer = load_tiny_model(tiny_model_dir)
    model.eval()
    short = "Write a python function f(x) that returns x."
    long = "Judge these two solutions carefully. " * 12
    input_ids, attention_mask, keep = _batch(
        tokenizer, [short, long, short + " Please.", long, short], [5, 7, 3, 7, 6]
    )
    calls: list[tuple[int, int]] = []

    def forward(ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        calls.append(tuple(ids.shape))
        logits = model(input_ids=ids, attention_mask=mask).logits[:, -keep - 1 : -1].float()
        logps = torch.log_softmax(logits, dim=-1)
        token_logps = logps.gather(-1, ids[:, -keep:, None]).squeeze(-1)
        entropy = -(logps.exp() * logps).sum(-1)
        return token_logps, entropy

    with torch.no_grad():
        expected_logps, expected_entropy = forward(input_ids, attention_mask)
        calls.clear()
        logps, entropy = forward_in_buckets(forward, input_ids, attention_mask, keep)

    # two forwards: the 3 short-prompt rows trimmed to their own width, the 2 long rows full
    width = input_ids.size(1)
    assert len(calls) == 2
    assert calls[0][0] == 3 and calls[0][1] < width
    assert calls[1] == (2, width)
    real = attention_mask[:, -keep:].bool()
    torch.testing.assert_close(logps[real], expected_logps[real], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(entropy[real], expected_entropy[real], atol=1e-4, rtol=1e-4)
