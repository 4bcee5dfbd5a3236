"""Progress bars for a run's long stages, drawn by one display for every process of the run.

``bar(label, total)`` opens one bar: the stage, the bar, done/total, elapsed time, the ETA
and a short status text (``Bar.update(shown=...)``). Outside a board a bar is a display of
its own, closed with the bar. Inside ``board()`` every bar is a line of one shared display;
``Board.link()`` hands a child process what it needs to draw there as well (pass it to
``attach`` in the child, e.g. as a process pool's initializer), so stages running side by
side in two processes are bars of one display rather than two displays overwriting each
other. A child's bar updates, and the lines it prints to ``sys.stdout`` and ``sys.stderr``,
travel through a queue; the parent draws them (the lines above the bars, so they do not
tear a live display).

On a terminal the display is live. In a log file (stdout not a terminal: Slurm, nohup)
each stage prints whole, dated lines: one when it opens, one every
``$PAIRRL_PROGRESS_EVERY_S`` seconds while it runs (``every_s``, default 30: done/total,
rate, elapsed, ETA, status text; also while no item finishes) and one when it reaches its
total or closes. The board's process prints a child's lines too: none interleave."""

from __future__ import annotations

import functools
import io
import itertools
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["EVERY_S_ENV", "Bar", "Board", "attach", "bar", "board", "every_s"]

EVERY_S_ENV = "PAIRRL_PROGRESS_EVERY_S"
DEFAULT_EVERY_S = 30.0

Message = tuple[Any, ...]  # (kind, key, *arguments): open / update / advance / close / print

# This process's open board, and where an attached child sends its bars (the parent
# board's queue); with neither, each bar is a display of its own.
_board: Board | None = None
_remote: Callable[[Message], None] | None = None
_keys = itertools.count()


def _sink() -> Callable[[Message], None] | None:
    return _board.apply if _board is not None else _remote


def _display(console: Any = None) -> Any:
    from rich import get_console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(bar_width=12),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[shown]}"),
        console=console or get_console(),
    )


def every_s() -> float:
    """Seconds between a running stage's lines in a log file: ``$PAIRRL_PROGRESS_EVERY_S``
    (0: a line at every update), 30 when unset or not a number of seconds."""
    return _every_s(os.environ.get(EVERY_S_ENV, "").strip())


@functools.cache
def _every_s(raw: str) -> float:
    try:
        value = float(raw.removesuffix("s")) if raw else DEFAULT_EVERY_S
    except ValueError:
        value = math.nan
    if math.isfinite(value) and value >= 0:
        return value
    warning = f"{EVERY_S_ENV}={raw!r} is not a number of seconds; using {DEFAULT_EVERY_S:g}"
    print(warning, file=sys.stderr)
    return DEFAULT_EVERY_S


@dataclass
class _Stage:
    """What a stage's log lines say: its counts, its status text, its times (board clock)."""

    label: str
    total: float | None
    done: float
    opened: float  # when it opened
    first: float  # its count then: a resumed stage's rate counts what it did since
    printed: float  # when it printed its last line
    shown: str = ""
    finished: bool = False  # it printed its last line


def _clock_text(seconds: float) -> str:
    whole = int(max(seconds, 0.0))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def _count(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def _line(stage: _Stage, now: float, event: str | None) -> str:
    """A stage's log line: ``event`` is "started", "finished", "closed" or "nothing to
    do"; None is a progress line (percent, rate, elapsed, ETA).

    >>> s = _Stage("train", 10, 4, opened=0.0, first=1, printed=0.0, shown="pass 0.50")
    >>> _line(s, 90.0, None)
    'train: 4/10 (40%)  30.0 s/it  elapsed 0:01:30  eta 0:03:00  pass 0.50'
    """
    total = "?" if stage.total is None else _count(stage.total)
    counts = f"{_count(stage.done)}/{total}"
    elapsed = now - stage.opened
    items = stage.done - stage.first
    rate = ""
    if items > 0 and elapsed > 0:
        rate = f"{items / elapsed:.1f} it/s" if items >= elapsed else f"{elapsed / items:.1f} s/it"
    if event == "started":
        parts = [f"started, {counts}"]
    elif event == "nothing to do":
        parts = [f"{counts}, nothing to do"]
    elif event in ("finished", "closed"):
        ended = f"finished {counts} in" if event == "finished" else f"closed at {counts} after"
        parts = [f"{ended} {_clock_text(elapsed)}", rate]
    else:
        percent = f" ({100 * stage.done / stage.total:.0f}%)" if stage.total else ""
        eta = "?"
        if rate and stage.total is not None:
            eta = _clock_text(max(stage.total - stage.done, 0) * elapsed / items)
        parts = [counts + percent, rate, f"elapsed {_clock_text(elapsed)}", f"eta {eta}"]
    return f"{stage.label}: " + "  ".join(p for p in [*parts, stage.shown] if p)


class Board:
    """One display and the bars drawn on it, keyed by (process id, number). On a terminal
    (``console``, default rich's) the display is live; in a log file each stage prints its
    lines (module docstring) by ``clock``, a running one's every ``every`` s (``every_s()``)."""

    def __init__(
        self,
        console: Any = None,
        clock: Callable[[], float] = time.monotonic,
        every: float | None = None,
    ) -> None:
        self.display = _display(console)
        self.live = self.display.console.is_terminal
        self.every_s = every_s() if every is None else every
        self._clock = clock
        self._tasks: dict[Any, Any] = {}
        self._stages: dict[Any, _Stage] = {}  # in a log file: each open bar's
        self._lock = threading.Lock()
        self._queue: Any = None
        self._drain: threading.Thread | None = None
        self._finishing = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._stopping = threading.Event()

    def start(self) -> None:
        """Start the live display, or in a log file the heartbeat (``tick``, for stalled stages)."""
        if self.live:
            self.display.start()
        elif self.every_s > 0:
            self._heartbeat = threading.Thread(target=self._beat, daemon=True)
            self._heartbeat.start()

    def bar(self, label: str, total: float, completed: float = 0) -> Bar:
        """Open a bar on this board."""
        return Bar(self.apply, None).open(label, total, completed)

    def apply(self, message: Message) -> None:
        """Draw one bar message (from this process or a child's queue)."""
        kind, key, *args = message
        with self._lock:
            if kind == "print":
                # to this process's own stream, which a live display redirects above its bars
                stream = sys.stderr if key == "stderr" else sys.stdout
                stream.write(f"{args[0]}\n")
                stream.flush()
                return
            if kind == "open":
                self._open_stage(key, *args)
                return
            task = self._tasks.get(key)
            if task is None:
                return  # a bar opened before this board, or already closed
            stage = self._stages.get(key)
            if kind == "update":
                completed, shown = args
                fields = {} if shown is None else {"shown": shown}
                self.display.update(task, completed=completed, **fields)
                if stage is not None:
                    stage.done = stage.done if completed is None else completed
                    stage.shown = stage.shown if shown is None else shown
            elif kind == "advance":
                self.display.advance(task, args[0])
                if stage is not None:
                    stage.done += args[0]
            elif kind == "close":
                del self._tasks[key]  # a finished bar stays on a live display
                self._close_stage(key)
                return
            if stage is not None:
                self._progressed(stage)

    def _open_stage(self, key: Any, label: str, total: float, completed: float) -> None:
        self._tasks[key] = self.display.add_task(label, total=total, completed=completed, shown="")
        if self.live:
            return
        now = self._clock()
        stage = self._stages[key] = _Stage(label, total, completed, now, completed, now)
        stage.finished = total is not None and completed >= total
        self._say(stage, now, "nothing to do" if stage.finished else "started")

    def _progressed(self, stage: _Stage) -> None:
        if stage.finished:
            return
        now = self._clock()
        if stage.total is not None and stage.done >= stage.total:
            stage.finished = True
            self._say(stage, now, "finished")
        elif now - stage.printed >= self.every_s:
            self._say(stage, now, None)

    def _close_stage(self, key: Any) -> None:
        stage = self._stages.pop(key, None)
        if stage is not None and not stage.finished:
            self._say(stage, self._clock(), "finished" if stage.total is None else "closed")

    def tick(self) -> None:
        """Print the progress line of each running stage whose last line is ``every_s`` old."""
        with self._lock:
            for stage in self._stages.values():
                self._progressed(stage)

    def _beat(self) -> None:
        while not self._stopping.wait(min(self.every_s, 5.0)):
            try:
                self.tick()
            except Exception:
                continue  # a progress line must never stop a run

    def _say(self, stage: _Stage, now: float, event: str | None) -> None:
        stage.printed = now
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        try:
            stream = self.display.console.file
            stream.write(f"{stamp} {_line(stage, now, event)}\n")  # one write: a whole line
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed log must never stop a run

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
        """Draw what the children sent (close it after they exit), print the last line of
        each stage still open, then stop the display."""
        if self._drain is not None:
            self._finishing.set()
            self._drain.join(timeout=10)
        self._stopping.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=10)
        with self._lock:
            for key in list(self._stages):
                self._close_stage(key)
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

    def open(self, label: str, total: float, completed: float = 0) -> Bar:
        """Open this bar on its display (once, first); returns it."""
        self._send(("open", self._key, label, total, completed))
        return self

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
        return Bar(send, None).open(label, total, completed)
    own = Board()
    own.start()
    return Bar(own.apply, own.close).open(label, total, completed)
