"""The warm start's loss: TRL's SFT loss, scored on labelled positions only."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch


def _trainer_and_batch(model_dir: Path, out: Path) -> tuple[object, dict[str, torch.Tensor]]:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from pairrl.train.warm_start import _sft_args

    conversations = [
        [{"role": "user", "content": f"Add {i} and {i + 3}."}, {"role": "assistant", "content": a}]
        for i, a in enumerate(["7", "a longer answer of several tokens", "12", "no"])
    ]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype="float32")
    args = SFTConfig(**_sft_args(out, steps=1, lr=1e-3, batch_size=4, seed=0))
    dataset = Dataset.from_list([{"messages": c} for c in conversations])
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)
    batch = next(iter(trainer.get_train_dataloader()))
    return trainer, batch


def test_labelled_token_loss_is_trls_loss_and_gradient(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    from pairrl.train.warm_start import _labelled_token_trainer, labelled_token_loss

    trainer, batch = _trainer_and_batch(tiny_model_dir, tmp_path)
    model = trainer.model
    # the batch pads (answers of different lengths) and masks the prompts: both must drop out
    assert (batch["labels"] == -100).sum() > (batch["attention_mask"] == 0).sum() > 0

    theirs = trainer.compute_loss(model, dict(batch))  # TRL on CPU: every position scored
    (grad_theirs,) = torch.autograd.grad(theirs, [model.get_input_embeddings().weight])
    ours = labelled_token_loss(model, dict(batch))
    (grad_ours,) = torch.autograd.grad(ours, [model.get_input_embeddings().weight])

    # by hand: the mean negative log-likelihood of each labelled next token
    logits = model(**{k: v for k, v in batch.items() if k != "labels"}).logits[:, :-1]
    labels = batch["labels"][:, 1:]
    mask = labels != -100
    logp = torch.log_softmax(logits.float(), -1).gather(-1, labels.clamp(min=0)[..., None])[..., 0]
    by_hand = -(logp * mask).sum() / mask.sum()

    assert ours.item() == pytest.approx(by_hand.item(), rel=1e-5)
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-5)
    torch.testing.assert_close(grad_ours, grad_theirs, rtol=1e-4, atol=1e-6)
    # the warm start's trainer returns exactly this loss
    overridden = _labelled_token_trainer().compute_loss(trainer, model, dict(batch))
    assert overridden.item() == ours.item()
    # over a count given by the trainer (gradient accumulation): the sum over that count
    half = labelled_token_loss(model, dict(batch), num_items=2 * mask.sum())
    assert half.item() == pytest.approx(ours.item() / 2, rel=1e-6)
