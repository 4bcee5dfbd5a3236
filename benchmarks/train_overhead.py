"""PairRL step time against plain TRL GRPO with the same samples and tokens, on the tiny model.

Both runs use the same warm-started tiny model, the same tiny code tasks, 8 samples per
problem, the same completion cap and the same optimiser. PairRL spends 4 of the 8 samples
of a problem on judgements, whose pairwise prompts are about 3x longer than a generation
prompt; so the baseline (TRL's GRPOTrainer untouched, its own generation) gets the same
prompt mix: per step, half generation prompts rewarded by the same executor and half
pairwise prompts rewarded by the verification reward (``matched_dataset``). Both token
counts (prompt + completion per step) are printed next to the times.

    OMP_NUM_THREADS=1 python benchmarks/train_overhead.py [--model DIR] [--steps 4]

The baseline is TRL untouched, so it pads every row to the longest (pairwise) prompt;
our trainer forwards short and long prompts in separate padding buckets
(``pairrl.train.padding.forward_in_buckets``), which is why PairRL can come out faster.

Prints per-phase seconds per step, the mean step time of each (the first step is
excluded as warm-up) and the ratio PairRL / GRPO (target <= 1.15). Unless
``--skip-grpo-mode``, also our trainer's GRPO mode against TRL on generation prompts only
(the implementation overhead at identical work).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def warm_model(out: Path) -> Path:
    """Build the tiny model and give it the solution-format warm start (as the tests do)."""
    from pairrl.rollout.prompt_kit import paper_prompt_kit
    from pairrl.tiny_model import build_tiny_model
    from pairrl.train.tiny_tasks import tiny_code_tasks, warm_start_examples
    from pairrl.train.warm_start import warm_start

    base = build_tiny_model(out / "tiny", seed=0)
    kit = paper_prompt_kit()
    examples = warm_start_examples(
        tiny_code_tasks(),
        kit.generation,
        kit.pairwise,
        num_examples=512,
        judge_every=0,
    )
    warm_start(base, examples, out / "warm", steps=80, lr=5e-3, batch_size=8)
    return out / "warm"


def pairrl_steps(
    model: Path, out: Path, steps: int, problems: int, mode: str = "pairrl"
) -> list[dict[str, Any]]:
    """Run the real trainer (PairRL 4 + 4, or its GRPO mode 8 + 0); one log row per step."""
    from pairrl.config import load_config
    from pairrl.train.config import TrainConfig
    from pairrl.train.plan import resolve_plan
    from pairrl.train.run import run_training

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
        overrides += ["rollout.mode=grpo"]
    cfg = load_config(repo / "configs" / "tiny_cpu.yaml", TrainConfig, overrides)
    plan = resolve_plan(cfg, num_processes=1, out=str(out))
    summary = run_training(cfg, plan)
    rows = [json.loads(line) for line in Path(summary["metrics_file"]).read_text().splitlines()]
    return [r for r in rows if "step_time" in r]


def matched_dataset(
    problems: int, judge_prompts: int, executor: Any
) -> tuple[Any, dict[str, Any], dict[str, tuple[bool, bool]]]:
    """Prompts for a plain-GRPO baseline with PairRL's prompt mix.

    A PairRL step on ``problems`` problems spends 4 of 8 samples per problem on solutions
    (generation prompts) and up to 4 on judgements (pairwise prompts holding two
    solutions); judgement slots without an eligible pair are one-token ``no_pair`` rows
    on the short generation prompt. The baseline gets, per step, ``judge_prompts``
    pairwise prompts and ``problems - judge_prompts`` generation prompts, each sampled 8
    times, in that order (``shuffle_dataset=False``); ``main`` picks ``judge_prompts`` from
    the judgement rows PairRL actually produced, so both steps have the same samples and
    about the same prompt-length mix. The judged solutions are
    warm-start-format answers from ``ANSWER_POOL`` (the shape the policy produces); their
    labels come from the executor, so the judge rows are rewarded with the paper's
    verification reward as in PairRL.
    """
    import random

    from datasets import Dataset

    from pairrl.rewards.results import ExecJob
    from pairrl.rollout.prompt_kit import paper_prompt_kit
    from pairrl.train.tiny_tasks import ANSWER_POOL, answer_text, tiny_code_tasks

    kit = paper_prompt_kit()
    tasks = tiny_code_tasks()
    rng = random.Random(0)
    half = problems - judge_prompts
    by_prompt: dict[str, Any] = {}
    judged: dict[str, tuple[str, str, Any]] = {}
    rows: list[dict[str, Any]] = []
    for block in range(len(tasks)):
        for j in range(half):
            task = tasks[(block * half + j) % len(tasks)]
            messages = kit.generation(task)
            by_prompt[str(messages[-1]["content"])] = task
            rows.append({"prompt": messages, "kind": "solution"})
        for j in range(judge_prompts):
            task = tasks[(block * half + j + 3) % len(tasks)]
            a, b = (answer_text(body) for body in rng.sample(ANSWER_POOL, 2))
            messages = kit.pairwise(task, kit.for_judge(a), kit.for_judge(b))
            judged[str(messages[-1]["content"])] = (a, b, task)
            rows.append({"prompt": messages, "kind": "judgement"})
    jobs = [
        ExecJob(task, extract, f"{k}-{side}")
        for k, (key, (a, b, task)) in enumerate(judged.items())
        for side, extract in (("a", _code(a)), ("b", _code(b)))
    ]
    passed = [r.passed for r in executor.run(jobs)]
    labels = {key: (passed[2 * k], passed[2 * k + 1]) for k, key in enumerate(judged)}
    return Dataset.from_list(rows), by_prompt, labels


def _code(text: str) -> str | None:
    from pairrl.rewards import extract_code

    return extract_code(text)


def grpo_steps(
    model: Path, out: Path, steps: int, problems: int, judge_prompts: int | None = None
) -> list[dict[str, Any]]:
    """Plain TRL GRPO: G = 8 samples per prompt.

    ``judge_prompts=None``: generation prompts only, rewarded by the same executor (same
    tokens as our GRPO mode). Otherwise PairRL's prompt mix (``matched_dataset``): same
    samples and about the same prompt + completion tokens as a PairRL step.
    """
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    from pairrl.rewards.executor import Executor
    from pairrl.rollout.prompt_kit import paper_prompt_kit
    from pairrl.train.data import build_dataset
    from pairrl.train.tiny_tasks import tiny_code_tasks

    executor = Executor(workers=2, timeout_s=5.0)
    matched = judge_prompts is not None
    if judge_prompts is not None:
        dataset, by_prompt, labels = matched_dataset(problems, judge_prompts, executor)
    else:
        dataset, by_prompt, _ = build_dataset(tiny_code_tasks(), paper_prompt_kit().generation)
        labels = {}
    reward_funcs = [_correctness_reward(executor, by_prompt)]
    if matched:
        reward_funcs.append(_verification_reward(labels))
    tokenizer = AutoTokenizer.from_pretrained(model)
    tokenizer.padding_side = "left"
    trainer = GRPOTrainer(
        model=str(model),
        reward_funcs=reward_funcs,
        args=_grpo_config(out, steps, problems, shuffle_dataset=not matched),
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    try:
        trainer.train()
    finally:
        executor.close()
    return [r for r in trainer.state.log_history if "step_time" in r]


def _correctness_reward(executor: Any, by_prompt: dict[str, Any]) -> Callable[..., list]:
    """TRL reward: 1 or 0 for a solution to a generation prompt (its task from ``by_prompt``)
    as the executor finds it; None for other prompts."""
    from pairrl.rewards.results import ExecJob

    def correctness(
        prompts: list[Any], completions: list[Any], **kwargs: Any
    ) -> list[float | None]:
        rows = [
            (i, by_prompt[p[-1]["content"]], c[0]["content"])
            for i, (p, c) in enumerate(zip(prompts, completions, strict=True))
            if p[-1]["content"] in by_prompt
        ]
        jobs = [ExecJob(task, _code(text), str(i)) for i, task, text in rows]
        rewards: list[float | None] = [None] * len(prompts)
        for (i, _, _), result in zip(rows, executor.run(jobs), strict=True):
            rewards[i] = 1.0 if result.passed else 0.0
        return rewards

    return correctness


def _verification_reward(labels: dict[str, tuple[bool, bool]]) -> Callable[..., list]:
    """TRL reward: the paper's verification reward for a judgement of a pairwise prompt
    (the judged solutions' labels from ``labels``); None for other prompts."""
    from pairrl.rewards import parse_pair_ratings, verification_reward

    def verification(
        prompts: list[Any], completions: list[Any], **kwargs: Any
    ) -> list[float | None]:
        return [
            verification_reward(parse_pair_ratings(c[0]["content"]), labels[p[-1]["content"]])
            if p[-1]["content"] in labels
            else None
            for p, c in zip(prompts, completions, strict=True)
        ]

    return verification


def _grpo_config(out: Path, steps: int, problems: int, *, shuffle_dataset: bool) -> Any:
    """TRL's GRPOConfig with the settings our trainer uses on the tiny model (8 samples per
    problem, DAPO loss, the same cap, sampling and optimiser)."""
    from trl import GRPOConfig

    return GRPOConfig(
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
        shuffle_dataset=shuffle_dataset,
    )


@dataclass(frozen=True)
class _Runs:
    """Per-step log rows of every run, and how the matched baseline's prompts were picked."""

    pairrl: list[dict[str, Any]]
    matched: list[dict[str, Any]]  # TRL GRPO on PairRL's prompt mix
    grpo: list[dict[str, Any]]  # TRL GRPO on generation prompts (empty: skipped)
    ours_grpo: list[dict[str, Any]]  # our trainer's GRPO mode (empty: skipped)
    judge_rows: float  # PairRL judgement rows with a pairwise prompt, per step
    judge_prompts: int  # pairwise prompts per step in the matched baseline
    wall_s: float


def main() -> None:
    """Run PairRL, the matched TRL baseline and (unless skipped) the GRPO-mode pair; print
    the comparison."""
    args = _parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        runs = _run_all(args, Path(tmp))
    _print_matched(args, runs)
    if runs.grpo:
        _print_grpo_mode(runs)
    print(f"wall {runs.wall_s:.0f} s")


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", type=Path, default=None, help="a warm-started tiny model (built if absent)"
    )
    parser.add_argument("--steps", type=int, default=4, help="steps per run (first is warm-up)")
    parser.add_argument("--problems", type=int, default=4, help="problems per step (even)")
    parser.add_argument(
        "--skip-grpo-mode",
        action="store_true",
        help="skip the implementation check (our GRPO mode against TRL on code prompts only)",
    )
    return parser.parse_args()


def _run_all(args: argparse.Namespace, tmp_path: Path) -> _Runs:
    """Every run, in ``tmp_path``; the wall time excludes building the model."""
    model = args.model or warm_model(tmp_path)
    started = time.perf_counter()
    pairrl = pairrl_steps(model, tmp_path / "pairrl", args.steps, args.problems)
    # judgement rows that hold a pairwise prompt (the rest are one-token no_pair rows)
    judge_rows = statistics.mean(
        4 * args.problems - (r.get("pairrl/no_pair_rows") or 0.0) for r in pairrl
    )
    judge_prompts = min(args.problems, round(judge_rows / 8))
    matched = grpo_steps(
        model, tmp_path / "matched", args.steps, args.problems, judge_prompts=judge_prompts
    )
    grpo: list[dict[str, Any]] = []
    ours_grpo: list[dict[str, Any]] = []
    if not args.skip_grpo_mode:
        grpo = grpo_steps(model, tmp_path / "grpo", args.steps, args.problems)
        ours_grpo = pairrl_steps(
            model, tmp_path / "ours-grpo", args.steps, args.problems, mode="grpo"
        )
    wall_s = time.perf_counter() - started
    return _Runs(pairrl, matched, grpo, ours_grpo, judge_rows, judge_prompts, wall_s)


def _mean(rows: list[dict[str, Any]], key: str) -> float:
    """Mean of ``key`` over the rows after the first (warm-up), or over every row when no
    later row has it; NaN when none has."""
    values = [r[key] for r in rows[1:] if r.get(key) is not None] or [
        r[key] for r in rows if r.get(key) is not None
    ]
    return statistics.mean(values) if values else float("nan")


def _tokens_per_step(rows: list[dict[str, Any]]) -> float:
    # num_tokens is cumulative (prompt + completion tokens, attention-mask sum)
    return rows[-1]["num_tokens"] / len(rows) if rows else float("nan")


def _per_step(rows: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['step_time']:.2f}" for r in rows)


def _print_matched(args: argparse.Namespace, runs: _Runs) -> None:
    """PairRL against TRL GRPO on the same samples and prompt mix."""
    matched, pairrl = runs.matched, runs.pairrl
    m_step, p_step = _mean(matched, "step_time"), _mean(pairrl, "step_time")
    m_tok, p_tok = _tokens_per_step(matched), _tokens_per_step(pairrl)
    print(f"steps per run {args.steps} (first excluded), problems per step {args.problems}, G = 8")
    print(
        f"PairRL judgement rows with a pairwise prompt: {runs.judge_rows:.1f} per step -> baseline "
        f"gets {runs.judge_prompts} pairwise + {args.problems - runs.judge_prompts} generation prompts x 8"
    )
    print(
        f"TRL GRPO, PairRL prompt mix  step {m_step:.3f} s, {m_tok:.0f} tokens/step "
        f"(steps: {_per_step(matched)} s)"
    )
    print(
        f"ours, PairRL 4+4             step {p_step:.3f} s, {p_tok:.0f} tokens/step "
        f"(steps: {_per_step(pairrl)} s) = generate {_mean(pairrl, 'time/generate_s'):.3f} "
        f"+ execute {_mean(pairrl, 'time/execute_s'):.3f} + judge {_mean(pairrl, 'time/judge_s'):.3f} "
        f"+ update {_mean(pairrl, 'time/update_s'):.3f}; completion tokens: solution "
        f"{_mean(pairrl, 'tokens/solution'):.0f}, judgement {_mean(pairrl, 'tokens/judgement'):.0f}"
    )
    print(
        f"PairRL / TRL GRPO (same samples, tokens {p_tok:.0f} vs {m_tok:.0f} = "
        f"{p_tok / m_tok:.2f}x) = {p_step / m_step:.2f} (target <= 1.15); per token "
        f"{1000 * p_step / p_tok:.3f} vs {1000 * m_step / m_tok:.3f} s/1k tokens = "
        f"{(p_step / p_tok) / (m_step / m_tok):.2f}"
    )


def _print_grpo_mode(runs: _Runs) -> None:
    """Our trainer's GRPO mode against TRL GRPO on the same generation prompts."""
    grpo, ours_grpo = runs.grpo, runs.ours_grpo
    g_step, o_step = _mean(grpo, "step_time"), _mean(ours_grpo, "step_time")
    print(
        f"TRL GRPO, code prompts only  step {g_step:.3f} s, {_tokens_per_step(grpo):.0f} "
        f"tokens/step (steps: {_per_step(grpo)} s)"
    )
    print(
        f"ours, mode grpo              step {o_step:.3f} s, {_tokens_per_step(ours_grpo):.0f} "
        f"tokens/step (steps: {_per_step(ours_grpo)} s)"
    )
    print(
        f"implementation overhead (same samples and prompts): ours-grpo / TRL = {o_step / g_step:.2f}"
    )


if __name__ == "__main__":
    main()
