"""The main job's second process: work queued there runs there on its own threads, training
keeps the threads planned before the run whenever that work ends, one process does the same
work on the same thread counts, and a failed training stops the second process at once
instead of waiting for it (the numbers side by side are checked in
test_recipe_toy_pipeline.py)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pairrl.recipes.comparison import beside
from pairrl.recipes.toy_addition.config import ToyAdditionOptions


def _pid(*_: object) -> int:
    return os.getpid()


def _pid_and_threads(*_: object) -> tuple[int, int]:
    import torch

    return os.getpid(), torch.get_num_threads()


def _sleep(_cfg: object, _options: object, run_dir: Path, *_: object) -> None:
    (run_dir / "child.pid").write_text(str(os.getpid()))
    time.sleep(120)


def _side_by_side(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, work) -> beside.Beside:
    # the lanes' work replaced (the child imports these by name), one thread per process
    monkeypatch.setattr(beside, "evaluate_models", work)
    monkeypatch.setattr(beside, "_baselines_lane", work)
    monkeypatch.setattr(beside, "thread_plan", lambda _options: PLAN)
    cfg = SimpleNamespace(logging=SimpleNamespace(console="dicts"))
    return beside.Beside(cfg, ToyAdditionOptions(), tmp_path, tmp_path)


# training and the work beside it on different counts, so that a count that moves is seen
PLAN = beside.ThreadPlan(training=2, beside=1)


def test_work_queued_beside_runs_in_the_second_process_on_its_threads(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import torch

    threads = torch.get_num_threads()
    with _side_by_side(monkeypatch, tmp_path, _pid_and_threads) as lanes:
        assert lanes.side_by_side
        assert torch.get_num_threads() == PLAN.training  # training's count, set on entry
        child, child_threads = lanes.warm_start_evals()
        assert child != os.getpid() and child_threads == PLAN.beside
        assert lanes.baselines() == (child, PLAN.beside)  # one second process, in order
        lanes.close()
    assert torch.get_num_threads() == threads


def test_training_keeps_its_planned_threads_once_the_work_beside_is_done(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A CPU may round differently on one thread and on two, so training's count must not
    follow the moment the second process finishes: after that work is done, every training
    step still begins on the planned count, and the trainer gets no hook that could move it.
    """
    import torch

    with _side_by_side(monkeypatch, tmp_path, _pid_and_threads) as lanes:
        lanes.baselines()  # the second process is done
        assert not hasattr(lanes, "trainer_callbacks")  # nothing handed to the trainer
        for _step in range(3):
            time.sleep(0.05)  # a done-callback would have fired by now
            assert torch.get_num_threads() == PLAN.training
        lanes.close()


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


def test_one_process_does_the_same_work_on_the_same_thread_counts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import torch

    threads = torch.get_num_threads()
    monkeypatch.setattr(beside, "thread_plan", lambda _options: PLAN)
    options = ToyAdditionOptions(side_by_side=False)
    lanes = beside.Beside(SimpleNamespace(), options, tmp_path, tmp_path)
    monkeypatch.setattr(beside, "evaluate_models", _pid_and_threads)
    monkeypatch.setattr(beside, "_baselines_lane", _pid_and_threads)
    with lanes:
        assert not lanes.side_by_side
        assert torch.get_num_threads() == PLAN.training
        here = (os.getpid(), PLAN.beside)  # here, on the second process's count
        assert lanes.warm_start_evals() == lanes.baselines() == here
        assert torch.get_num_threads() == PLAN.training  # and back
    assert torch.get_num_threads() == threads


def test_without_a_plan_the_work_is_done_here_on_the_threads_there_are(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import torch

    monkeypatch.setattr(beside, "thread_plan", lambda _options: None)
    lanes = beside.Beside(SimpleNamespace(), ToyAdditionOptions(), tmp_path, tmp_path)
    monkeypatch.setattr(beside, "evaluate_models", _pid_and_threads)
    monkeypatch.setattr(beside, "_baselines_lane", _pid_and_threads)
    threads = torch.get_num_threads()
    with lanes:
        assert not lanes.side_by_side and lanes.threads is None
        assert lanes.warm_start_evals() == lanes.baselines() == (os.getpid(), threads)


def test_the_plan_is_fixed_by_the_threads_alone_not_by_side_by_side() -> None:
    import torch

    threads = torch.get_num_threads()
    try:
        for count, expected in ((1, None), (2, (1, 1)), (3, (2, 1)), (16, (8, 8))):
            torch.set_num_threads(count)
            for side_by_side in (True, False):
                plan = beside.thread_plan(ToyAdditionOptions(side_by_side=side_by_side))
                assert (plan and (plan.training, plan.beside)) == expected
        torch.set_num_threads(4)
        assert beside.thread_plan(ToyAdditionOptions(baselines=[])) is None  # nothing beside
    finally:
        torch.set_num_threads(threads)
