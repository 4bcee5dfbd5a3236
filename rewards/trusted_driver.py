"""The trusted driver: runs a task's tests in the parent against a sandboxed candidate.

Test sources, helpers and expected values live only here. The candidate is reachable
only through :class:`RemoteFunction` proxies whose values arrive as plain data, so an
always-equal object, a forged result or a frame walk in the sandbox cannot reach them.

The tests' own code has a deadline too: the candidate's calls end at the session's wall
limit in the sandbox, and Python code of the tests (a ``while True: pass`` in a test
case, a looping helper or setup) is stopped at the same limit by :class:`HiddenTestsDeadline`,
so a broken task is a ``timeout`` verdict, never a thread that runs forever.
"""

from __future__ import annotations

import ast
import builtins
import os
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from types import FrameType, TracebackType
from typing import Any

from pairrl.rewards.evalplus_compat import oracle_accepts
from pairrl.rewards.results import CallOutput, ExecResult
from pairrl.rewards.session import (
    CandidateAborted,
    CandidateSession,
    InfrastructureError,
    describe_death,
)
from pairrl.rewards.tasks import AssertTests, IOTests, Task

# Code objects of a task's tests, helpers and setup carry these file names (and only they).
TEST_FILE_PREFIXES = ("<tests:", "<setup:")
# How long the driver lets a task's setup (helpers, setup, imports) run when it is
# first compiled, before any candidate: a setup that loops makes every verdict a timeout.
SETUP_LIMIT_S = 10.0


class HiddenTestsTimedOut(BaseException):
    """Raised inside the tests' own frames once their deadline has passed (a
    ``BaseException``, so the tests' ``except Exception`` does not swallow it)."""


def _raise_timeout(frame: FrameType, event: str, arg: Any) -> Any:
    raise HiddenTestsTimedOut


def _stop_test_frames(thread_id: int) -> None:
    """Make every test frame on ``thread_id``'s stack raise at its next instruction.

    Per-instruction events, not line events: ``while True: pass`` jumps to its own
    instruction and never starts a new line. The exception can only appear in the
    tests' frames, never in the session's code between a request and its reply.
    """
    frame = sys._current_frames().get(thread_id)
    while frame is not None:
        if frame.f_code.co_filename.startswith(TEST_FILE_PREFIXES):
            frame.f_trace = _raise_timeout
            frame.f_trace_opcodes = True
        frame = frame.f_back


class _Watchdog:
    """One daemon thread that stops the test frames of threads past their deadline."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """No deadline and no thread yet (also a forked child's state: it has neither)."""
        self._cond = threading.Condition()
        self._deadlines: dict[int, float] = {}
        self._thread: threading.Thread | None = None

    def arm(self, thread_id: int, deadline: float) -> None:
        with self._cond:
            self._deadlines[thread_id] = deadline
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name="pairrl-tests-deadline", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def disarm(self, thread_id: int) -> None:
        with self._cond:
            self._deadlines.pop(thread_id, None)

    def _watch(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for thread_id in [t for t, d in self._deadlines.items() if d <= now]:
                    del self._deadlines[thread_id]
                    _stop_test_frames(thread_id)
                nearest = min(self._deadlines.values(), default=None)
                self._cond.wait(None if nearest is None else nearest - now)


_WATCHDOG = _Watchdog()
# A forked child has no watchdog thread, and its copy of the lock may be held: start afresh.
os.register_at_fork(after_in_child=_WATCHDOG.reset)


class HiddenTestsDeadline:
    """``with HiddenTestsDeadline(deadline):`` the tests' Python code run in this block raises
    :class:`HiddenTestsTimedOut` once ``deadline`` (monotonic) has passed.

    A trace function on this thread is what lets the watchdog stop a running frame; it
    costs one call per new frame of the tests' code and nothing per line, and calls into
    the sandbox run untraced. Code stuck inside one C call (a ``time.sleep``, one huge
    arithmetic operation) is not interrupted.
    """

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self._previous: Any = None

    def _on_call(self, frame: FrameType, event: str, arg: Any) -> Any:
        # A test frame that starts after the deadline (the next case, a helper) stops at once.
        if (
            frame.f_code.co_filename.startswith(TEST_FILE_PREFIXES)
            and time.monotonic() >= self.deadline
        ):
            frame.f_trace_opcodes = True
            return _raise_timeout
        return None

    def __enter__(self) -> HiddenTestsDeadline:
        self._previous = sys.gettrace()
        sys.settrace(self._on_call)
        _WATCHDOG.arm(threading.get_ident(), self.deadline)
        return self

    def __exit__(
        self, etype: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _WATCHDOG.disarm(threading.get_ident())
        sys.settrace(self._previous)


class RemoteFunction:
    """Stands for a function defined by the candidate; each call runs in the sandbox."""

    def __init__(self, session: CandidateSession, name: str) -> None:
        self._session = session
        self.__name__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        tracer = sys.gettrace()
        if not isinstance(getattr(tracer, "__self__", None), HiddenTestsDeadline):
            return self._session.call(self.__name__, args, kwargs)
        # The session's own code runs untraced, at full speed; the calling test frame
        # stays stoppable, since the watchdog marks it and tracing resumes on return.
        sys.settrace(None)
        try:
            return self._session.call(self.__name__, args, kwargs)
        finally:
            sys.settrace(tracer)


def _free_names(source: str) -> set[str]:
    """Names a test source reads but never binds (candidates for remote functions)."""
    tree = ast.parse(source)
    loaded, bound = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
    return loaded - bound


class CompiledAssertTests:
    """A task's assert-style tests compiled once; fresh namespaces per candidate.

    ``setup_limit_s`` bounds the first run of the setup (helpers, setup, imports); a setup
    that runs past it leaves ``setup_timeout`` set, and every candidate's verdict is then
    ``timeout`` without a call to the sandbox.
    """

    def __init__(self, task: Task, spec: AssertTests, setup_limit_s: float = SETUP_LIMIT_S) -> None:
        self.task = task
        self.spec = spec
        self.filename = f"<tests:{task.task_id}>"
        self.cases = [
            compile(case, f"{self.filename}#{i}", "exec") for i, case in enumerate(spec.cases)
        ]
        free: set[str] = set()
        for case in spec.cases:
            free |= _free_names(case)
        # Tests written to run after the solution may use a module the solution imported
        # (MBPP 596 uses ``sys``): the driver imports such standard modules itself.
        modules = sorted(name for name in free if name in sys.stdlib_module_names)
        setup = "\n".join([task.helpers, spec.setup, *(f"import {m}" for m in modules)])
        self.setup = compile(setup, f"<setup:{task.task_id}>", "exec")
        self.setup_timeout: str | None = None
        probe: dict[str, Any] = {"__name__": "__pairrl_tests__"}
        try:
            with HiddenTestsDeadline(time.monotonic() + setup_limit_s):
                exec(self.setup, probe)
        except HiddenTestsTimedOut:
            self.setup_timeout = f"the task's test setup ran past {setup_limit_s:g} s"
        # Names the tests use that neither the prompt's helpers, the setup nor builtins
        # define must come from the candidate: the entry point and any other function.
        self.remote_names = sorted(
            name for name in free if name not in probe and not hasattr(builtins, name)
        )
        if task.entry_point not in self.remote_names:
            self.remote_names.append(task.entry_point)

    def run(self, session: CandidateSession) -> tuple[int, int, str | None, str | None]:
        """Returns (n_tests, n_passed, failing status, first failure) for one candidate.

        The tests' own code stops at the session's deadline (:class:`HiddenTestsDeadline`).
        """
        if self.setup_timeout is not None:
            return len(self.cases), 0, "timeout", self.setup_timeout
        n_passed, status, first_failure = 0, None, None
        try:
            with HiddenTestsDeadline(session.deadline):
                for index, (code, text) in enumerate(zip(self.cases, self.spec.cases, strict=True)):
                    failure = self._run_case(session, code, text, index)
                    if isinstance(failure, CandidateAborted):
                        break
                    if failure is not None:
                        if status is None:
                            status, first_failure = failure
                    elif session.sticky is None:
                        n_passed += 1
        except HiddenTestsTimedOut:
            status = "timeout"
            first_failure = f"the tests ran past {session.timeout_s:g} s in the trusted driver"
        if session.sticky is not None:
            status, first_failure = session.sticky.status, session.sticky.reason
        return len(self.cases), n_passed, status, first_failure

    def _run_case(
        self, session: CandidateSession, code: Any, text: str, index: int
    ) -> tuple[str, str] | CandidateAborted | None:
        """One test case in a fresh namespace: None when it passes, else its failure."""
        namespace: dict[str, Any] = {"__name__": "__pairrl_tests__"}
        exec(self.setup, namespace)
        for name in self.remote_names:
            namespace[name] = RemoteFunction(session, name)
        try:
            exec(code, namespace)
            if self.spec.check_call:
                namespace["check"](namespace[self.task.entry_point])
        except CandidateAborted as aborted:
            return aborted
        except (InfrastructureError, KeyboardInterrupt, HiddenTestsTimedOut):
            raise  # the sandbox failed, the user interrupts, the deadline: not a case's verdict
        except BaseException as exc:
            return _classify(exc, session, text, index)
        return None


def _classify(
    exc: BaseException, session: CandidateSession, text: str, index: int
) -> tuple[str, str]:
    """Decide whether a failing test case is the candidate's error or a wrong answer."""
    chain: BaseException | None = exc
    while chain is not None:
        if id(chain) in session.raised_ids:
            return "runtime_error", f"candidate raised {type(chain).__name__}: {chain}"[:300]
        chain = chain.__context__
    line = _failing_line(exc, text)
    if isinstance(exc, AssertionError):
        return "wrong", f"case {index}: assertion failed: {line}"[:300]
    return "wrong", f"case {index}: {type(exc).__name__}: {exc} at {line}"[:300]


def _failing_line(exc: BaseException, text: str) -> str:
    lines = text.splitlines()
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename.startswith("<tests:") and frame.lineno and frame.lineno <= len(lines):
            return lines[frame.lineno - 1].strip()
    return text.strip().splitlines()[0] if text.strip() else ""


# ---------------------------------------------------------------- input/output tests


def run_io_tests(
    session: CandidateSession,
    task: Task,
    spec: IOTests,
    expected: Sequence[CallOutput],
    limits: Sequence[float] | None = None,
) -> tuple[int, int, str | None, str | None]:
    """Call the entry point on each input with a usable expected value; stop at the first miss.

    Inputs where the canonical solution itself fails are not tests (not counted). Each
    input has its own limit on the candidate's own clock: ``limits[i]``, else the
    session's timeout.
    """
    n_tests, n_passed = sum(exp.ok for exp in expected), 0
    for index, (args, exp) in enumerate(zip(spec.inputs, expected, strict=True)):
        if not exp.ok:
            continue  # the canonical solution fails here: not a test
        # EvalPlus-style: each input has its own time limit, so a correct solution is not
        # failed for the sheer number of inputs; it bounds the call alone, on the
        # candidate's own clock (the worker's), as EvalPlus times only ``fn(*inp)``.
        session.call_limit_s = limits[index] if limits is not None else session.timeout_s
        try:
            out = session.call(task.entry_point, tuple(args), {})
        except CandidateAborted as aborted:
            return n_tests, n_passed, aborted.status, aborted.reason
        except InfrastructureError:
            raise
        except Exception as exc:
            return n_tests, n_passed, "runtime_error", f"input {index}: {exc!r}"[:300]
        if not oracle_accepts(spec.oracle, spec.atol, args, out, exp.value):
            return (
                n_tests,
                n_passed,
                "wrong",
                f"input {index}: got {out!r:.80}, expected {exp.value!r:.80}",
            )
        n_passed += 1
    return n_tests, n_passed, None, None


# ---------------------------------------------------------------- stdin/stdout tests


def normalise_stdout(text: str) -> list[str]:
    """Lines with trailing whitespace removed and trailing blank lines dropped."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def run_stdio_case(
    session: CandidateSession, stdin: str, expected: str
) -> tuple[str | None, str | None]:
    """Run the program once; (None, None) when its stdout matches, else (status, reason)."""
    report = session.run_program(stdin)
    kind = report.get("k")
    if kind == "timeout":
        return "timeout", "program ran past the deadline"
    if kind == "output_limit":
        return "output_limit", "stdout over the cap"
    if kind == "load_error":
        etype = str(report.get("etype"))
        if etype in ("SyntaxError", "IndentationError", "TabError"):
            return "syntax_error", f"{etype}: {report.get('msg')}"
        status = "memory_limit" if etype == "MemoryError" else "runtime_error"
        return status, f"{etype}: {report.get('msg')}"[:300]
    if kind == "died":
        return describe_death(report)
    if kind != "exited":
        return "runtime_error", f"unexpected report {kind!r}"
    if report.get("code") not in (0, None):
        return "runtime_error", f"exit code {report.get('code')}"
    if normalise_stdout(str(report.get("stdout", ""))) != normalise_stdout(expected):
        return "wrong", f"stdout {str(report.get('stdout'))[:60]!r} != expected {expected[:60]!r}"
    return None, None


def make_result(
    task: Task,
    candidate_id: str,
    counts: tuple[int, int, str | None, str | None],
    started: float,
) -> ExecResult:
    n_tests, n_passed, status, failure = counts
    passed = status is None and n_passed == n_tests and n_tests > 0
    if status is None and not passed:
        status, failure = "wrong", failure or "no test could be run"
    return ExecResult(
        task_id=task.task_id,
        candidate_id=candidate_id,
        passed=passed,
        status="pass" if passed else status,  # type: ignore[arg-type]
        n_tests=n_tests,
        n_passed=n_passed,
        first_failure=failure,
        wall_s=round(time.monotonic() - started, 4),
    )
