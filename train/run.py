"""One training run, top to bottom: setup (the run folder, locked), tasks and policy (the
warm start), rollout and trainer, train, finish (final model, metrics file).

``run_training`` runs it whole (``pairrl train``). ``training_run`` opens the same run as
stages a caller runs in order, ``warm_start()`` then ``train()``, so that a recipe's
experiment (``pairrl experiment``) can start work of its own between them and after.

Runs on every process of an ``accelerate launch``; the main process builds the tiny model
and the warm start (others wait), and only it writes files shared by the run.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairrl.config import ConfigError
from pairrl.cpu_floats import denormals_flushed
from pairrl.errors import InputError
from pairrl.rewards.tasks import Task
from pairrl.rollout.prompt_kit import Messages, PromptKit
from pairrl.train.build import Training, build_training
from pairrl.train.checkpoints import checkpoint_folders, copy_model_files, publish_folder
from pairrl.train.config import TrainConfig
from pairrl.train.heldout_probe import (
    PAIRS_FILE,
    ProbePair,
    read_probe_pairs,
    write_probe_pairs,
)
from pairrl.train.plan import RunPlan, grpo_config_kwargs
from pairrl.train.policy import Policy, prepare_policy
from pairrl.train.resume import CONFIG_RECORD, ResumePoint, resume_point
from pairrl.train.run_folder import RunLock, lock_run_folder
from pairrl.train.task_family import TaskFamily, task_family
from pairrl.versions import library_versions

__all__ = ["FinishedRun", "TrainingRun", "quiet_libraries", "run_training", "training_run"]


@dataclass(frozen=True)
class FinishedRun:
    """A training that ended normally: what an experiment reads of it afterwards."""

    run_dir: Path
    warm_start_dir: Path | None  # None when the run had no warm start
    final_dir: Path
    log_history: list[dict[str, Any]]
    wall_s: dict[str, float] = field(default_factory=dict)
    started_at: float = 0.0  # time.time() when the run started
    beside: Any = None  # what an experiment ran beside training, for its report


@dataclass
class _Setup:
    """The launch: TRL's arguments, accelerate's state, the run folder, what to resume."""

    args: Any  # trl.GRPOConfig
    state: Any  # accelerate.PartialState
    run_dir: Path
    resume: ResumePoint | None
    lock: RunLock | None  # the run folder's, held by the main process

    @property
    def checkpoint(self) -> str | None:
        """The checkpoint folder training continues from (None: from step 0)."""
        return str(self.resume.checkpoint) if self.resume else None


@dataclass
class _Source:
    """Where the problems come from: the task family, its tasks and prompts."""

    family: TaskFamily
    tasks: list[Task]
    prompts: PromptKit

    def conversations(self, seed: int) -> Callable[[], list[Messages]]:
        """The warm start's data, built only if a warm start runs."""
        return lambda: self.family.warm_start_conversations(seed, self.tasks)


def _setup(cfg: TrainConfig, plan: RunPlan, resume: bool) -> _Setup:
    """The run folder checked first (no library loads for a refused resume), then TRL's
    arguments and accelerate's state. ``RUN/config.json`` is written by a fresh run only:
    a resume keeps the record of the config the run was started with."""
    run_dir = Path(plan.output_dir)
    point = resume_point(cfg, run_dir) if resume else None
    if not resume and checkpoint_folders(run_dir):
        raise ConfigError(
            "--out", [f"{run_dir} already holds checkpoints: pass --resume or choose a new --out"]
        )
    from accelerate import PartialState
    from trl import GRPOConfig

    # TrainingArguments sets up torch.distributed (DDP, DeepSpeed, FSDP) for this launch;
    # the shared accelerate state is read after it.
    args = GRPOConfig(**grpo_config_kwargs(cfg, plan))
    state = PartialState()
    if state.num_processes != plan.num_processes:
        raise ConfigError(
            "plan",
            [f"planned for {plan.num_processes} processes, launched with {state.num_processes}"],
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = lock_run_folder(run_dir) if state.is_main_process else None
    _setup_wandb_env(cfg, run_dir)
    if state.is_main_process and point is None:
        (run_dir / CONFIG_RECORD).write_text(json.dumps(cfg.model_dump(), indent=2))
    if state.is_main_process and point is not None and point.skipped:
        # damaged checkpoints newer than the one resumed from
        for note in point.skipped:
            print(f"[pairrl] --resume: passing over {note}", file=sys.stderr)
        print(f"[pairrl] --resume: resuming from {point.checkpoint}", file=sys.stderr)
    return _Setup(args, state, run_dir, point, lock)


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


def _source(cfg: TrainConfig) -> _Source:
    """The configured task family, with its tasks and prompt kit."""
    family = task_family(cfg)
    return _Source(family, family.training_tasks(), family.prompt_kit())


def run_training(cfg: TrainConfig, plan: RunPlan, resume: bool = False) -> dict[str, Any]:
    """Train per ``cfg``; returns a summary (steps, wall time, final metrics, paths)."""
    with training_run(cfg, plan, resume) as run:
        return run.train()


@contextmanager
def training_run(cfg: TrainConfig, plan: RunPlan, resume: bool = False) -> Iterator[TrainingRun]:
    """The run's folder set up and locked (a refused resume fails here, before libraries
    load) for as long as the caller runs its stages."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    started_at = time.time()
    setup = _setup(cfg, plan, resume)
    try:
        yield TrainingRun(cfg, setup, started_at)
    finally:
        if setup.lock is not None:
            setup.lock.release()


class TrainingRun:
    """One launch's training, as stages: ``warm_start()`` (the policy, warm-started where
    the config asks), then ``train()`` (RL, the final model); ``finished`` once training
    ended normally."""

    def __init__(self, cfg: TrainConfig, setup: _Setup, started_at: float) -> None:
        self.cfg, self.setup, self.started_at = cfg, setup, started_at
        self._source: _Source | None = None
        self._policy: Policy | None = None
        self.finished: FinishedRun | None = None

    @property
    def run_dir(self) -> Path:
        return self.setup.run_dir

    @property
    def is_main(self) -> bool:
        return bool(self.setup.state.is_main_process)

    @property
    def family(self) -> TaskFamily:
        """The configured task family (built on first use)."""
        return self._sources().family

    def _sources(self) -> _Source:
        if self._source is None:
            if self.cfg.logging.console == "progress":
                quiet_libraries()
            self._source = _source(self.cfg)
        return self._source

    def warm_start(self) -> Policy:
        """The policy training starts from: the warm start trained (or reused) here."""
        if self._policy is None:
            source = self._sources()
            self._policy = prepare_policy(
                self.cfg, self.run_dir, self.setup.state, source.conversations(self.cfg.seed)
            )
        return self._policy

    def train(self) -> dict[str, Any]:
        """RL from the warm start; the summary of the finish, or of the stop."""
        cfg, setup, policy = self.cfg, self.setup, self.warm_start()
        source = self._sources()
        training = build_training(
            cfg,
            setup.args,
            setup.run_dir,
            source.tasks,
            source.prompts,
            policy.path,
            probe_pairs=self.probe_pairs(),
        )
        trainer = training.trainer
        started = time.perf_counter()
        try:
            with denormals_flushed():  # on one thread only (pairrl.cpu_floats says why)
                _train(trainer, setup)
        finally:
            training.executor.close()
        wall = time.perf_counter() - started
        stopped_at = training.on_signal.stopped_at_step
        if stopped_at is not None:
            # Interrupted: the checkpoint is the result; `--resume` continues from it.
            return {
                "main_process": setup.state.is_main_process,
                "run_dir": str(setup.run_dir),
                "interrupted_at_step": stopped_at,
                "signal": training.on_signal.received,
                "global_step": trainer.state.global_step,
                "wall_s": round(wall, 2),
            }
        summary, self.finished = _finish(
            cfg, setup, self._sources(), policy, training, wall, self.started_at
        )
        return summary

    def probe_pairs(self) -> list[ProbePair] | None:
        """The held-out judge probe's pairs, on the main process when the config asks for
        a probe: ``heldout_probe.pairs_file``, else the run's own ``RUN/heldout_pairs.jsonl``
        (built by the recipe from the warm-started policy's candidates, once)."""
        probe = self.cfg.heldout_probe
        if not probe.every_steps or not self.is_main:
            return None
        if probe.pairs_file is not None:
            return read_probe_pairs(Path(probe.pairs_file))
        saved = self.run_dir / PAIRS_FILE
        if not saved.is_file():
            build = self._sources().family.heldout_probe_pairs  # type: ignore[attr-defined]
            pairs = build(self.cfg.seed, self.warm_start().path, probe.max_pairs)
            if not pairs:
                raise InputError(
                    "the held-out probe found no two distinct candidates of one held-out "
                    "task to pair: raise the recipe's candidates per task, or set "
                    "heldout_probe.every_steps 0"
                )
            write_probe_pairs(saved, pairs)
        return read_probe_pairs(saved)


def _train(trainer: Any, setup: _Setup) -> None:
    """Train from step 0 or from the resumed checkpoint. A checkpoint at ``max_steps``
    already holds the trained model (the stop came after training): only its state is read
    and the Trainer's loop is not entered, since that loop takes a step before it first
    checks ``max_steps``; the finish copies the checkpoint's weights (``_save_final``)."""
    if not _trained(setup):
        trainer.train(resume_from_checkpoint=setup.checkpoint)
        return
    from transformers import TrainerState

    state_file = setup.resume.checkpoint / "trainer_state.json"  # type: ignore[union-attr]
    trainer.state = TrainerState.load_from_json(str(state_file))


def _trained(setup: _Setup) -> bool:
    """Whether the run resumes from a checkpoint at ``max_steps``: training is done."""
    return setup.resume is not None and setup.resume.step >= setup.args.max_steps


def release_training_state(trainer: Any) -> None:
    """Drop the trainer's model, optimiser and scheduler, and accelerate's references to
    them, once the final model is saved: what runs after training (an experiment's
    benchmark) loads the models it needs itself, and the optimiser's state
    alone is twice the weights; the memory training kept for reuse (``pairrl.memory``) goes
    back to the system too. The trainer's ``state`` (steps, log history) stays."""
    from pairrl.memory import return_freed_memory

    trainer.accelerator.free_memory()
    for owner in (trainer, trainer.callback_handler):  # the callbacks' handler holds them too
        for name in ("model", "model_wrapped", "optimizer", "lr_scheduler", "ref_model"):
            if hasattr(owner, name):
                setattr(owner, name, None)
    return_freed_memory()  # collects them, and gives what training kept for reuse back


def quiet_libraries() -> None:
    """No per-item progress bars from transformers (weights) and datasets (maps)."""
    import datasets
    import transformers

    datasets.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()


def _finish(
    cfg: TrainConfig,
    setup: _Setup,
    source: _Source,
    policy: Policy,
    training: Training,
    wall: float,
    started_at: float,
) -> tuple[dict[str, Any], FinishedRun]:
    """Save the final model and the metrics file, free the trainer; the summary, and the
    finished run an experiment reads."""
    run_dir, is_main, trainer = setup.run_dir, setup.state.is_main_process, training.trainer
    final_dir = run_dir / "final"
    _save_final(trainer, final_dir, is_main, setup.resume.checkpoint if _trained(setup) else None)
    log_history = trainer.state.log_history
    if is_main:
        with (run_dir / "metrics.jsonl").open("w") as fh:
            for row in log_history:
                fh.write(json.dumps(row) + "\n")
    release_training_state(trainer)  # what runs next loads the models it needs itself
    finished = FinishedRun(
        run_dir=run_dir,
        warm_start_dir=policy.warm_start_dir,
        final_dir=final_dir,
        log_history=log_history,
        wall_s={"train": wall, **_warm_start_wall(policy.warm_start_report)},
        started_at=started_at,
    )
    history = [row for row in log_history if "pairrl/solution_pass_rate" in row]
    summary = {
        "main_process": is_main,
        "run_dir": str(run_dir),
        "model_source": policy.source,
        "final_model": str(final_dir),
        "metrics_file": str(run_dir / "metrics.jsonl"),
        "resumed_from": setup.checkpoint,
        "resume_changes": setup.resume.changes if setup.resume else None,
        "checkpoints_passed_over": setup.resume.skipped if setup.resume else None,
        "global_step": trainer.state.global_step,
        "wall_s": round(wall, 2),
        "problems": training.problems,
        "duplicate_prompts_dropped": training.duplicates,
        "tasks_skipped": source.family.skipped,
        "recipe": None,
        "warm_start": policy.warm_start_report,
        "last_metrics": history[-1] if history else {},
        "libraries": library_versions(),
    }
    return summary, finished


def _save_final(trainer: Any, final_dir: Path, is_main: bool, trained: Path | None) -> None:
    """``final/`` whole or absent, as a checkpoint: written next to it, then renamed into
    place. Every process takes part in the save (sharded models are gathered); the main
    one renames. ``trained``: the checkpoint at ``max_steps`` a resumed run ends with, whose
    model files (weights or adapter, config, tokenizer) are copied instead."""
    staged = final_dir.parent / f".{final_dir.name}-staging"
    if is_main:
        shutil.rmtree(staged, ignore_errors=True)
    trainer.accelerator.wait_for_everyone()
    if trained is None:
        trainer.save_model(str(staged))
    elif is_main:
        copy_model_files(trained, staged)
    trainer.accelerator.wait_for_everyone()
    if is_main:
        publish_folder(staged, final_dir)
    trainer.accelerator.wait_for_everyone()


def _warm_start_wall(report: dict[str, Any] | None) -> dict[str, float]:
    """The warm start's wall time when this launch trained it (none when it was reused)."""
    return {"warm_start": report["wall_s"]} if report and "wall_s" in report else {}
