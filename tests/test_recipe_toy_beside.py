"""The main job's second process: work queued there runs there, and a failed training
stops it at once instead of waiting for it (the numbers side by side are checked in
test_recipe_toy_pipeline.py)."""

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
        child = lanes.warm_start_evals()
        assert child != os.getpid()
        assert lanes.baselines() == child  # one second process, in order
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


def test_without_two_threads_the_work_is_done_here_when_asked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(beside, "lane_threads", lambda _options: None)
    lanes = beside.Beside(SimpleNamespace(), ToyAdditionOptions(), tmp_path, tmp_path)
    monkeypatch.setattr(beside, "evaluate_models", _pid)
    monkeypatch.setattr(beside, "_baselines_lane", _pid)
    with lanes:
        assert not lanes.side_by_side
        assert lanes.warm_start_evals() == lanes.baselines() == os.getpid()
