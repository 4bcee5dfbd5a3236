"""The trusted driver: runs a task's tests in the parent against a sandboxed candidate.

Test sources, helpers and expected values live only here. The candidate is reachable
only through :class:`RemoteFunction` proxies whose values arrive as plain data, so an
always-equal object, a forged result or a frame walk in the sandbox cannot reach them.
"""

from __future__ import annotations

import ast
import builtins
import sys
import time
import traceback
from collections.abc import Sequence
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


class RemoteFunction:
    """Stands for a function defined by the candidate; each call runs in the sandbox."""

    def __init__(self, session: CandidateSession, name: str) -> None:
        self._session = session
        self.__name__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._session.call(self.__name__, args, kwargs)


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
    """A task's assert-style tests compiled once; fresh namespaces per candidate."""

    def __init__(self, task: Task, spec: AssertTests) -> None:
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
        probe: dict[str, Any] = {"__name__": "__pairrl_tests__"}
        exec(self.setup, probe)
        # Names the tests use that neither the prompt's helpers, the setup nor builtins
        # define must come from the candidate: the entry point and any other function.
        self.remote_names = sorted(
            name for name in free if name not in probe and not hasattr(builtins, name)
        )
        if task.entry_point not in self.remote_names:
            self.remote_names.append(task.entry_point)

    def run(self, session: CandidateSession) -> tuple[int, int, str | None, str | None]:
        """Returns (n_tests, n_passed, failing status, first failure) for one candidate."""
        n_passed, status, first_failure = 0, None, None
        for index, (code, text) in enumerate(zip(self.cases, self.spec.cases, strict=True)):
            namespace: dict[str, Any] = {"__name__": "__pairrl_tests__"}
            exec(self.setup, namespace)
            for name in self.remote_names:
                namespace[name] = RemoteFunction(session, name)
            try:
                exec(code, namespace)
                if self.spec.check_call:
                    namespace["check"](namespace[self.task.entry_point])
            except CandidateAborted:
                break
            except (InfrastructureError, KeyboardInterrupt):
                raise  # the sandbox failed, or the user interrupts: not a verdict
            except BaseException as exc:
                if status is None:
                    status, first_failure = _classify(exc, session, text, index)
                continue
            if session.sticky is None:
                n_passed += 1
        if session.sticky is not None:
            status, first_failure = session.sticky.status, session.sticky.reason
        return len(self.cases), n_passed, status, first_failure


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
    input has its own wall limit: ``limits[i]``, else the session's timeout.
    """
    n_tests, n_passed = sum(exp.ok for exp in expected), 0
    for index, (args, exp) in enumerate(zip(spec.inputs, expected, strict=True)):
        if not exp.ok:
            continue  # the canonical solution fails here: not a test
        # EvalPlus-style: each input has its own time limit, so a correct solution is not
        # failed for the sheer number of inputs.
        limit = limits[index] if limits is not None else session.timeout_s
        session.deadline = time.monotonic() + limit
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
