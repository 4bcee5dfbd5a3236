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
    from pairrl.train.warm_start import _warm_start_trainer, labelled_token_loss

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
    trainer.__class__ = _warm_start_trainer(True, False)
    overridden = trainer.compute_loss(model, dict(batch))
    assert overridden.item() == ours.item()
    # over a count given by the trainer (gradient accumulation): the sum over that count
    half = labelled_token_loss(model, dict(batch), num_items=2 * mask.sum())
    assert half.item() == pytest.approx(ours.item() / 2, rel=1e-6)


def test_bucketed_loss_is_the_whole_batch_loss(tiny_model_dir: Path, tmp_path: Path) -> None:
    from pairrl.train.padding import right_padded_buckets
    from pairrl.train.warm_start import _warm_start_trainer

    trainer, batch = _trainer_and_batch(tiny_model_dir, tmp_path)
    model = trainer.model
    # rows of very different lengths, so that the batch splits: a long row made of one
    # short row repeated (right padding kept: real tokens first)
    long_ids = batch["input_ids"][1].repeat(4)
    width = long_ids.numel()

    def pad(rows: torch.Tensor, value: int) -> torch.Tensor:
        return torch.nn.functional.pad(rows, (0, width - rows.size(1)), value=value)

    wide = {
        "input_ids": torch.cat([pad(batch["input_ids"], 0), long_ids[None]]),
        "attention_mask": torch.cat(
            [pad(batch["attention_mask"], 0), torch.ones(1, width, dtype=torch.long)]
        ),
        "labels": torch.cat([pad(batch["labels"], -100), long_ids[None]]),
    }
    parts = right_padded_buckets(wide)
    assert len(parts) == 2  # 4 short rows cut to their own width, the long row alone
    assert [p["input_ids"].shape[0] for p in parts] == [4, 1]
    assert parts[0]["input_ids"].shape[1] < width

    count = (wide["labels"][:, 1:] != -100).sum()

    def loss(labelled_positions_only: bool, bucket_padding: bool) -> torch.Tensor:
        trainer.__class__ = _warm_start_trainer(labelled_positions_only, bucket_padding)
        return trainer.compute_loss(model, dict(wide), num_items_in_batch=count)

    whole = loss(False, False)
    (grad_whole,) = torch.autograd.grad(whole, [model.get_input_embeddings().weight])
    split = loss(False, True)
    (grad_split,) = torch.autograd.grad(split, [model.get_input_embeddings().weight])
    assert split.item() == pytest.approx(whole.item(), rel=1e-5)
    torch.testing.assert_close(grad_split, grad_whole, rtol=1e-4, atol=1e-6)
    # labelled positions only, bucketed: the same loss again
    assert loss(True, True).item() == pytest.approx(whole.item(), rel=1e-5)


def test_right_padded_buckets_keep_a_left_padded_batch_whole() -> None:
    from pairrl.train.padding import right_padded_buckets

    mask = torch.tensor([[0, 0, 0, 0, 1], [1, 1, 1, 1, 1], [0, 0, 0, 1, 1]])
    batch = {"input_ids": torch.zeros_like(mask), "attention_mask": mask}
    assert right_padded_buckets(batch) == [batch]
    assert right_padded_buckets({"input_ids": mask}) == [{"input_ids": mask}]
