"""Progress bars: a bar of its own outside a board; inside one, every bar (this process's
and a child's, through the board's link) is a line of the one display. On a terminal the
display is live; in a log file each stage prints whole lines (at its start, every
interval, at its end), timed here by a clock the test moves."""

from __future__ import annotations

import io
import itertools
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from rich.console import Console

from pairrl import progress

REPO = Path(__file__).resolve().parents[1]
# A log file's progress line: the date and time, then the stage's line.
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (?P<line>\S.*)$")


def _child_stage(label: str) -> int:
    """Runs in a spawned child attached to the parent's board."""
    with progress.bar(label, total=3) as stage:
        stage.advance(2)
        stage.update(completed=3, shown="ver 0.50")
    return 3


def _attached_pool(board: progress.Board) -> ProcessPoolExecutor:
    """One spawned child, attached to ``board`` as the main job's second process is."""
    return ProcessPoolExecutor(
        max_workers=1,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=progress.attach,
        initargs=(board.link(),),
    )


def _tasks(board: progress.Board) -> dict[str, tuple[float, float | None, str]]:
    return {t.description: (t.completed, t.total, t.fields["shown"]) for t in board.display.tasks}


def test_a_childs_bars_are_drawn_on_the_parents_board() -> None:
    with progress.board() as board:
        assert board is not None
        with progress.board() as inner:  # nested: the outer board draws
            assert inner is board
            mine = progress.bar("parent stage", total=5)
        mine.advance(4)
        pool = _attached_pool(board)
        with pool:
            assert pool.submit(_child_stage, "child stage").result(timeout=120) == 3
        mine.close()
    # closing the board drained every message the child sent before it finished
    assert _tasks(board) == {
        "parent stage": (4, 5, ""),
        "child stage": (3, 3, "ver 0.50"),
    }


def test_outside_a_board_a_bar_is_a_display_of_its_own() -> None:
    stage = progress.bar("alone", total=2)
    stage.advance(1)
    stage.update(shown="pass 1.00")
    stage.close()
    stage.close()  # closing twice is harmless
    with progress.board() as board:  # and a board can open after it
        assert board is not None
        progress.bar("next", total=1).advance(1)
    assert _tasks(board) == {"next": (1, 1, "")}


def test_in_a_log_file_each_bar_prints_its_line_when_it_closes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with progress.board() as board:
        assert board is not None and not board.live  # pytest's stdout is no terminal
        done = progress.bar("stage one", total=2)
        progress.bar("stage two", total=4).advance(1)
        done.advance(2)
        done.close()
        assert "stage one" in capsys.readouterr().out  # printed when it closed
    out = capsys.readouterr().out
    assert "stage two" in out and "1/4" in out  # still open: printed when the board closed
    assert "stage one" not in out  # once only


def _child_prints() -> None:
    import sys
    import warnings

    print("a line from the child")
    warnings.warn("a warning from the child", stacklevel=1)
    sys.stderr.write("half a line, ")
    sys.stderr.write("then its end\n")
    sys.stdout.write("the last line, left open")


def test_a_childs_prints_are_drawn_by_the_parents_board(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # on a terminal a child's raw writes would tear the parent's live display: they travel
    # to the parent as whole lines and print above the bars
    with progress.board() as board:
        assert board is not None
        pool = _attached_pool(board)
        with pool:
            pool.submit(_child_prints).result(timeout=120)
    out, err = capsys.readouterr()  # the parent's own streams: its board printed them
    assert "a line from the child" in out
    assert "a warning from the child" in err
    assert "half a line, then its end" in err
    assert "the last line, left open" in out  # sent when the child's streams closed


class FakeClock:
    """A board's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _log_board(every: float, clock: FakeClock | None = None) -> tuple[progress.Board, io.StringIO]:
    """A board drawing into a log file (a stream that is no terminal)."""
    out = io.StringIO()
    board = progress.Board(Console(file=out, width=120), clock=clock or time.monotonic, every=every)
    assert not board.live
    return board, out


def _lines(out: io.StringIO) -> list[str]:
    """The stages' lines, less their date and time (each line is whole and dated)."""
    matches = [LOG_LINE.match(line) for line in out.getvalue().splitlines()]
    assert all(matches), out.getvalue()
    return [m["line"] for m in matches if m]


def test_in_a_log_file_a_stage_prints_a_line_at_its_start_every_interval_and_at_its_end() -> None:
    clock = FakeClock()
    board, out = _log_board(every=60, clock=clock)
    stage = board.bar("sample", total=10)
    assert _lines(out) == ["sample: started, 0/10"]
    clock.now += 30
    stage.advance(2)
    board.tick()
    assert len(_lines(out)) == 1  # within the interval: no line
    clock.now += 30
    stage.advance(1)
    assert _lines(out)[-1] == "sample: 3/10 (30%)  20.0 s/it  elapsed 0:01:00  eta 0:02:20"
    stage.advance(1)
    board.tick()
    assert len(_lines(out)) == 2
    clock.now += 60
    board.tick()  # no item finished for an interval: the heartbeat's line
    assert _lines(out)[-1] == "sample: 4/10 (40%)  30.0 s/it  elapsed 0:02:00  eta 0:03:00"
    clock.now += 30
    stage.update(completed=10, shown="ver 0.50")
    assert _lines(out)[-1] == "sample: finished 10/10 in 0:02:30  15.0 s/it  ver 0.50"
    clock.now += 600
    board.tick()
    stage.close()
    board.close()
    assert len(_lines(out)) == 4  # a finished stage is quiet, open or closed


def test_in_a_log_file_no_stage_prints_more_often_than_the_interval() -> None:
    clock = FakeClock()
    board, out = _log_board(every=60, clock=clock)
    fast = board.bar("label", total=1000)
    slow = board.bar("agreement", total=10)
    printed: dict[str, list[float]] = {"label": [], "agreement": []}
    for second in range(1, 301):
        clock.now += 1
        before = len(_lines(out))
        fast.advance(3)
        if second % 50 == 0:
            slow.advance(1)
        board.tick()
        for line in _lines(out)[before:]:
            printed[line.split(":")[0]].append(clock.now)
    for name, times in printed.items():
        assert len(times) == 5, name  # at 60, 120, ... 300 s
        assert all(b - a >= 60 for a, b in itertools.pairwise(times)), name
    assert _lines(out)[-1].startswith("agreement: 6/10 (60%)  50.0 s/it  elapsed 0:05:00")
    assert "label: 900/1000 (90%)  3.0 it/s  elapsed 0:05:00  eta 0:00:33" in _lines(out)


def test_in_a_log_file_a_stage_closed_early_or_resumed_says_so() -> None:
    clock = FakeClock()
    board, out = _log_board(every=60, clock=clock)
    resumed = board.bar("train (pairrl)", total=100, completed=40)
    done = board.bar("sample", total=8, completed=8)
    clock.now += 120
    resumed.update(completed=50, shown="pass 0.25")  # its rate counts the 10 steps it did
    done.close()
    board.close()  # still open: its last line now
    assert _lines(out) == [
        "train (pairrl): started, 40/100",
        "sample: 8/8, nothing to do",
        "train (pairrl): 50/100 (50%)  12.0 s/it  elapsed 0:02:00  eta 0:10:00  pass 0.25",
        "train (pairrl): closed at 50/100 after 0:02:00  12.0 s/it  pass 0.25",
    ]


def test_in_a_log_file_the_heartbeat_prints_a_stage_that_makes_no_progress() -> None:
    board, out = _log_board(every=0.05)  # the real clock and the board's own thread
    board.start()
    board.bar("stalled", total=3)
    deadline = time.monotonic() + 60
    while sum("elapsed" in line for line in _lines(out)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    board.close()
    lines = _lines(out)
    assert sum(line.startswith("stalled: 0/3 (0%)  elapsed ") for line in lines) >= 2, lines
    assert all("eta ?" in line for line in lines if "elapsed" in line)  # no rate yet
    assert lines[-1].startswith("stalled: closed at 0/3 after ")


def test_on_a_terminal_a_stage_is_a_bar_not_lines() -> None:
    out = io.StringIO()
    board = progress.Board(Console(file=out, force_terminal=True, width=100), every=0)
    assert board.live
    board.start()
    with board.bar("on a terminal", total=4) as stage:
        stage.advance(3)
    board.close()
    text = out.getvalue()
    assert "on a terminal" in text and "3/4" in text and "━" in text
    assert "started" not in text and "elapsed" not in text


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, 30.0), ("5", 5.0), ("0", 0.0), ("90s", 90.0), ("soon", 30.0), ("-1", 30.0)],
)
def test_the_interval_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: float
) -> None:
    if value is None:
        monkeypatch.delenv(progress.EVERY_S_ENV, raising=False)
    else:
        monkeypatch.setenv(progress.EVERY_S_ENV, value)
    assert progress.every_s() == expected
    assert progress.Board(Console(file=io.StringIO())).every_s == expected


def test_in_a_log_file_a_childs_stages_print_their_lines_in_the_parent(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(progress.EVERY_S_ENV, "0")  # a line at every update
    with progress.board() as board:
        assert board is not None and not board.live
        mine = progress.bar("parent stage", total=2)
        pool = _attached_pool(board)
        with pool:
            assert pool.submit(_child_stage, "child stage").result(timeout=120) == 3
            pool.submit(_child_prints).result(timeout=120)
        mine.advance(1)
    out = capsys.readouterr().out.splitlines()
    printed = {"a line from the child", "the last line, left open"}  # the child's prints
    stamped = [LOG_LINE.match(line) for line in out if line not in printed]
    assert all(stamped), out  # every other line is one whole, dated line
    lines = [m["line"] for m in stamped if m]
    child = [line for line in lines if line.startswith("child stage: ")]
    assert child[0] == "child stage: started, 0/3"
    assert child[1].startswith("child stage: 2/3 (67%)  ")
    assert child[2].startswith("child stage: finished 3/3 in 0:00:")
    assert child[2].endswith("  ver 0.50") and len(child) == 3
    parent = [line for line in lines if line.startswith("parent stage: ")]
    assert parent[0] == "parent stage: started, 0/2"
    assert parent[1].startswith("parent stage: 1/2 (50%)  ")
    assert parent[2].startswith("parent stage: closed at 1/2 after ") and len(parent) == 3
    assert len(lines) == 6


@pytest.mark.slow
def test_pairrl_train_into_a_log_file_prints_progress_lines(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    pairrl = shutil.which("pairrl", path=str(Path(sys.executable).parent)) or "pairrl"
    sets = [
        f"model.path={tiny_model_dir}",
        "model.build_tiny=false",
        "batch.max_steps=2",
        "warm_start.steps=10",
        "logging.wandb=disabled",
    ]
    args = [pairrl, "train", str(REPO / "configs" / "tiny_cpu.yaml"), "--out", str(tmp_path / "r")]
    args += [arg for s in sets for arg in ("--set", s)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", progress.EVERY_S_ENV: "0"}
    log = tmp_path / "job.log"  # as under Slurm or nohup: stdout and stderr to a file
    with log.open("w") as handle:
        proc = subprocess.run(args, stdout=handle, stderr=subprocess.STDOUT, env=env, timeout=600)
    text = log.read_text()
    assert proc.returncode == 0, text[-3000:]
    lines = [m["line"] for m in map(LOG_LINE.match, text.splitlines()) if m]
    assert "warm start (SFT): started, 0/10" in lines
    assert any(line.startswith("warm start (SFT): 5/10 (50%)  ") for line in lines), text
    assert any(line.startswith("warm start (SFT): finished 10/10 in ") for line in lines), text
    assert "train (pairrl): started, 0/2" in lines
    assert any(line.startswith("train (pairrl): finished 2/2 in ") for line in lines), text
    assert "━" not in text  # no bars in a log file
