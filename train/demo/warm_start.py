"""The demo's supervised warm start (TRL's ``SFTTrainer``) on generated conversations.

It teaches three formats on training problems only: solutions (a fenced ``f()`` returning
the sum), pairwise judgements and pointwise judgements (own sum in ``<think>``, then 9 for
a candidate equal to it and 1 otherwise; see ``train.demo.prompts``). Judge candidates are
the true sum or the mistakes a digit adder makes (``distractor_answers``), in random A/B
order, in the proportions the trainer's pairs have (correct-incorrect and correct-correct)
plus a few incorrect-incorrect ones so that "rate both low" is also seen.

All targets are right: the warm start is short, so what it leaves imperfect is the
arithmetic itself (the solver's sums, and so the judge's own sum), which is what RL on
sampled solutions and on-policy pairs can improve.

Measured (seed 0, batch 32, lr 1e-3; details in ``configs/toy_cpu.yaml``): the solver's
arithmetic appears only after a loss plateau of ~200 steps and then rises sharply (held-out
greedy 21% at 700 steps, 76.5% at 850, 99.5% at 1150), while the judge's ratings stay
independent of the candidates (balanced accuracy ~0.5) at every budget tried, even when its
own ``<think>`` sum is right: comparing two numbers ~40 tokens apart is not learnt here.
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
)
from train.demo.tasks import AdditionProblem, distractor_answers, solution_text

__all__ = ["warm_start_conversations", "warm_start_sft"]

# Shares of the example mix (solution, pairwise, pointwise). Pointwise examples are taught
# to every model so that the PointRL ablation starts from the same checkpoint.
MIX = (0.5, 0.375, 0.125)
PAIR_KINDS = (("correct_incorrect", 0.6), ("correct_correct", 0.25), ("incorrect_incorrect", 0.15))


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
            target = solution_text(problem.answer)
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
            target = pairwise_judgement_text(problem.answer, correct)
        else:
            correct_one = rng.random() < 0.5
            value = _candidate(problem, correct_one, rng)
            messages = pointwise_messages(task, solution_text(value))
            target = pointwise_judgement_text(problem.answer, correct_one)
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
