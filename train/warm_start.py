"""A short supervised warm start: next-token loss on assistant tokens of chat examples.

Used for tiny models only, which know no output format at all; a few dozen steps teach
them the shape of a fenced python answer and of the rating tags. Loss is on assistant
tokens only (the tiny chat template marks them with ``{% generation %}``).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

__all__ = ["warm_start"]


def warm_start(
    model_path: str | Path,
    conversations: list[list[dict[str, str]]],
    out_dir: str | Path,
    *,
    steps: int,
    lr: float,
    batch_size: int,
    seed: int = 0,
) -> dict[str, Any]:
    """Train ``steps`` AdamW steps on ``conversations`` and save model + tokenizer to ``out_dir``.

    Returns ``{"first_loss", "last_loss", "steps", "out_dir"}``.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    rng = random.Random(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    model.train()
    encoded = []
    for conv in conversations:
        enc = tokenizer.apply_chat_template(
            conv, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
        )
        ids, mask = enc["input_ids"], enc["assistant_masks"]
        if not any(mask):
            raise ValueError(
                "warm-start example has no assistant tokens (chat template lacks {% generation %}?)"
            )
        encoded.append((ids, mask))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    pad = tokenizer.pad_token_id
    losses = []
    # Batches are drawn from examples of similar length (short solutions, long judge
    # prompts) so that little compute goes to padding.
    encoded.sort(key=lambda item: len(item[0]))
    for _ in range(steps):
        start = rng.randrange(max(1, len(encoded) - batch_size + 1))
        batch = encoded[start : start + batch_size]
        width = max(len(ids) for ids, _ in batch)
        input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        labels = torch.full((len(batch), width), -100, dtype=torch.long)
        for row, (ids, mask) in enumerate(batch):
            input_ids[row, : len(ids)] = torch.tensor(ids)
            attention[row, : len(ids)] = 1
            labels[row, : len(ids)] = torch.tensor(
                [t if m else -100 for t, m in zip(ids, mask, strict=True)]
            )
        loss = model(input_ids=input_ids, attention_mask=attention, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return {
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
        "steps": steps,
        "out_dir": str(out),
    }
