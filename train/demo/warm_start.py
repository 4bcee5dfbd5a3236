"""The demo's supervised warm start (TRL's ``SFTTrainer``) on generated conversations.

It teaches three formats on training problems only (see ``train.demo.prompts``): solutions
(the worked sum in ``<think>``, then a fenced ``f()`` returning it), pairwise judgements
and pointwise judgements (the same worked sum, digit-by-digit checks of each candidate
against it, then 9 for a match and 1 otherwise). Judge candidates are the true sum or the
mistakes a digit adder makes (``distractor_answers``), in random A/B order; pairs with no
correct candidate are common (35%) so that copying a candidate as the judge's own sum does
not pay.

All targets are right: the warm start is short, so what it leaves imperfect is the
arithmetic itself, and it is imperfect in the way the issue asks for: greedy decoding is
mostly right, but sampled sums often drop a carry (the tens digit is uncertain), and the
judge inherits the same errors through its own sum. RL on sampled solutions and on-policy
pairs can sharpen that.

Measured (``configs/toy_cpu.yaml``, seed 0, 2 cores): the SFT loss sits on a plateau while
the format is learnt, then the sum circuit forms after ~300-500 steps (seed-dependent);
after 500 steps greedy held-out accuracy was 0.95 and the judge's balanced accuracy on
pairs with a distractor 0.88, at ~1.1 s per step on one thread.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from train.demo.prompts import (
    generation_messages,
    pairwise_judgement_text,
    pairwise_messages,
    pointwise_judgement_text,
    pointwise_messages,
    solution_completion,
)
from train.demo.tasks import AdditionProblem, distractor_answers, solution_text

__all__ = ["warm_start_conversations", "warm_start_sft"]

# Shares of the example mix (solution, pairwise, pointwise). Pointwise examples are taught
# to every model so that the PointRL ablation starts from the same checkpoint.
MIX = (0.5, 0.4, 0.1)
# Incorrect candidates are common (35% of pairs have no correct one) so that copying a
# candidate as the judge's own sum is a poor shortcut: computing it pays more.
PAIR_KINDS = (("correct_incorrect", 0.5), ("correct_correct", 0.15), ("incorrect_incorrect", 0.35))


def _candidate(problem: AdditionProblem, correct: bool, rng: random.Random) -> int:
    return problem.answer if correct else rng.choice(distractor_answers(problem))


def warm_start_conversations(
    problems: Sequence[AdditionProblem], num_examples: int, seed: int = 0
) -> list[list[dict[str, str]]]:
    """``num_examples`` chat conversations (prompt + assistant target) in the MIX shares."""
    if not problems:
        raise ValueError("warm_start_conversations needs at least one problem")
    rng = random.Random(seed)
    kinds, weights = zip(*PAIR_KINDS, strict=True)
    out: list[list[dict[str, str]]] = []
    for _ in range(num_examples):
        problem = rng.choice(problems)
        task = problem.to_task()
        roll = rng.random()
        if roll < MIX[0]:
            messages = generation_messages(task)
            target = solution_completion(problem)
        elif roll < MIX[0] + MIX[1]:
            kind = rng.choices(kinds, weights)[0]
            correct = {
                "correct_incorrect": [True, False],
                "correct_correct": [True, True],
                "incorrect_incorrect": [False, False],
            }[kind]
            rng.shuffle(correct)
            values = [_candidate(problem, c, rng) for c in correct]
            messages = pairwise_messages(task, solution_text(values[0]), solution_text(values[1]))
            target = pairwise_judgement_text(problem, values)
        else:
            correct_one = rng.random() < 0.5
            value = _candidate(problem, correct_one, rng)
            messages = pointwise_messages(task, solution_text(value))
            target = pointwise_judgement_text(problem, value)
        out.append([*messages, {"role": "assistant", "content": target}])
    return out


def warm_start_sft(
    model_dir: str | Path,
    conversations: list[list[dict[str, str]]],
    out_dir: str | Path,
    *,
    steps: int,
    lr: float,
    batch_size: int,
    seed: int = 0,
) -> dict[str, Any]:
    """Train ``steps`` SFT steps (assistant tokens only) and save model + tokenizer.

    Returns ``{"steps", "first_loss", "last_loss", "wall_s", "out_dir"}``.
    """
    import time

    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype="float32")
    dataset = Dataset.from_list([{"messages": conv} for conv in conversations])
    args = SFTConfig(
        output_dir=str(Path(out_dir) / "sft_trainer"),
        max_steps=steps,
        learning_rate=lr,
        # beta2 0.95 as in LM pre-training recipes: the sum circuit formed after ~300-500
        # steps with it, against ~700-850 with the default 0.999 (probes on this machine).
        adam_beta2=0.95,
        lr_scheduler_type="cosine",
        warmup_steps=max(1, steps // 20),
        per_device_train_batch_size=batch_size,
        assistant_only_loss=True,
        max_length=256,
        packing=False,
        logging_steps=max(1, steps // 10),
        save_strategy="no",
        report_to=[],
        seed=seed,
        data_seed=seed,
        disable_tqdm=True,
        dataloader_num_workers=0,
        # fp32 and no `use_cpu`: the GRPO trainer that follows in the same process builds
        # its Accelerator with these settings, and accelerate refuses to change them.
        bf16=False,
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)
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
