"""Progress bars for a run's long stages, drawn by one display for every process of the run.

``bar(label, total)`` opens one bar: the stage, the bar, done/total, elapsed time, the ETA
and a short status text (``Bar.update(shown=...)``). Outside a board a bar is a display of
its own, closed with the bar. Inside ``board()`` every bar is a line of one shared display;
``Board.link()`` hands a child process what it needs to draw there as well (pass it to
``attach`` in the child, e.g. as a process pool's initializer), so stages running side by
side in two processes are bars of one display rather than two displays overwriting each
other. A child's bar updates, and the lines it prints to ``sys.stdout`` and ``sys.stderr``,
travel through a queue; the parent draws them (the lines above the bars, so they do not
tear a live display). On a terminal the display is live;
in a log file each bar prints its final line when it closes."""

from __future__ import annotations

import io
import itertools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Bar", "Board", "attach", "bar", "board"]

Message = tuple[Any, ...]  # (kind, key, *arguments): open / update / advance / close / print

# This process's open board, and where an attached child sends its bars (the parent
# board's queue); with neither, each bar is a display of its own.
_board: Board | None = None
_remote: Callable[[Message], None] | None = None
_keys = itertools.count()


def _sink() -> Callable[[Message], None] | None:
    return _board.apply if _board is not None else _remote


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
    """One display and the bars drawn on it, keyed by (process id, number). On a terminal
    the display is live; in a log file each bar prints its line when it closes (and the
    bars still open print theirs when the board closes)."""

    def __init__(self) -> None:
        self.display = _display()
        self.live = self.display.console.is_terminal
        self._tasks: dict[Any, Any] = {}
        self._lock = threading.Lock()
        self._queue: Any = None
        self._drain: threading.Thread | None = None
        self._finishing = threading.Event()

    def start(self) -> None:
        if self.live:
            self.display.start()

    def apply(self, message: Message) -> None:
        """Draw one bar message (from this process or a child's queue)."""
        kind, key, *args = message
        with self._lock:
            if kind == "print":
                # to this process's own stream, which a live display redirects above its bars
                print(args[0], file=sys.stderr if key == "stderr" else sys.stdout, flush=True)
                return
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
                del self._tasks[key]  # a finished bar stays on a live display
                self._print([task])

    def _print(self, task_ids: list[Any]) -> None:
        if not self.live and task_ids:
            rows = [t for t in self.display.tasks if t.id in task_ids]
            self.display.console.print(self.display.make_tasks_table(rows))

    def link(self) -> Any:
        """A queue a child process passes to ``attach``; drained into this board."""
        if self._queue is None:
            import multiprocessing

            self._queue = multiprocessing.get_context("spawn").Queue()
            self._drain = threading.Thread(target=self._drain_queue, daemon=True)
            self._drain.start()
        return self._queue

    def _drain_queue(self) -> None:
        from queue import Empty

        while True:
            try:
                message = self._queue.get(timeout=0.1)
            except Empty:
                if self._finishing.is_set():
                    return  # the children are gone and their messages drawn
                continue
            except (EOFError, OSError):
                return  # the pipe broke (a child killed mid-message)
            try:
                self.apply(message)
            except Exception:
                continue  # a bad bar message must never stop a run

    def close(self) -> None:
        """Draw what the children sent (close it after they exit), then stop the display."""
        if self._drain is not None:
            self._finishing.set()
            self._drain.join(timeout=10)
        with self._lock:
            self._print(list(self._tasks.values()))
            self._tasks.clear()
        if self.live:
            self.display.stop()


@contextmanager
def board() -> Iterator[Board | None]:
    """One display for every bar opened inside (and in children attached to its link).
    Nested, the board already open is yielded (None in an attached child: its parent's)."""
    global _board
    if _board is not None or _remote is not None:
        yield _board
        return
    shared = Board()
    shared.start()
    _board = shared
    try:
        yield shared
    finally:
        _board = None
        shared.close()


def attach(link: Any) -> None:
    """In a child process: draw this process's bars on the parent's board, and print its
    lines of ``sys.stdout`` and ``sys.stderr`` there (each to the parent's own)."""
    import multiprocessing.util

    global _remote
    _remote = link.put
    sys.stdout = ForwardedLines(link.put, sys.stdout, "stdout")
    sys.stderr = ForwardedLines(link.put, sys.stderr, "stderr")
    for stream in (sys.stdout, sys.stderr):
        # before the queue's own finaliser (priority 10) closes it: a last line still open
        # is sent, not lost
        multiprocessing.util.Finalize(None, stream.close, exitpriority=20)


class ForwardedLines(io.TextIOBase):
    """A text stream that sends each whole line it is written as a board's ``print``
    message (a line still open waits for its end, or for ``close``). A line redrawn with
    carriage returns (a progress counter) is sent as its last state. ``fileno`` and
    ``encoding`` are the stream it replaces: what writes to the descriptor itself bypasses
    the board.

    >>> sent = []
    >>> out = ForwardedLines(sent.append, sys.__stdout__, "stdout")
    >>> out.write("step 1, "), out.write("loss 0.5\\nstep 2")
    (8, 15)
    >>> sent
    [('print', 'stdout', 'step 1, loss 0.5')]
    >>> _ = out.write("\\r 10%\\r 20%\\r100%\\n")
    >>> sent[-1]
    ('print', 'stdout', '100%')
    >>> out.write("left open"); out.close(); sent[-1]
    9
    ('print', 'stdout', 'left open')
    >>> _ = out.write(""); len(sent)  # closed: to the stream it replaced
    3
    """

    def __init__(self, send: Callable[[Message], None], replaced: Any, name: str) -> None:
        super().__init__()
        self._send, self._replaced, self._name = send, replaced, name
        self._open = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            if self.closed:  # at exit, after the link closed: straight to the console
                return self._replaced.write(text)
            *lines, open_line = (self._open + text).split("\n")
            self._open = open_line.rsplit("\r", 1)[-1]
            for line in lines:
                self._send(("print", self._name, line.rstrip("\r").rsplit("\r", 1)[-1]))
        return len(text)

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._replaced.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._replaced, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self._replaced, "errors", None)

    def close(self) -> None:
        with self._lock:
            if self._open and not self.closed:
                self._send(("print", self._name, self._open))
            self._open = ""
        super().close()


class Bar:
    """One stage's bar: ``update``, ``advance``, ``close`` (also as a context manager)."""

    def __init__(
        self, send: Callable[[Message], None], on_close: Callable[[], None] | None
    ) -> None:
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
    send = _sink()
    if send is not None:
        opened = Bar(send, None)
    else:
        own = Board()
        own.start()
        opened = Bar(own.apply, own.close)
    opened._send(("open", opened._key, label, total, completed))
    return opened
