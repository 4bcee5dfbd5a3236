"""Progress bars for a run's long stages, drawn by one display for every process of the run.

``bar(label, total)`` opens one bar: the stage, the bar, done/total, elapsed time, the ETA
and a short status text (``Bar.update(shown=...)``). Outside a board a bar is a display of
its own, closed with the bar. Inside ``board()`` every bar is a line of one shared display;
``Board.link()`` hands a child process what it needs to draw there as well (pass it to
``attach`` in the child, e.g. as a process pool's initializer), so stages running side by
side in two processes show as two bars of one display, never as two displays fighting over
the terminal. A child's bar updates travel through a queue; the parent draws them.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Bar", "Board", "attach", "bar", "board"]

Message = tuple[Any, ...]  # (kind, key, *arguments): open / update / advance / close

# Where this process's bars go: the open board's `apply`, the parent board's queue (a
# child attached to it), or None (each bar is a display of its own).
_sink: Callable[[Message], None] | None = None
_keys = itertools.count()


def _display() -> Any:
    from rich import get_console
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = get_console()
    if not console.is_terminal:
        # a log file does not wrap: 120 columns keep a training bar's numbers beside the
        # longest benchmark stage name (a terminal keeps its own width)
        console = Console(width=120)
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(bar_width=12),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[shown]}"),
        console=console,
    )


class Board:
    """One display and the bars drawn on it, keyed by (process id, number)."""

    def __init__(self) -> None:
        self.display = _display()
        self._tasks: dict[Any, Any] = {}
        self._lock = threading.Lock()
        self._queue: Any = None
        self._drain: threading.Thread | None = None

    def apply(self, message: Message) -> None:
        """Draw one bar message (from this process or a child's queue)."""
        kind, key, *args = message
        with self._lock:
            if kind == "open":
                label, total, completed = args
                self._tasks[key] = self.display.add_task(
                    label, total=total, completed=completed, shown=""
                )
                return
            task = self._tasks.get(key)
            if task is None:
                return  # a bar opened before this board, or already closed
            if kind == "update":
                completed, shown = args
                fields = {} if shown is None else {"shown": shown}
                self.display.update(task, completed=completed, **fields)
            elif kind == "advance":
                self.display.advance(task, args[0])
            elif kind == "close":
                del self._tasks[key]  # the finished bar stays on the display

    def link(self) -> Any:
        """A queue a child process passes to ``attach``; drained into this board."""
        if self._queue is None:
            import multiprocessing

            self._queue = multiprocessing.get_context("spawn").Queue()
            self._drain = threading.Thread(target=self._drain_queue, daemon=True)
            self._drain.start()
        return self._queue

    def _drain_queue(self) -> None:
        while (message := self._queue.get()) is not None:
            self.apply(message)

    def close(self) -> None:
        if self._queue is not None:
            self._queue.put(None)  # after every message a child sent before it
            assert self._drain is not None
            self._drain.join(timeout=10)
        self.display.stop()


@contextmanager
def board() -> Iterator[Board | None]:
    """One display for every bar opened inside (and in children attached to its link).
    Nested: the outer board is used, and None is yielded."""
    global _sink
    if _sink is not None:
        yield None
        return
    shared = Board()
    shared.display.start()
    _sink = shared.apply
    try:
        yield shared
    finally:
        _sink = None
        shared.close()


def attach(link: Any) -> None:
    """In a child process: draw this process's bars on the parent's board."""
    global _sink
    _sink = link.put


class Bar:
    """One stage's bar: ``update``, ``advance``, ``close`` (also as a context manager)."""

    def __init__(self, send: Callable[[Message], None], on_close: Callable[[], None] | None):
        self._send = send
        self._key = (os.getpid(), next(_keys))
        self._on_close = on_close
        self._open = True

    def update(self, completed: float | None = None, shown: str | None = None) -> None:
        """Set the completed count and/or the status text (None leaves it as it is)."""
        self._send(("update", self._key, completed, shown))

    def advance(self, n: float = 1) -> None:
        self._send(("advance", self._key, n))

    def close(self) -> None:
        if self._open:
            self._open = False
            self._send(("close", self._key))
            if self._on_close is not None:
                self._on_close()

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def bar(label: str, total: float, completed: float = 0) -> Bar:
    """Open a bar: on the board when one is open (or the parent's), else a display of its own."""
    if _sink is not None:
        opened = Bar(_sink, None)
    else:
        own = Board()
        own.display.start()
        opened = Bar(own.apply, own.close)
    opened._send(("open", opened._key, label, total, completed))
    return opened
