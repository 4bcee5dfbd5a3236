"""The main job's second process: work queued there runs there, training takes its threads
back once it is done, and a failed training stops it at once instead of waiting for it (the
numbers side by side are checked in test_recipe_toy_pipeline.py)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pairrl.recipes.toy_addition import beside
from pairrl.recipes.toy_addition.config import ToyAdditionOptions


def _pid(*_: object) -> int:
    return os.getpid()


def _sleep(_cfg: object, _options: object, run_dir: Path, *_: object) -> None:
    (run_dir / "child.pid").write_text(str(os.getpid()))
    time.sleep(120)


def _side_by_side(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, work) -> beside.Beside:
    # the lanes' work replaced (the child imports these by name), one thread per process
    monkeypatch.setattr(beside, "evaluate_models", work)
    monkeypatch.setattr(beside, "_baselines_lane", work)
    monkeypatch.setattr(beside, "lane_threads", lambda _options: (1, 1))
    cfg = SimpleNamespace(logging=SimpleNamespace(console="dicts"))
    return beside.Beside(cfg, ToyAdditionOptions(), tmp_path, tmp_path)


def test_work_queued_beside_runs_in_the_second_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with _side_by_side(monkeypatch, tmp_path, _pid) as lanes:
        assert lanes.side_by_side
        (threads_back,) = lanes.trainer_callbacks()
        child = lanes.warm_start_evals()
        assert child != os.getpid()
        assert lanes.baselines() == child  # one second process, in order
        assert threads_back.lane_done.wait(10)  # its work done: training may take its threads
        lanes.close()


def test_training_takes_the_threads_back_once_the_second_process_is_done() -> None:
    import threading

    import torch

    threads = torch.get_num_threads()
    lane_done = threading.Event()
    callback = beside.ThreadsBack(lane_done, threads + 1)
    step = lambda n: callback.on_step_begin(None, SimpleNamespace(global_step=n), None)  # noqa: E731
    try:
        step(3)
        assert torch.get_num_threads() == threads and callback.at_step is None  # still busy
        lane_done.set()
        step(4)
        assert torch.get_num_threads() == threads + 1 and callback.at_step == 4
        torch.set_num_threads(threads)
        step(5)
        assert torch.get_num_threads() == threads and callback.at_step == 4  # once only
    finally:
        torch.set_num_threads(threads)


def test_a_failed_training_stops_the_second_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import torch

    threads = torch.get_num_threads()
    started = time.monotonic()
    lanes = _side_by_side(monkeypatch, tmp_path, _sleep)
    with pytest.raises(RuntimeError, match="training failed"), lanes:
        pid_file = tmp_path / "child.pid"
        while not pid_file.is_file() and time.monotonic() - started < 60:
            time.sleep(0.1)  # the child is at work
        raise RuntimeError("training failed")
    assert time.monotonic() - started < 90  # its 120 s of work was stopped, not awaited
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)  # gone, and reaped
    assert torch.get_num_threads() == threads


def test_without_two_threads_the_work_is_done_here_when_asked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(beside, "lane_threads", lambda _options: None)
    lanes = beside.Beside(SimpleNamespace(), ToyAdditionOptions(), tmp_path, tmp_path)
    monkeypatch.setattr(beside, "evaluate_models", _pid)
    monkeypatch.setattr(beside, "_baselines_lane", _pid)
    with lanes:
        assert not lanes.side_by_side
        assert lanes.trainer_callbacks() == []  # nothing to hand back
        assert lanes.warm_start_evals() == lanes.baselines() == os.getpid()


def test_thread_counts_do_not_change_the_main_jobs_floats(tmp_path: Path) -> None:
    """What taking the threads back relies on: one SFT step of the main job's model shape
    gives the same loss and gradients, bit for bit, on one thread and on two."""
    import torch
    import yaml
    from transformers import AutoModelForCausalLM

    from pairrl.tiny_model import build_tiny_model

    config = Path(__file__).resolve().parents[1] / "configs" / "toy_cpu.yaml"
    shape = yaml.safe_load(config.read_text())["model"]["tiny"]  # the main job's model
    model_dir = build_tiny_model(tmp_path / "m", seed=0, **shape)
    ids = torch.randint(3, 900, (8, 40), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(ids)
    mask[::2, 30:] = 0  # right padding, as the warm start's batches have

    def loss_and_grads(threads: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
        torch.set_num_threads(threads)
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype="float32")
        loss = model(
            input_ids=ids, attention_mask=mask, labels=ids.masked_fill(mask == 0, -100)
        ).loss
        loss.backward()
        return loss.detach(), [p.grad for p in model.parameters()]

    threads = torch.get_num_threads()
    try:
        one, two = loss_and_grads(1), loss_and_grads(2)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one[0], two[0])
    assert all(torch.equal(a, b) for a, b in zip(one[1], two[1], strict=True))
