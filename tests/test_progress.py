"""Progress bars: a bar of its own outside a board; inside one, every bar (this process's
and a child's, through the board's link) is a line of the one display."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pytest

from pairrl import progress


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
