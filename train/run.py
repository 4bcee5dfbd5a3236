"""Wire a run together: model, tasks, executor, rollout, trainer; train, checkpoint, resume.

Runs on every process of an ``accelerate launch``; the main process builds the tiny model
and the warm start (others wait), and only it writes the resolved config.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from pairrl.config import ConfigError
from pairrl.train.checkpoint_on_signal import CheckpointOnSignal
from pairrl.train.config import TrainConfig
from pairrl.train.plan import RunPlan, grpo_config_kwargs

__all__ = ["run_training"]


def _setup_wandb_env(cfg: TrainConfig, run_dir: Path) -> None:
    if cfg.logging.wandb == "disabled":
        return
    try:
        import wandb  # noqa: F401
    except ImportError as err:  # pragma: no cover - wandb is a core dependency
        raise ConfigError("logging.wandb", ["wandb is not installed: pip install wandb"]) from err
    os.environ["WANDB_MODE"] = cfg.logging.wandb
    os.environ["WANDB_PROJECT"] = cfg.logging.project
    os.environ.setdefault("WANDB_DIR", str(run_dir))
    os.environ.setdefault("WANDB_SILENT", "true")


def _policy_path(
    cfg: TrainConfig, run_dir: Path, state: Any, prompts: Any, tasks: list[Any]
) -> tuple[str, dict[str, Any] | None]:
    """The model folder to train: the configured one, or its warm start inside the run."""
    model_path = Path(cfg.model.path)
    with state.main_process_first():
        if (
            cfg.model.build_tiny
            and not (model_path / "config.json").is_file()
            and state.is_main_process
        ):
            from pairrl.tiny_model import build_tiny_model

            build_tiny_model(model_path, seed=cfg.seed)
    if cfg.warm_start.steps == 0:
        return cfg.model.path, None
    warm_dir = run_dir / "warm_start"
    report: dict[str, Any] | None = None
    with state.main_process_first():
        if state.is_main_process and not (warm_dir / "config.json").is_file():
            if cfg.data.source != "tiny_code":
                raise ConfigError(
                    "warm_start.steps", ["a warm start is provided for data.source tiny_code only"]
                )
            from pairrl.train.tiny_tasks import warm_start_examples
            from pairrl.train.warm_start import warm_start

            examples = warm_start_examples(
                tasks, prompts.generation, prompts.pairwise, num_examples=512, seed=cfg.seed
            )
            report = warm_start(
                model_path,
                examples,
                warm_dir,
                steps=cfg.warm_start.steps,
                lr=cfg.warm_start.lr,
                batch_size=cfg.warm_start.batch_size,
                seed=cfg.seed,
            )
    return str(warm_dir), report


def run_training(cfg: TrainConfig, plan: RunPlan, resume: bool = False) -> dict[str, Any]:
    """Train per ``cfg``; returns a summary (steps, wall time, final metrics, paths)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from accelerate import PartialState
    from transformers import AutoTokenizer
    from transformers.trainer_utils import get_last_checkpoint
    from trl import GRPOConfig

    from pairrl.rewards.executor import Executor
    from pairrl.train.data import build_dataset, load_training_tasks
    from pairrl.train.generation import TRLGenerator
    from pairrl.train.prompting import default_prompt_kit
    from pairrl.train.rollout_func import PairRLRollout
    from pairrl.train.trainer import (
        PairRLTrainer,
        StepTimer,
        pair_verification,
        solution_correctness,
    )

    # TrainingArguments sets up torch.distributed (DDP, DeepSpeed, FSDP) for this launch;
    # the shared accelerate state is read after it.
    args = GRPOConfig(**grpo_config_kwargs(cfg, plan))
    state = PartialState()
    if state.num_processes != plan.num_processes:
        raise ConfigError(
            "plan",
            [f"planned for {plan.num_processes} processes, launched with {state.num_processes}"],
        )
    run_dir = Path(plan.output_dir)
    checkpoint = None
    if resume:
        checkpoint = get_last_checkpoint(str(run_dir)) if run_dir.is_dir() else None
        if checkpoint is None:
            raise ConfigError("--resume", [f"no checkpoint-* folder in {run_dir}"])
    elif run_dir.is_dir() and get_last_checkpoint(str(run_dir)) is not None:
        raise ConfigError(
            "--out", [f"{run_dir} already holds checkpoints: pass --resume or choose a new --out"]
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    _setup_wandb_env(cfg, run_dir)
    if state.is_main_process:
        (run_dir / "config.json").write_text(json.dumps(cfg.model_dump(), indent=2))

    demo = None
    if cfg.data.source == "toy_addition":
        # The CPU demo (pairrl.recipes.toy_addition): its tasks, prompt kit, model build and SFT warm start.
        from pairrl.recipes.toy_addition.pipeline import prepare_demo

        with state.main_process_first():
            demo = prepare_demo(cfg, run_dir, is_main_process=state.is_main_process)
        prompts = demo.prompt_kit
        dataset, tasks_by_prompt, duplicates = build_dataset(demo.tasks, prompts.generation)
        policy_path, warm_report = demo.policy_path, demo.warm_start_report
        skipped: dict[str, int] = {}
    else:
        prompts = default_prompt_kit()
        loaded = load_training_tasks(cfg.data)
        dataset, tasks_by_prompt, duplicates = build_dataset(loaded.tasks, prompts.generation)
        policy_path, warm_report = _policy_path(cfg, run_dir, state, prompts, loaded.tasks)
        skipped = loaded.skipped

    tokenizer = AutoTokenizer.from_pretrained(policy_path)
    tokenizer.padding_side = "left"
    template_kwargs = dict(cfg.model.chat_template_kwargs)

    def tokenize(messages: list[dict[str, str]]) -> list[int]:
        enc = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, return_dict=True, **template_kwargs
        )
        return list(enc["input_ids"])

    def decode(ids: list[int]) -> str:
        return tokenizer.decode(ids, skip_special_tokens=True)

    executor = Executor(
        workers=cfg.executor.num_workers,
        timeout_s=cfg.executor.timeout_s,
        isolation=cfg.executor.isolation,
    )
    rollout = PairRLRollout(
        cfg,
        tasks_by_prompt,
        label=executor.run,
        prompts=prompts,
        tokenize=tokenize,
        decode=decode,
        eos_token_id=tokenizer.eos_token_id,
        generator_factory=lambda trainer: TRLGenerator(trainer, cfg.sampling),
    )
    timer = StepTimer()
    # Slurm pre-emption / time limits send SIGTERM: checkpoint after the step, then stop.
    on_signal = CheckpointOnSignal()
    trainer = PairRLTrainer(
        model=policy_path,
        reward_funcs=[solution_correctness, pair_verification],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[timer, on_signal],
        pairrl_rollout=rollout,
        pairrl_cfg=cfg,
    )
    timer.trainer = trainer
    started = time.perf_counter()
    try:
        trainer.train(resume_from_checkpoint=checkpoint)
    finally:
        executor.close()
    wall = time.perf_counter() - started
    if on_signal.stopped_at_step is not None:
        # Interrupted: the checkpoint is the result; `--resume` continues from it.
        return {
            "main_process": state.is_main_process,
            "run_dir": str(run_dir),
            "interrupted_at_step": on_signal.stopped_at_step,
            "global_step": trainer.state.global_step,
            "wall_s": round(wall, 2),
        }
    final_dir = run_dir / "final"
    trainer.save_model(str(final_dir))
    history = [row for row in trainer.state.log_history if "pairrl/solution_pass_rate" in row]
    if state.is_main_process:
        with (run_dir / "metrics.jsonl").open("w") as fh:
            for row in trainer.state.log_history:
                fh.write(json.dumps(row) + "\n")
    demo_goal = None
    if demo is not None and state.is_main_process:
        from pairrl.recipes.toy_addition.pipeline import finish_demo

        demo_summary = finish_demo(
            cfg,
            run_dir,
            warm_dir=demo.policy_path,
            final_dir=final_dir,
            log_history=trainer.state.log_history,
            timings={
                "train": wall,
                **({"warm_start": warm_report["wall_s"]} if warm_report else {}),
            },
        )
        demo_goal = demo_summary["goal"]
    return {
        "main_process": state.is_main_process,
        "run_dir": str(run_dir),
        "final_model": str(final_dir),
        "metrics_file": str(run_dir / "metrics.jsonl"),
        "resumed_from": checkpoint,
        "global_step": trainer.state.global_step,
        "wall_s": round(wall, 2),
        "problems": len(tasks_by_prompt),
        "duplicate_prompts_dropped": duplicates,
        "tasks_skipped": skipped,
        "demo_goal": demo_goal,
        "warm_start": warm_report,
        "last_metrics": history[-1] if history else {},
    }
