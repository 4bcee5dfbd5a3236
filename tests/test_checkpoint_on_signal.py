"""CheckpointOnSignal inside a real transformers Trainer: a SIGTERM that arrives during
step 3 of 10 leads to a checkpoint at step 3 and a clean stop; training resumes from it."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import SimpleNamespace

import torch
from torch import nn
from transformers import Trainer, TrainerCallback, TrainingArguments

from pairrl.train.checkpoint_on_signal import CheckpointOnSignal


class TinyRegression(nn.Module):
    """y = w x; enough for Trainer to run optimiser steps and save checkpoints."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Linear(1, 1, bias=False)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"loss": ((self.w(x) - y) ** 2).mean()}


class Rows(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"x": torch.tensor([float(i % 8)]), "y": torch.tensor([2.0 * (i % 8)])}


class SignalDuringStep(TrainerCallback):
    """Sends SIGTERM to this process while step `at` is running (as Slurm would)."""

    def __init__(self, at: int) -> None:
        self.at = at

    def on_step_begin(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
        if state.global_step + 1 == self.at:
            os.kill(os.getpid(), signal.SIGTERM)


def make_trainer(out: Path, callbacks: list[TrainerCallback]) -> Trainer:
    args = TrainingArguments(
        output_dir=str(out), max_steps=10, per_device_train_batch_size=4, save_steps=100,
        logging_steps=100, report_to=[], use_cpu=True, learning_rate=0.01, seed=0,
        disable_tqdm=True, dataloader_num_workers=0,
    )  # fmt: skip
    return Trainer(model=TinyRegression(), args=args, train_dataset=Rows(), callbacks=callbacks)


def test_sigterm_saves_a_checkpoint_and_stops_then_resumes(tmp_path: Path) -> None:
    previous = signal.getsignal(signal.SIGTERM)
    on_signal = CheckpointOnSignal()
    trainer = make_trainer(tmp_path, [on_signal, SignalDuringStep(at=3)])
    trainer.train()
    # Without the callback the default SIGTERM action would have killed pytest itself.
    assert on_signal.received == signal.SIGTERM
    assert on_signal.stopped_at_step == 3 and trainer.state.global_step == 3
    assert sorted(p.name for p in tmp_path.glob("checkpoint-*")) == ["checkpoint-3"]
    assert signal.getsignal(signal.SIGTERM) == previous  # handler restored after training

    resumed = make_trainer(tmp_path, [CheckpointOnSignal()])
    resumed.train(resume_from_checkpoint=str(tmp_path / "checkpoint-3"))
    assert resumed.state.global_step == 10


def test_no_signal_no_stop(tmp_path: Path) -> None:
    on_signal = CheckpointOnSignal()
    trainer = make_trainer(tmp_path, [on_signal])
    trainer.train()
    assert on_signal.received is None and on_signal.stopped_at_step is None
    assert trainer.state.global_step == 10
    assert not list(tmp_path.glob("checkpoint-3"))


def _rank_main(rank: int, world: int, init_file: str, out_dir: str) -> None:
    """One of two gloo processes; only rank 0 has received SIGTERM."""
    import torch.distributed as dist
    from transformers import TrainerControl, TrainerState

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        on_signal = CheckpointOnSignal()
        if rank == 0:
            on_signal.received = signal.SIGTERM
        args = SimpleNamespace(device=torch.device("cpu"))  # all the callback reads from args
        control = on_signal.on_step_end(args, TrainerState(global_step=7), TrainerControl())  # type: ignore[arg-type]
        Path(out_dir, f"rank{rank}").write_text(
            f"{control.should_save} {control.should_training_stop}"
        )
    finally:
        dist.destroy_process_group()


def test_ranks_agree_to_stop_when_only_one_got_the_signal(tmp_path: Path) -> None:
    """Signals reach ranks at different times; all must stop at the same step or the
    others would hang in the next collective."""
    import torch.multiprocessing as mp

    # fork: the children need nothing re-imported (no CUDA here, so forking torch is safe).
    mp.start_processes(_rank_main, args=(2, str(tmp_path / "init"), str(tmp_path)), nprocs=2,
                       join=True, start_method="fork")  # fmt: skip
    assert (tmp_path / "rank0").read_text() == "True True"
    assert (tmp_path / "rank1").read_text() == "True True"
