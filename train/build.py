"""The rollout (with its executor) and the trainer built around it, for one training run
(``pairrl.train.run``): the dataset, the policy's text codec, the labeller, the callbacks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pairrl.rewards.tasks import Task
from pairrl.rollout.prompt_kit import PromptKit
from pairrl.train.config import TrainConfig
from pairrl.train.heldout_probe import HeldoutProbeConfig, ProbePair

__all__ = ["Training", "build_training"]


@dataclass
class Training:
    """The trainer and what the run needs of it afterwards."""

    trainer: Any  # pairrl.train.trainer.PairRLTrainer
    executor: Any  # pairrl.rewards.TaskLabeller (its executor), closed when training ends
    on_signal: Any  # pairrl.train.checkpoint_on_signal.CheckpointOnSignal
    problems: int
    duplicates: int


def _labeller(cfg: TrainConfig, tasks: list[Task]) -> Any:
    """The rollout's ``label``: math tasks by math-verify, code tasks in the sandbox (started
    at once when there are code tasks, so that a missing sandbox fails before training)."""
    from pairrl.rewards.answers import TaskLabeller, is_answer_task

    return TaskLabeller(cfg.executor.build, eager=any(not is_answer_task(t) for t in tasks))


def _text_codec(
    cfg: TrainConfig, path: str
) -> tuple[Any, Callable[[list[dict[str, str]]], list[int]], Callable[[list[int]], str]]:
    """The policy's tokenizer (left padding) and the rollout's chat-template encode/decode."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    template_kwargs = dict(cfg.model.chat_template_kwargs)

    def tokenize(messages: list[dict[str, str]]) -> list[int]:
        enc = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, return_dict=True, **template_kwargs
        )
        return list(enc["input_ids"])

    def decode(ids: list[int]) -> str:
        return tokenizer.decode(ids, skip_special_tokens=True)

    return tokenizer, tokenize, decode


def build_training(
    cfg: TrainConfig,
    args: Any,
    run_dir: Path,
    tasks: list[Task],
    prompts: PromptKit,
    policy_path: str,
    probe_pairs: list[ProbePair] | None = None,
) -> Training:
    """The rollout (with its executor) and the trainer built around it; with
    ``probe_pairs``, the held-out judge probe (``pairrl.train.probe_callback``)."""
    from pairrl.rollout.pairrl_rollout import PairRLRollout
    from pairrl.rollout.trl_generation import TRLGenerator
    from pairrl.train.checkpoint_on_signal import CheckpointOnSignal
    from pairrl.train.checkpoints import quiet_tied_head_warning
    from pairrl.train.data import build_dataset
    from pairrl.train.lora import check_targets, peft_config
    from pairrl.train.reward_funcs import pair_verification, solution_correctness
    from pairrl.train.row_temperatures import sample_temperatures
    from pairrl.train.tolerant_wandb import use_tolerant_wandb
    from pairrl.train.trainer import PairRLTrainer, StepTimer

    dataset, tasks_by_prompt, duplicates = build_dataset(tasks, prompts.generation)
    tokenizer, tokenize, decode = _text_codec(cfg, policy_path)
    executor = _labeller(cfg, tasks)
    rollout = PairRLRollout(
        cfg.rollout,
        cfg.reward,
        tasks_by_prompt,
        label=executor.run,
        prompts=prompts,
        tokenize=tokenize,
        decode=decode,
        eos_token_id=tokenizer.eos_token_id,
        generator_factory=lambda trainer: TRLGenerator(trainer, cfg.sampling),
        temperatures=sample_temperatures(
            cfg.sampling.solution.temperature, cfg.sampling.judgement.temperature
        ),
    )
    timer = StepTimer(rollout)
    # Slurm pre-emption and time limits send SIGTERM: checkpoint after the step, then stop.
    on_signal = CheckpointOnSignal()
    # model.lora: TRL wraps the policy in PEFT; checkpoints then hold the adapter only.
    check_targets(policy_path, cfg.model.lora)
    trainer = PairRLTrainer(
        model=policy_path,
        reward_funcs=[solution_correctness, pair_verification],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[timer, on_signal],
        peft_config=peft_config(cfg.model.lora),
        pairrl_rollout=rollout,
        advantage=cfg.advantage,
        loss=cfg.loss,
        reward=cfg.reward,
        dtype=cfg.model.resolved_dtype(),
    )
    timer.trainer = trainer
    if probe_pairs:
        _add_judge_probe(trainer, cfg.heldout_probe, probe_pairs, run_dir, on_signal)
    quiet_tied_head_warning(trainer.model)  # every resume of a tied model would warn
    use_tolerant_wandb(trainer)  # a W&B failure (its helper killed by a stop) costs no step
    if cfg.logging.console == "progress":
        from pairrl.train.progress import StepProgress, quiet_console

        quiet_console(trainer)
        label = f"train ({cfg.rollout.mode})"
        trainer.add_callback(StepProgress(label, run_dir / "train_log.jsonl"))
    return Training(trainer, executor, on_signal, len(tasks_by_prompt), duplicates)


def _add_judge_probe(
    trainer: Any,
    probe: HeldoutProbeConfig,
    pairs: list[ProbePair],
    run_dir: Path,
    on_signal: Any,
) -> None:
    """The held-out judge probe (``pairrl.train.probe_callback``) on ``trainer``; it skips
    its probe once ``on_signal`` (the run's ``CheckpointOnSignal``) has a stop."""
    from pairrl.train.probe_callback import HeldoutJudgeProbe

    judge_probe = HeldoutJudgeProbe(
        pairs,
        probe.every_steps,
        run_dir,
        probe.batch_size,
        stopping=lambda: on_signal.received is not None,
    )
    judge_probe.trainer = trainer
    trainer.add_callback(judge_probe)
