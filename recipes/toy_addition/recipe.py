"""The toy recipe as a ``pairrl.train.recipe.Recipe``: tasks, prompts, warm-start data, and
the end-of-run held-out evaluation (``RUN/summary.json``, ``RUN/demo.png``, a table).

``after_training`` evaluates the warm start and the final model on the held-out problems
(the warm start's candidates also serve as a fixed pool that both judges face).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pairrl.recipes.toy_addition.config import ToyAdditionOptions
from pairrl.recipes.toy_addition.tasks import split_problems
from pairrl.rewards.tasks import Task
from pairrl.rollout.prompt_kit import Conversation, PromptKit
from pairrl.train.recipe import FinishedRun

__all__ = ["ToyAdditionRecipe", "evaluate_model", "format_table"]


class ToyAdditionRecipe:
    """Two-digit addition as code, and judging of it (see the package docstring)."""

    options_model = ToyAdditionOptions

    def training_tasks(self, options: ToyAdditionOptions) -> list[Task]:
        """The training split (never the held-out problems)."""
        train, _ = split_problems(options.heldout_problems, options.split_seed)
        return [p.to_task() for p in train]

    def heldout_tasks(self, options: ToyAdditionOptions) -> list[Task]:
        """The held-out split (``eval_problems`` of them when set)."""
        _, heldout = split_problems(options.heldout_problems, options.split_seed)
        if options.eval_problems is not None:
            heldout = heldout[: options.eval_problems]
        return [p.to_task() for p in heldout]

    def prompt_kit(self, options: ToyAdditionOptions) -> PromptKit:
        """Compact toy prompts with the product's output formats."""
        from pairrl.recipes.toy_addition.prompts import prompt_kit

        return prompt_kit()

    def warm_start_conversations(
        self, options: ToyAdditionOptions, seed: int, tasks: Sequence[Task]
    ) -> list[Conversation]:
        """Solutions and judgements from a teacher that drops the units carry at a rate."""
        from pairrl.recipes.toy_addition.conversations import warm_start_conversations

        train, _ = split_problems(options.heldout_problems, options.split_seed)
        return warm_start_conversations(
            train,
            options.warm_start_examples,
            seed=seed,
            dropped_carry_rate=options.teacher_dropped_carry,
        )

    def after_training(
        self, cfg: Any, options: ToyAdditionOptions, run: FinishedRun
    ) -> dict[str, Any]:
        """Held-out evaluation of the warm start and the final model; returns the goal."""
        if run.warm_start_dir is None:
            raise ValueError("the toy recipe compares against its warm start: warm_start.steps > 0")
        summary = finish(cfg, options, run)
        return {"goal": summary["goal"], "summary": str(run.run_dir / "summary.json")}


def evaluate_model(
    cfg: Any,
    options: ToyAdditionOptions,
    model_dir: str | Path,
    executor: Any,
    reference_pool: Any = None,
) -> tuple[dict[str, Any], Any]:
    """Held-out metrics of one checkpoint (``evaluate.evaluate_checkpoint``)."""
    from pairrl.recipes.toy_addition.evaluate import evaluate_checkpoint
    from pairrl.rollout.samplers.base import SamplingParams

    _, heldout = split_problems(options.heldout_problems, options.split_seed)
    if options.eval_problems is not None:
        heldout = heldout[: options.eval_problems]
    sol, judge = cfg.sampling.solution, cfg.sampling.judgement
    return evaluate_checkpoint(
        str(model_dir),
        heldout,
        executor=executor,
        k=options.eval_k,
        solution_sampling=SamplingParams(
            temperature=sol.temperature, top_p=sol.top_p, max_tokens=sol.max_tokens, seed=cfg.seed
        ),
        judge_sampling=SamplingParams(
            temperature=judge.temperature,
            top_p=judge.top_p,
            max_tokens=judge.max_tokens,
            seed=cfg.seed + 1,
        ),
        reference_pool=reference_pool,
        seed=cfg.seed,
        batch_size=options.eval_batch_size,
        swiss_budget_per_candidate=options.swiss_budget_per_candidate,
    )


def _headline(metrics: dict[str, Any]) -> dict[str, Any]:
    return {
        "solution_pass_rate": metrics["solution_pass_rate"],
        "judge_balanced_accuracy": metrics["judge_balanced_accuracy"],
        **{name: metrics["best_of_k"][name] for name in ("random", "swiss", "majority", "oracle")},
    }


def format_table(summary: dict[str, Any]) -> str:
    """A plain-text table of the held-out headline numbers."""
    rows = [("", "warm start", "final")]
    warm, final = _headline(summary["warm_start"]), _headline(summary["final"])
    for key in warm:
        w, f = warm[key], final[key]
        rows.append((key, "n/a" if w is None else f"{w:.3f}", "n/a" if f is None else f"{f:.3f}"))
    warm_pool = summary["final"].get("best_of_k_warm_pool")
    if warm_pool is not None:  # the trained judge on the warm start's own candidates
        rows.append(
            (
                "swiss on warm-start pool",
                f"{summary['warm_start']['best_of_k']['swiss']:.3f}",
                f"{warm_pool['swiss']:.3f}",
            )
        )
    width = max(len(r[0]) for r in rows)
    lines = [f"{a:<{width}}  {b:>10}  {c:>10}" for a, b, c in rows]
    goal = summary["goal"]
    lines.append(
        f"goal met: {goal['met']} ({json.dumps({k: v for k, v in goal.items() if k != 'met'})})"
    )
    return "\n".join(lines)


def finish(cfg: Any, options: ToyAdditionOptions, run: FinishedRun) -> dict[str, Any]:
    """Evaluate warm start and final model, write summary.json and demo.png; return the summary."""
    from pairrl.recipes.toy_addition.report import (
        curves_from_log_history,
        goal_checks,
        plot_demo,
        write_summary,
    )
    from pairrl.rewards.executor import Executor

    started = time.perf_counter()
    with Executor(
        workers=cfg.executor.num_workers,
        timeout_s=cfg.executor.timeout_s,
        isolation=cfg.executor.isolation,
    ) as executor:
        warm, warm_pool = evaluate_model(cfg, options, run.warm_start_dir, executor)
        final, _ = evaluate_model(cfg, options, run.final_dir, executor, reference_pool=warm_pool)
    eval_wall = time.perf_counter() - started
    (run.run_dir / "heldout_reference_pool.json").write_text(json.dumps(warm_pool.to_json()))
    summary: dict[str, Any] = {
        "title": f"PairRL toy demo: mode {cfg.rollout.mode}, seed {cfg.seed}",
        "mode": cfg.rollout.mode,
        "seed": cfg.seed,
        "task": "toy_addition: two-digit a + b with a three-digit sum, as code run by the executor",
        "heldout": {
            "problems": warm["num_problems"],
            "k": options.eval_k,
            "split_seed": options.split_seed,
            "judge_pairs": "fixed pairs (0,1),(2,3),.. of the warm start's own held-out samples",
        },
        "warm_start": warm,
        "final": final,
        "goal": goal_checks(warm, final),
        "curves": curves_from_log_history(run.log_history),
        "wall_s": {**run.wall_s, "heldout_eval": eval_wall},
    }
    write_summary(run.run_dir / "summary.json", summary)
    plot_demo(run.run_dir / "demo.png", summary)
    print(format_table(summary))
    return summary
