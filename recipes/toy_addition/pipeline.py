"""The toy demo around one training run: prepare (model, warm start) and finish (evaluate,
summarise, plot).

The trainer calls these when ``data.source`` is ``toy_addition``:

* :func:`prepare_demo` before training: the demo's tasks and prompt kit, the tiny model
  built at ``model.path`` if missing (size from ``demo.model``), and the SFT warm start
  into ``RUN/warm_start`` (steps, lr and batch size from ``warm_start``).
* :func:`finish_demo` after training: held-out evaluation of the warm start and of the
  final model, ``RUN/summary.json``, ``RUN/demo.png`` and a console table.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pairrl.recipes.toy_addition.config import DemoConfig
from pairrl.recipes.toy_addition.tasks import AdditionProblem, split_problems

__all__ = ["DemoPrepared", "demo_config", "evaluate_demo", "finish_demo", "prepare_demo"]


def demo_config(cfg: Any, demo: DemoConfig | None = None) -> DemoConfig:
    """``demo`` when given, else the run's ``demo`` section, else the defaults."""
    if demo is not None:
        return demo
    section = getattr(cfg, "demo", None)
    return section if section is not None else DemoConfig()


@dataclass(frozen=True)
class DemoPrepared:
    """What the trainer needs from the demo before training."""

    tasks: list[Any]  # rewards.Task, training split only
    prompt_kit: Any  # pairrl.train.rollout_func.PromptKit
    policy_path: str
    warm_start_report: dict[str, Any] | None
    heldout: list[AdditionProblem]


def prepare_demo(
    cfg: Any, run_dir: str | Path, *, demo: DemoConfig | None = None, is_main_process: bool = True
) -> DemoPrepared:
    """Tasks, prompt kit, model build and warm start (see module docstring)."""
    from pairrl.recipes.toy_addition.prompts import prompt_kit
    from pairrl.recipes.toy_addition.warm_start import warm_start_conversations, warm_start_sft
    from pairrl.tiny_model import build_tiny_model

    demo = demo_config(cfg, demo)
    train_problems, heldout = split_problems(demo.heldout_problems, demo.split_seed)
    model_path = Path(cfg.model.path)
    if is_main_process and not (model_path / "config.json").is_file():
        if not cfg.model.build_tiny:
            raise FileNotFoundError(
                f"model.path {model_path} holds no model and model.build_tiny is false"
            )
        build_tiny_model(
            model_path,
            seed=cfg.seed,
            hidden_size=demo.model.hidden_size,
            num_layers=demo.model.num_layers,
            intermediate_size=demo.model.intermediate_size,
        )
    policy_path, report = str(model_path), None
    if cfg.warm_start.steps > 0:
        warm_dir = Path(run_dir) / "warm_start"
        policy_path = str(warm_dir)
        if is_main_process and not (warm_dir / "config.json").is_file():
            conversations = warm_start_conversations(
                train_problems,
                demo.warm_start_examples,
                seed=cfg.seed,
                dropped_carry_rate=demo.teacher_dropped_carry,
            )
            report = warm_start_sft(
                model_path,
                conversations,
                warm_dir,
                steps=cfg.warm_start.steps,
                lr=cfg.warm_start.lr,
                batch_size=cfg.warm_start.batch_size,
                seed=cfg.seed,
            )
    return DemoPrepared(
        tasks=[p.to_task() for p in train_problems],
        prompt_kit=prompt_kit(),
        policy_path=policy_path,
        warm_start_report=report,
        heldout=heldout,
    )


def evaluate_demo(
    cfg: Any,
    model_dir: str | Path,
    executor: Any,
    reference_pool: Any = None,
    demo: DemoConfig | None = None,
) -> tuple[dict[str, Any], Any]:
    """Held-out metrics of one checkpoint (``pairrl.recipes.toy_addition.evaluate``)."""
    from pairrl.recipes.toy_addition.evaluate import evaluate_checkpoint
    from pairrl.rollout.samplers.base import SamplingParams

    demo = demo_config(cfg, demo)
    _, heldout = split_problems(demo.heldout_problems, demo.split_seed)
    if demo.eval_problems is not None:
        heldout = heldout[: demo.eval_problems]
    sol, judge = cfg.sampling.solution, cfg.sampling.judgement
    return evaluate_checkpoint(
        str(model_dir),
        heldout,
        executor=executor,
        k=demo.eval_k,
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
        batch_size=demo.eval_batch_size,
        swiss_budget_per_candidate=demo.swiss_budget_per_candidate,
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


def finish_demo(
    cfg: Any,
    run_dir: str | Path,
    *,
    warm_dir: str | Path,
    final_dir: str | Path,
    log_history: list[dict[str, Any]],
    timings: dict[str, float],
    demo: DemoConfig | None = None,
) -> dict[str, Any]:
    """Evaluate warm start and final model, write summary.json and demo.png; return the summary."""
    from pairrl.recipes.toy_addition.report import (
        curves_from_log_history,
        goal_checks,
        plot_demo,
        write_summary,
    )
    from pairrl.rewards.executor import Executor

    demo = demo_config(cfg, demo)
    run_dir = Path(run_dir)
    started = time.perf_counter()
    with Executor(
        workers=cfg.executor.num_workers,
        timeout_s=cfg.executor.timeout_s,
        isolation=cfg.executor.isolation,
    ) as executor:
        warm, warm_pool = evaluate_demo(cfg, warm_dir, executor, demo=demo)
        final, _ = evaluate_demo(cfg, final_dir, executor, reference_pool=warm_pool, demo=demo)
    eval_wall = time.perf_counter() - started
    (run_dir / "heldout_reference_pool.json").write_text(json.dumps(warm_pool.to_json()))
    summary: dict[str, Any] = {
        "title": f"PairRL toy demo: mode {cfg.rollout.mode}, seed {cfg.seed}",
        "mode": cfg.rollout.mode,
        "seed": cfg.seed,
        "task": "toy_addition: two-digit a + b with a three-digit sum, as code run by pairrl.rewards.Executor",
        "heldout": {
            "problems": warm["num_problems"],
            "k": demo.eval_k,
            "split_seed": demo.split_seed,
            "judge_pairs": "fixed pairs (0,1),(2,3),.. of the warm start's own held-out samples",
        },
        "warm_start": warm,
        "final": final,
        "goal": goal_checks(warm, final),
        "curves": curves_from_log_history(log_history),
        "wall_s": {**timings, "heldout_eval": eval_wall},
    }
    write_summary(run_dir / "summary.json", summary)
    plot_demo(run_dir / "demo.png", summary)
    print(format_table(summary))
    return summary
