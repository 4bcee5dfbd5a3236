"""The supervised warm start: TRL's ``SFTTrainer`` on chat conversations, assistant tokens only.

Tiny models know no output format at all; before RL, a short SFT on conversations the
task family provides (``TaskFamily.warm_start_conversations``: the data source's or the
recipe's) teaches them the fenced-code solution and the rating tags. The one warm start
of the project: ``pairrl.train.policy`` runs :func:`warm_start_stage` for every run with
``warm_start.steps > 0``.

The stage trains in a staging folder and renames it to ``RUN/warm_start`` once saved, with
``RUN/warm_start/pairrl_warm_start.json``: the config fields it depends on
(:func:`warm_start_settings`) and its losses. A ``RUN/warm_start`` already there (a
resumed or repeated run) is reused only when those recorded settings equal this config's;
otherwise, or without that record, the run stops with an error naming the differences
(remove the folder to train it again, or choose another ``--out``): a warm start is never
retrained over silently. The run summary's ``warm_start`` says which one was used.

Loss is on assistant tokens only (the tiny chat template marks them with
``{% generation %}``). The trainer's one override, ``compute_loss``, changes how the loss
is computed, never what it is: with ``bucket_padding`` a batch that mixes short solution
conversations with long judgement ones runs as two narrower forwards
(``pairrl.train.padding.right_padded_buckets``), and with ``labelled_positions_only`` the
loss scores only the labelled positions on every device (``labelled_token_loss``; TRL's
own does so on CUDA/XPU only).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pairrl.config import ConfigError
from pairrl.errors import InputError
from pairrl.rollout.prompt_kit import Messages
from pairrl.train.checkpoints import publish_folder
from pairrl.train.config import TrainConfig
from pairrl.train.resume import describe_changes, field_changes, flatten

__all__ = ["WARM_START_RECORD", "warm_start", "warm_start_settings", "warm_start_stage"]

WARM_START_DIR = "warm_start"
WARM_START_RECORD = "pairrl_warm_start.json"  # its settings and losses, written last


def warm_start_stage(
    cfg: TrainConfig,
    source: str,
    run_dir: Path,
    state: Any,
    conversations: Callable[[], list[Messages]],
) -> tuple[Path, dict[str, Any] | None]:
    """``RUN/warm_start`` from the model folder ``source``: reused when its recorded
    settings are this config's, else trained by the main process (the others wait; their
    report is None). ``conversations`` is called only when it trains."""
    warm_dir = run_dir / WARM_START_DIR
    # every process checks before the main one trains: none waits on a rank that failed
    report = _reused_warm_start(cfg, warm_dir)
    if report is None:
        with state.main_process_first():
            if state.is_main_process:
                report = _train_warm_start(cfg, source, warm_dir, conversations)
    return warm_dir, report


def warm_start_settings(cfg: TrainConfig) -> dict[str, Any]:
    """The config fields a warm start depends on, dotted: the seed, the base model (its
    path, and the tiny shape when it is built), the data source and recipe (they give the
    conversations), the ``warm_start`` section, and the sandbox limits (a recipe may label
    its warm-start samples by execution). Memory settings and the RL sections are left out."""
    dump = json.loads(json.dumps(cfg.model_dump()))
    model = {k: v for k, v in dump["model"].items() if k in {"path", "build_tiny"}}
    if cfg.model.build_tiny:
        model["tiny"] = dump["model"]["tiny"]
    executor = {k: v for k, v in dump["executor"].items() if k != "workers"}
    return flatten(
        {
            "seed": dump["seed"],
            "model": model,
            "data": dump["data"],
            "recipe": dump["recipe"],
            "warm_start": dump["warm_start"],
            "executor": executor,
        }
    )


def _reused_warm_start(cfg: TrainConfig, warm_dir: Path) -> dict[str, Any] | None:
    """The summary of the warm start in ``warm_dir`` when its recorded settings are this
    config's; None when there is none; an error when they differ or are not recorded."""
    if not warm_dir.exists():
        return None
    remedy = "remove that folder to train the warm start again, or choose another --out"
    try:
        record = json.loads((warm_dir / WARM_START_RECORD).read_text())
        recorded = dict(record["settings"])
    except (OSError, ValueError, KeyError, TypeError):
        raise InputError(
            f"{warm_dir} holds no readable record of the settings it was trained with "
            f"({WARM_START_RECORD}): {remedy}"
        ) from None
    changes = field_changes(recorded, warm_start_settings(cfg))
    if changes:
        raise InputError(
            f"{warm_dir} holds a warm start trained with other settings: "
            f"{describe_changes(changes)}; {remedy}"
        )
    trained = record.get("report", {})
    summary = {k: trained.get(k) for k in ("steps", "first_loss", "last_loss")}
    return {
        "reused": True,
        "out_dir": str(warm_dir),
        **summary,
        "trained_wall_s": trained.get("wall_s"),
    }


def _train_warm_start(
    cfg: TrainConfig,
    source: str,
    warm_dir: Path,
    conversations: Callable[[], list[Messages]],
) -> dict[str, Any]:
    """Train the warm start in a staging folder, record its settings, rename it into place."""
    examples = conversations()
    if not examples:
        raise ConfigError(
            "warm_start.steps", ["the data source provides no warm-start conversations"]
        )
    staging = warm_dir.parent / f".{warm_dir.name}-staging"
    shutil.rmtree(staging, ignore_errors=True)  # what a cut-off warm start left
    report = warm_start(
        source,
        examples,
        staging,
        steps=cfg.warm_start.steps,
        lr=cfg.warm_start.lr,
        batch_size=cfg.warm_start.batch_size,
        max_length=cfg.warm_start.max_length,
        labelled_positions_only=cfg.warm_start.loss_positions == "labelled",
        bucket_padding=cfg.warm_start.bucket_padding,
        seed=cfg.seed,
        gradient_checkpointing=cfg.model.gradient_checkpointing,
        show_progress=cfg.logging.console == "progress",
    )
    report = {**report, "out_dir": str(warm_dir)}
    record = {"settings": warm_start_settings(cfg), "base_model": source, "report": report}
    (staging / WARM_START_RECORD).write_text(json.dumps(record, indent=2) + "\n")
    publish_folder(staging, warm_dir)
    return {"reused": False, **report}


def warm_start(
    model_dir: str | Path,
    conversations: list[list[dict[str, str]]],
    out_dir: str | Path,
    *,
    steps: int,
    lr: float,
    batch_size: int,
    max_length: int = 256,
    labelled_positions_only: bool = False,
    bucket_padding: bool = False,
    seed: int = 0,
    gradient_checkpointing: bool = False,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Train ``steps`` SFT steps and save model + tokenizer to ``out_dir``.

    ``max_length``: the longest conversation in tokens (a longer one is cut at its end).
    A chat template without ``{% generation %}`` markers gets them where
    ``pairrl.train.chat_template`` knows how (the same rendered text).
    ``labelled_positions_only``: score the loss on labelled positions only, on every
    device (``labelled_token_loss``). ``bucket_padding``: run each batch as at most two
    forwards, narrow rows and wide rows, each cut to its own widest row (the same loss up
    to float rounding, in less time when lengths differ). ``gradient_checkpointing``
    follows the model config (TRL's own default is on, which costs a recompute per step
    that a small model does not need). With ``show_progress``, one progress bar and the
    step dicts in ``out_dir``'s ``warm_start_log.jsonl`` instead of the console. Returns
    ``{"steps", "first_loss", "last_loss", "wall_s", "out_dir"}``.
    """
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from pairrl.train.chat_template import training_chat_template

    if not conversations:
        raise ValueError("the warm start needs at least one conversation")
    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    marked = training_chat_template(tokenizer)
    if marked is not None:  # renders the same text, with the assistant's turn marked
        tokenizer.chat_template = marked
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype="float32")
    dataset = Dataset.from_list([{"messages": conv} for conv in conversations])
    args = SFTConfig(
        **_sft_args(out_dir, steps=steps, lr=lr, batch_size=batch_size, seed=seed),
        max_length=max_length,
        gradient_checkpointing=gradient_checkpointing,
    )
    if labelled_positions_only or bucket_padding:
        trainer_cls = _warm_start_trainer(labelled_positions_only, bucket_padding)
    else:
        trainer_cls = SFTTrainer
    trainer = trainer_cls(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)
    if show_progress:
        from pairrl.train.progress import StepProgress, quiet_console

        quiet_console(trainer)
        log = Path(out_dir).parent / "warm_start_log.jsonl"
        trainer.add_callback(StepProgress("warm start (SFT)", log))
    trainer.train()
    losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    trainer.model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return {
        "steps": steps,
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
        "wall_s": time.perf_counter() - started,
        "out_dir": str(out),
    }


def labelled_token_loss(model: Any, inputs: dict[str, Any], num_items: Any = None) -> Any:
    """The SFT loss, summed over labelled positions only, over ``num_items`` labels
    (default: this batch's).

    The same loss as TRL's fused LM head, which on CUDA/XPU also scores only the labelled
    positions but elsewhere scores every position (prompts and padding too): on a CPU warm
    start that is a quarter of a step, spent on tokens the loss masks out.
    """
    import torch
    import torch.nn.functional as F

    backbone = getattr(model, model.base_model_prefix)
    features = {k: v for k, v in inputs.items() if k != "labels"}
    hidden = backbone(**features, use_cache=False).last_hidden_state[:, :-1]
    labels = inputs["labels"][:, 1:]
    mask = labels != -100
    logits = model.get_output_embeddings()(hidden[mask]).float()
    total = F.cross_entropy(logits, labels[mask], reduction="sum")
    count = mask.sum() if num_items is None else torch.as_tensor(num_items)
    return total / count.clamp(min=1)


def _warm_start_trainer(labelled_positions_only: bool, bucket_padding: bool) -> type:
    """``SFTTrainer`` whose loss runs per padding bucket and/or on labelled positions only.

    Each bucket's loss is summed over its labelled tokens and divided by the whole batch's
    count (``num_items_in_batch``), so the buckets add up to the batch's loss. Without
    that count from the trainer the batch runs whole.
    """
    from trl import SFTTrainer

    from pairrl.train.padding import right_padded_buckets

    class WarmStartSFTTrainer(SFTTrainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            if return_outputs:
                raise NotImplementedError("the warm start asks for the loss only")
            split = bucket_padding and num_items_in_batch is not None
            parts = right_padded_buckets(inputs) if split else [inputs]
            return sum(self._part_loss(model, part, num_items_in_batch) for part in parts)

        def _part_loss(self, model, inputs, num_items_in_batch):
            if not labelled_positions_only:
                return super().compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)
            loss = labelled_token_loss(model, inputs, num_items_in_batch)
            if self.args.average_tokens_across_devices and num_items_in_batch is not None:
                # as TRL's: the count is every rank's, and DDP averages the gradients
                loss = loss * self.accelerator.num_processes
            return loss

    return WarmStartSFTTrainer


def _sft_args(
    out_dir: str | Path, *, steps: int, lr: float, batch_size: int, seed: int
) -> dict[str, Any]:
    """SFTConfig's arguments: assistant-only loss, cosine schedule, no checkpoints."""
    import torch

    return dict(
        output_dir=str(Path(out_dir) / "sft_trainer"),
        max_steps=steps,
        learning_rate=lr,
        # beta2 0.95 as in LM pre-training recipes: tiny models form their circuits in
        # fewer steps than with the default 0.999 (docs/experiments.md).
        adam_beta2=0.95,
        lr_scheduler_type="cosine",
        warmup_steps=max(1, steps // 20),
        per_device_train_batch_size=batch_size,
        assistant_only_loss=True,
        packing=False,
        logging_steps=max(1, steps // 10),
        save_strategy="no",
        report_to=[],
        seed=seed,
        data_seed=seed,
        disable_tqdm=True,
        dataloader_num_workers=0,
        # tokenising thousands of conversations through the chat template is a few
        # seconds on one core; the shards are joined in order, so the data is the same
        dataset_num_proc=min(4, os.cpu_count() or 1),
        dataloader_pin_memory=torch.cuda.is_available(),  # pinning warns without a GPU
        # fp32 and no `use_cpu`: the GRPO trainer that follows in the same process builds
        # its Accelerator with these settings, and accelerate refuses to change them.
        bf16=False,
    )
