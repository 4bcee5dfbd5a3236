"""The chunked log-prob path (``pairrl.train.chunked_logps`` with the row chunks of
``pairrl.train.padding.forward_in_buckets``) against TRL's own computation, on the tiny model.

TRL's reference is ``GRPOTrainer._get_per_token_logps_and_entropies`` (one forward over
every row, its fused LM head over every position) and ``GRPOTrainer._compute_loss`` on top.
PairRL's differs only in what is computed where: padding buckets trimmed to their own width,
row chunks under a token budget (all but the last recomputed in the backward), only real
completion positions through the head, in chunks. So the per-token log-probs, entropies,
the loss and every parameter's gradient agree up to float rounding: float32 (eps 1.2e-7),
with attention over a different number of masked columns and matrix products over different
row counts, which change the order of summation. On this model the log-probs and entropies
(of size up to ~7) differ by at most 1e-6 and the gradients (of size up to ~1.5e-3) by at
most 6e-10, so the tolerances (1e-5 absolute on values; 1e-8 absolute plus 1e-5 relative on
gradients) leave a margin of 10-20x, while a wrong token or position would be off by 0.1 or
more in a log-prob and by ~1e-4 in a gradient.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from trainer_stub import loss_trainer
from trl import GRPOTrainer
from trl.trainer.utils import add_fused_lm_head

from pairrl.train.chunked_logps import plain_lm_head
from pairrl.train.config import LossConfig
from pairrl.train.padding import _row_pieces, token_chunks
from pairrl.train.trainer import PairRLTrainer

TEMPERATURE = 0.7
SHORT = "Write a python function f(x) that returns x."
LONG = "Judge these two solutions carefully. " * 12
PROMPTS = [SHORT, LONG, SHORT + " Please.", LONG, SHORT, LONG + " Be brief.", SHORT]
COMPLETION_LENGTHS = [5, 7, 3, 7, 6, 2, 4]
VALUES = {"rtol": 0.0, "atol": 1e-5}
GRADIENTS = {"rtol": 1e-5, "atol": 1e-8}


@pytest.fixture(scope="module")
def model(tiny_model_dir: Path) -> Any:
    from pairrl.tiny_model import load_tiny_model

    model, _ = load_tiny_model(tiny_model_dir)
    model.train()
    # TRL's reference head; the chunked path calls the backbone and the head itself
    add_fused_lm_head(model, temperature=TEMPERATURE, outputs=("log_probs", "entropy"))
    return model


@pytest.fixture(scope="module")
def batch(tiny_model_dir: Path) -> dict[str, torch.Tensor]:
    """Left-padded prompts and right-padded completions, as TRL's batch holds them."""
    from pairrl.tiny_model import load_tiny_model

    _, tokenizer = load_tiny_model(tiny_model_dir)
    pad = tokenizer.pad_token_id
    prompts = [tokenizer(p)["input_ids"] for p in PROMPTS]
    width, keep = max(len(p) for p in prompts), max(COMPLETION_LENGTHS)
    gen = torch.Generator().manual_seed(0)
    rows = []
    for prompt, n in zip(prompts, COMPLETION_LENGTHS, strict=True):
        completion = torch.randint(10, 200, (n,), generator=gen).tolist()
        rows.append(
            (
                [pad] * (width - len(prompt)) + prompt,
                [0] * (width - len(prompt)) + [1] * len(prompt),
                completion + [pad] * (keep - n),
                [1] * n + [0] * (keep - n),
            )
        )
    prompt_ids, prompt_mask, completion_ids, completion_mask = (
        torch.tensor([r[i] for r in rows]) for i in range(4)
    )
    # old log-probs a little off the current ones, so that some ratios are clipped
    old = -2.0 + 0.3 * torch.randn(completion_ids.shape, generator=gen)
    return {
        "prompt_ids": prompt_ids,
        "prompt_mask": prompt_mask,
        "completion_ids": completion_ids,
        "completion_mask": completion_mask,
        "advantages": torch.tensor([0.5, -1.0, 0.25, 0.75, -0.5, 1.0, -0.25]),
        "old_per_token_logps": old,
        "num_items_in_batch": completion_mask.sum().float(),
    }


def _trainer(cls: type, loss: LossConfig, entropy_coef: float = 0.0) -> Any:
    """A one-process trainer at TEMPERATURE (``trainer_stub.loss_trainer``)."""
    return loss_trainer(cls, loss, TEMPERATURE, entropy_coef)


def _logps(trainer: Any, model: Any, batch: dict[str, torch.Tensor]) -> tuple:
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    logps, entropies, _ = trainer._get_per_token_logps_and_entropies(
        model, ids, mask, batch["completion_ids"].size(1), compute_entropy=True
    )
    return logps, entropies


def _loss_and_grads(trainer: Any, model: Any, batch: dict) -> tuple[float, dict]:
    model.zero_grad(set_to_none=True)
    loss = trainer._compute_loss(model, batch)
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return loss.item(), grads


CHUNKINGS = {
    # budget, head chunk: one forward per bucket; several row chunks and head chunks
    "buckets": LossConfig(max_forward_tokens=None, logits_chunk_tokens=1024),
    "row_and_head_chunks": LossConfig(max_forward_tokens=64, logits_chunk_tokens=5),
}


@pytest.mark.parametrize("chunking", CHUNKINGS)
def test_log_probs_and_entropies_match_trl(model: Any, batch: dict, chunking: str) -> None:
    real = batch["completion_mask"].bool()
    with torch.no_grad():
        expected = _logps(_trainer(GRPOTrainer, LossConfig()), model, batch)
        got = _logps(_trainer(PairRLTrainer, CHUNKINGS[chunking]), model, batch)
    for ours, trl in zip(got, expected, strict=True):
        torch.testing.assert_close(ours[real], trl[real], **VALUES)
        assert not ours[~real].any()  # padding positions are 0, as in TRL's


@pytest.mark.parametrize("entropy_coef", [0.0, 0.1])
@pytest.mark.parametrize("chunking", CHUNKINGS)
def test_loss_and_gradients_match_trl(
    model: Any, batch: dict, chunking: str, entropy_coef: float
) -> None:
    reference = _trainer(GRPOTrainer, LossConfig(), entropy_coef)
    expected_loss, expected = _loss_and_grads(reference, model, batch)
    ours = _trainer(PairRLTrainer, CHUNKINGS[chunking], entropy_coef)
    loss, grads = _loss_and_grads(ours, model, batch)
    assert loss == pytest.approx(expected_loss, rel=1e-5)
    assert grads.keys() == expected.keys()
    for name, grad in grads.items():
        torch.testing.assert_close(grad, expected[name], **GRADIENTS, msg=name)


def test_row_chunks_hold_one_chunk_of_activations(model: Any, batch: dict) -> None:
    """Over the budget, the forward keeps the saved tensors of its last chunk only (the
    widest row here); the others are recomputed in the backward. Autograd's pack hook counts
    the saved bytes (parameters aside); the checkpointed chunks bypass it."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}

    def saved_bytes(loss: LossConfig, rows: list[int]) -> int:
        sizes: dict[int, int] = {}

        def pack(t: torch.Tensor) -> torch.Tensor:
            sizes[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t

        part = {k: v[rows] if v.dim() else v for k, v in batch.items()}
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            _logps(_trainer(PairRLTrainer, loss), model, part)
        return sum(n for ptr, n in sizes.items() if ptr not in params)

    everything = list(range(len(PROMPTS)))
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    last_rows = _row_pieces(mask, batch["completion_ids"].size(1), 64)[-1][0]
    whole = saved_bytes(LossConfig(max_forward_tokens=None), everything)
    chunked = saved_bytes(LossConfig(max_forward_tokens=64), everything)
    last_alone = saved_bytes(LossConfig(max_forward_tokens=None), last_rows)
    assert chunked < whole / 2
    assert chunked <= 1.05 * last_alone


def test_recomputed_chunks_give_the_same_values(model: Any, batch: dict) -> None:
    """The recompute runs the same operations on the same inputs: on the same machine and
    thread count the forward values are bit-identical with and without it."""
    trainer = _trainer(PairRLTrainer, LossConfig(max_forward_tokens=64, logits_chunk_tokens=5))
    recomputed = _logps(trainer, model, batch)
    with torch.no_grad():  # no grad: no recompute, the same chunks
        plain = _logps(trainer, model, batch)
    for a, b in zip(recomputed, plain, strict=True):
        assert torch.equal(a, b)


def test_row_pieces_cut_buckets_into_token_chunks() -> None:
    # 4 narrow rows (prompt 2 of 10 columns) and 2 wide ones (prompt 10), completion 3
    mask = torch.ones(6, 13, dtype=torch.long)
    mask[[0, 2, 3, 5], :8] = 0
    assert _row_pieces(mask, 3, None) == [([0, 2, 3, 5], 8), ([1, 4], 0)]
    # budget 12 tokens: the narrow bucket (5 wide) 2 rows per chunk, the wide (13) 1 per chunk
    assert _row_pieces(mask, 3, 12) == [([0, 2], 8), ([3, 5], 8), ([1], 0), ([4], 0)]
    # one bucket keeps the batch's width (6): 2 rows per chunk, near-equal chunks
    assert _row_pieces(torch.ones(3, 6, dtype=torch.long), 2, 12) == [([0], 0), ([1, 2], 0)]


def test_token_chunks() -> None:
    assert token_chunks([3, 1, 2], width=10, max_tokens=None) == [[3, 1, 2]]
    assert token_chunks([3, 1, 2], width=10, max_tokens=30) == [[3, 1, 2]]
    # 5 rows, 2 per chunk: three near-equal chunks
    assert token_chunks([0, 1, 2, 3, 4], width=10, max_tokens=25) == [[0], [1, 2], [3, 4]]
    # a row wider than the budget is a chunk of its own
    assert token_chunks([7, 8], width=100, max_tokens=10) == [[7], [8]]


def test_gradients_match_trl_with_gradient_checkpointing(model: Any, batch: dict) -> None:
    """With HF gradient checkpointing the row chunks are not recomputed again: still TRL's."""
    model.gradient_checkpointing_enable({"use_reentrant": False})
    try:
        reference = _trainer(GRPOTrainer, LossConfig())
        expected_loss, expected = _loss_and_grads(reference, model, batch)
        ours = _trainer(PairRLTrainer, LossConfig(max_forward_tokens=64, logits_chunk_tokens=5))
        loss, grads = _loss_and_grads(ours, model, batch)
    finally:
        model.gradient_checkpointing_disable()
    assert loss == pytest.approx(expected_loss, rel=1e-5)
    for name, grad in grads.items():
        torch.testing.assert_close(grad, expected[name], **GRADIENTS, msg=name)


def test_models_with_transformed_logits_take_trls_head(model: Any) -> None:
    assert plain_lm_head(model) is model.get_output_embeddings()
    model.config.final_logit_softcapping = 30.0
    try:
        assert plain_lm_head(model) is None
    finally:
        model.config.final_logit_softcapping = None


def test_lora_adapter_gradients_match_trl(tiny_model_dir: Path, batch: dict) -> None:
    """Under PEFT (model.lora) the chunked path runs the wrapped model's backbone, adapters
    included: the adapters' gradients are TRL's."""
    from peft import LoraConfig as PeftLoraConfig
    from peft import get_peft_model

    from pairrl.tiny_model import load_tiny_model

    base, _ = load_tiny_model(tiny_model_dir)
    add_fused_lm_head(base, temperature=TEMPERATURE, outputs=("log_probs", "entropy"))
    torch.manual_seed(0)
    lora = get_peft_model(base, PeftLoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    for name, param in lora.named_parameters():
        if "lora_B" in name:  # non-zero, so that every adapter weight gets a gradient
            torch.nn.init.normal_(param, std=0.02)
    lora.train()
    expected_loss, expected = _loss_and_grads(_trainer(GRPOTrainer, LossConfig()), lora, batch)
    ours = _trainer(PairRLTrainer, LossConfig(max_forward_tokens=64, logits_chunk_tokens=5))
    loss, grads = _loss_and_grads(ours, lora, batch)
    assert loss == pytest.approx(expected_loss, rel=1e-5)
    assert grads.keys() == expected.keys() and all("lora_" in name for name in grads)
    for name, grad in grads.items():
        torch.testing.assert_close(grad, expected[name], **GRADIENTS, msg=name)
