"""PairRL step time against plain TRL GRPO with the same samples per step, on the tiny model.

Both runs use the same warm-started tiny model, the same tiny code tasks, the same
number of problems per step and G = 8 samples per problem, the same completion cap and
the same optimiser; the baseline is TRL's GRPOTrainer untouched (its own generation, one
reward function that runs the same executor). PairRL spends 4 of the 8 samples on
judgements, whose prompts (the pairwise prompt with two solutions) are about 3x longer
than a generation prompt, so equal samples are not equal tokens: both token counts are
printed next to the times.

    OMP_NUM_THREADS=1 python benchmarks/train_overhead.py [--model DIR] [--steps 4]

Prints per-phase seconds per step, the mean step time of each (the first step is
excluded as warm-up) and the ratio PairRL / GRPO (target <= 1.15).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any


def warm_model(out: Path) -> Path:
    """Build the tiny model and give it the solution-format warm start (as the tests do)."""
    from rollout.prompts import generation_messages, pairwise_messages
    from rollout.tiny_model import build_tiny_model
    from train.tiny_tasks import tiny_code_tasks, warm_start_examples
    from train.warm_start import warm_start

    base = build_tiny_model(out / "tiny", seed=0)
    examples = warm_start_examples(
        tiny_code_tasks(),
        lambda t: generation_messages(t.prompt),
        lambda t, a, b: pairwise_messages(t.prompt, a, b),
        num_examples=512,
        judge_every=0,
    )
    warm_start(base, examples, out / "warm", steps=80, lr=5e-3, batch_size=8)
    return out / "warm"


def pairrl_steps(
    model: Path, out: Path, steps: int, problems: int, mode: str = "pairrl"
) -> list[dict[str, Any]]:
    """Run the real trainer (PairRL 4 + 4, or its GRPO mode 8 + 0); one log row per step."""
    from rollout.config import load_config
    from train.config import TrainConfig
    from train.plan import resolve_plan
    from train.run import run_training

    repo = Path(__file__).resolve().parents[1]
    overrides = [
        f"model.path={model}",
        "model.build_tiny=false",
        "warm_start.steps=0",
        f"batch.max_steps={steps}",
        f"batch.problems_per_step={problems}",
        f"checkpoint.every_steps={steps + 1}",
        "logging.wandb=disabled",
        "logging.completions_table=false",
    ]
    if mode == "grpo":
        overrides += ["rollout.mode=grpo", "rollout.num_solutions=8", "rollout.num_judgements=0"]
    cfg = load_config(repo / "configs" / "tiny_cpu.yaml", TrainConfig, overrides)
    plan = resolve_plan(cfg, num_processes=1, out=str(out))
    summary = run_training(cfg, plan)
    rows = [json.loads(line) for line in Path(summary["metrics_file"]).read_text().splitlines()]
    return [r for r in rows if "step_time" in r]


def grpo_steps(model: Path, out: Path, steps: int, problems: int) -> list[dict[str, Any]]:
    """Plain TRL GRPO: G = 8 solutions per problem, rewarded by the same executor."""
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from rewards import extract_code
    from rewards.executor import Executor
    from rewards.results import ExecJob
    from train.data import build_dataset
    from train.prompting import default_prompt_kit
    from train.tiny_tasks import tiny_code_tasks

    kit = default_prompt_kit()
    dataset, by_prompt, _ = build_dataset(tiny_code_tasks(), kit.generation)
    executor = Executor(workers=2, timeout_s=5.0)

    def correctness(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float]:
        jobs = [
            ExecJob(by_prompt[p[-1]["content"]], extract_code(c[0]["content"]), str(i))
            for i, (p, c) in enumerate(zip(prompts, completions, strict=True))
        ]
        return [1.0 if r.passed else 0.0 for r in executor.run(jobs)]

    tokenizer = AutoTokenizer.from_pretrained(model)
    tokenizer.padding_side = "left"
    args = GRPOConfig(
        output_dir=str(out),
        max_steps=steps,
        per_device_train_batch_size=problems * 8,
        num_generations=8,
        max_completion_length=40,
        temperature=0.5,
        top_p=1.0,
        top_k=0,
        learning_rate=1e-4,
        lr_scheduler_type="constant",
        loss_type="dapo",
        epsilon=0.2,
        epsilon_high=0.28,
        beta=0.0,
        scale_rewards="none",
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        disable_tqdm=True,
        bf16=False,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=str(model),
        reward_funcs=[correctness],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    try:
        trainer.train()
    finally:
        executor.close()
    return [r for r in trainer.state.log_history if "step_time" in r]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", type=Path, default=None, help="a warm-started tiny model (built if absent)"
    )
    parser.add_argument("--steps", type=int, default=4, help="steps per run (first is warm-up)")
    parser.add_argument("--problems", type=int, default=4, help="problems per step")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        model = args.model or warm_model(tmp_path)
        started = time.perf_counter()
        grpo = grpo_steps(model, tmp_path / "grpo", args.steps, args.problems)
        ours_grpo = pairrl_steps(
            model, tmp_path / "ours-grpo", args.steps, args.problems, mode="grpo"
        )
        pairrl = pairrl_steps(model, tmp_path / "pairrl", args.steps, args.problems)
        wall = time.perf_counter() - started

    def mean(rows: list[dict[str, Any]], key: str) -> float:
        values = [r[key] for r in rows[1:] if r.get(key) is not None] or [
            r[key] for r in rows if r.get(key) is not None
        ]
        return statistics.mean(values) if values else float("nan")

    g_step, o_step, p_step = (mean(r, "step_time") for r in (grpo, ours_grpo, pairrl))

    def tokens_per_step(rows: list[dict[str, Any]]) -> float:
        # num_tokens is cumulative (prompt + completion tokens seen so far)
        return rows[-1]["num_tokens"] / len(rows) if rows else float("nan")

    print(f"steps per run {args.steps} (first excluded), problems per step {args.problems}, G = 8")
    print(f"TRL GRPO         step {g_step:.3f} s, {tokens_per_step(grpo):.0f} tokens/step")
    print(f"ours, mode grpo  step {o_step:.3f} s, {tokens_per_step(ours_grpo):.0f} tokens/step")
    print(
        f"ours, PairRL 4+4 step {p_step:.3f} s, {tokens_per_step(pairrl):.0f} tokens/step = generate {mean(pairrl, 'time/generate_s'):.3f} + execute "
        f"{mean(pairrl, 'time/execute_s'):.3f} + judge {mean(pairrl, 'time/judge_s'):.3f} + update "
        f"{mean(pairrl, 'time/update_s'):.3f}; solution tokens {mean(pairrl, 'tokens/solution'):.0f}, "
        f"judgement tokens {mean(pairrl, 'tokens/judgement'):.0f}"
    )
    print(
        f"implementation overhead (same samples, same tokens): ours-grpo / TRL = {o_step / g_step:.2f} (target <= 1.15)"
    )
    print(
        f"PairRL / TRL GRPO (same samples; judge prompts are longer) = {p_step / g_step:.2f}; wall {wall:.0f} s"
    )


if __name__ == "__main__":
    main()
