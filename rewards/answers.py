"""Answer tasks (math): a problem and its gold final answer, labelled by math-verify.

A math task is a :class:`~pairrl.rewards.tasks.Task` whose tests are
:class:`~pairrl.rewards.tasks.AnswerTests`. Its candidates are never executed: a completion
passes when its last ``\\boxed{}`` answer equals the gold answer under math-verify
(equivalent forms count: ``1/2``, ``0.5`` and ``\\frac{1}{2}``). Statuses: ``pass``,
``wrong``, ``no_answer`` (no ``\\boxed{}`` answer, or one math-verify cannot read).

:class:`TaskLabeller` keeps the executor's contract, ``run(jobs) -> results`` in job order,
for any mix of tasks: answer tasks are checked here, the others go to the sandboxed
executor in one batch, built only when a code task comes (a math run needs no sandbox).
:func:`answer_clusters` groups completions whose final answers are equivalent (the
majority vote over final answers).

math-verify bounds its own parsing time with ``signal.alarm``, which only the main thread
may use; off the main thread the checks run without that bound.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pairrl.rewards.code_extract import extract_code
from pairrl.rewards.results import ExecJob, ExecResult
from pairrl.rewards.tasks import AnswerTests, Task

__all__ = [
    "MathOutcome",
    "TaskLabeller",
    "answer_clusters",
    "answer_task",
    "candidate_job",
    "check_answer",
    "final_answer",
    "gold_answer",
    "is_answer_task",
    "label_jobs",
    "math_answer_reward",
]

RunCode = Callable[[list[ExecJob]], list[ExecResult]]


def _math_verify() -> tuple[Any, Any]:
    try:
        from math_verify import parse, verify
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ImportError("math answers need math-verify (pip install math-verify)") from exc
    return parse, verify


def _timeout() -> int | None:
    return 5 if threading.current_thread() is threading.main_thread() else None


def _parse(text: str) -> list[Any]:
    parse, _ = _math_verify()
    return list(parse(text, parsing_timeout=_timeout()))


def _same(gold: list[Any], answer: list[Any]) -> bool:
    _, verify = _math_verify()
    return bool(verify(gold, answer, timeout_seconds=_timeout()))


@functools.lru_cache(maxsize=4096)
def _parsed_gold(gold: str) -> tuple[Any, ...]:
    wrapped = gold if "\\boxed" in gold or "$" in gold else f"${gold}$"
    return tuple(_parse(wrapped))


def gold_answer(raw: str) -> str:
    """The gold answer of a row's answer field: GSM8K's ``... #### 72`` gives ``72``.

    >>> gold_answer("48 / 2 = 24 clips in May. #### 72")
    '72'
    >>> gold_answer(" \\\\frac{1}{2} ")
    '\\\\frac{1}{2}'
    """
    text = str(raw)
    if "####" in text:
        text = text.rsplit("####", 1)[1]
    return text.strip()


def answer_task(task_id: str, problem: str, answer: str) -> Task:
    """A math task: ``problem`` as the prompt, ``answer`` (see :func:`gold_answer`) as gold."""
    gold = gold_answer(answer)
    if not gold:
        raise ValueError("the answer is empty")
    return Task(task_id=task_id, prompt=problem, entry_point="", tests=AnswerTests(gold))


def is_answer_task(task: Any) -> bool:
    """Whether ``task`` is judged by its final answer (math) rather than by execution."""
    return isinstance(getattr(task, "tests", None), AnswerTests)


@dataclass(frozen=True)
class MathOutcome:
    """Math answer reward and why: ``status`` is pass, wrong or no_answer."""

    reward: float
    status: str


def final_answer(completion: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (braces matched), None when there is none.

    >>> final_answer("first \\\\boxed{3}, then \\\\boxed{\\\\frac{1}{2}}.")
    '\\\\frac{1}{2}'
    >>> final_answer("\\\\boxed{unclosed") is None
    True
    """
    start = completion.rfind("\\boxed{")
    if start < 0:
        return None
    depth, begin = 0, start + len("\\boxed{")
    for i in range(begin, len(completion)):
        if completion[i] == "{":
            depth += 1
        elif completion[i] == "}":
            if depth == 0:
                content = completion[begin:i].strip()
                return content or None
            depth -= 1
    return None


def _parsed_answer(completion: str) -> list[Any]:
    answer = final_answer(completion)
    return _parse(f"\\boxed{{{answer}}}") if answer is not None else []


def math_answer_reward(completion: str, gold: str) -> MathOutcome:
    """1.0 when the completion's last ``\\boxed{}`` answer equals ``gold`` (math-verify)."""
    answer = _parsed_answer(completion)
    if not answer:
        return MathOutcome(0.0, "no_answer")
    if _same(list(_parsed_gold(gold)), answer):
        return MathOutcome(1.0, "pass")
    return MathOutcome(0.0, "wrong")


def check_answer(job: ExecJob) -> ExecResult:
    """The verdict on one answer-task job (its ``text``, else its ``code``, is the completion)."""
    started = time.monotonic()
    tests = job.task.tests
    if not isinstance(tests, AnswerTests):
        raise TypeError(f"task {job.task.task_id!r} is not an answer task")
    text = job.text if job.text is not None else job.code or ""
    outcome = math_answer_reward(text, tests.gold)
    failure = {
        "pass": None,
        "wrong": f"the final answer {final_answer(text)!r} is not the gold answer",
        "no_answer": "no readable \\boxed{} final answer",
    }[outcome.status]
    return ExecResult(
        task_id=job.task.task_id,
        candidate_id=job.candidate_id,
        passed=outcome.status == "pass",
        status=outcome.status,  # type: ignore[arg-type]
        n_tests=1,
        n_passed=int(outcome.status == "pass"),
        first_failure=failure,
        wall_s=time.monotonic() - started,
    )


def candidate_job(task: Task, completion: str, candidate_id: str) -> ExecJob:
    """The job for one completion: its last code block for a code task, the completion
    itself for an answer task."""
    code = None if is_answer_task(task) else extract_code(completion)
    return ExecJob(task=task, code=code, candidate_id=candidate_id, text=completion)


def label_jobs(jobs: Sequence[ExecJob], run_code: RunCode | None) -> list[ExecResult]:
    """One result per job, in order: answer tasks checked here, the rest by ``run_code``
    (the executor's ``run``), called once and only when there is a code job."""
    results: list[ExecResult | None] = [None] * len(jobs)
    code_at = []
    for i, job in enumerate(jobs):
        if is_answer_task(job.task):
            results[i] = check_answer(job)
        else:
            code_at.append(i)
    if code_at:
        if run_code is None:
            raise ValueError(
                f"task {jobs[code_at[0]].task.task_id!r} is a code task, and no executor is set"
            )
        ran = run_code([jobs[i] for i in code_at])
        if len(ran) != len(code_at):
            raise RuntimeError(f"executor returned {len(ran)} results for {len(code_at)} jobs")
        for i, res in zip(code_at, ran, strict=True):
            results[i] = res
    return [r for r in results if r is not None]


class TaskLabeller:
    """``run(jobs) -> results`` for any mix of answer and code tasks (see the module
    docstring). ``make_executor`` builds the sandboxed executor on the first code job, or
    at once with ``eager`` (so that a missing sandbox fails before a run starts)."""

    def __init__(self, make_executor: Callable[[], Any] | None, eager: bool = False) -> None:
        self._make = make_executor
        self._executor: Any = None
        if eager and make_executor is not None:
            self._executor = make_executor()

    @property
    def started(self) -> bool:
        """Whether the executor was built."""
        return self._executor is not None

    def _run_code(self, jobs: list[ExecJob]) -> list[ExecResult]:
        if self._executor is None:
            if self._make is None:
                raise ValueError("code tasks need an executor; none was configured")
            self._executor = self._make()
        return list(self._executor.run(jobs))

    def run(self, jobs: Sequence[ExecJob]) -> list[ExecResult]:
        """Label ``jobs`` (the executor's contract)."""
        return label_jobs(jobs, self._run_code)

    def close(self) -> None:
        """Close the executor if it was built."""
        if self._executor is not None:
            self._executor.close()


def answer_clusters(completions: Sequence[str]) -> list[int | None]:
    """Cluster id per completion (by first appearance), completions with equivalent final
    answers sharing one; None for a completion with no readable ``\\boxed{}`` answer.

    >>> answer_clusters(["\\\\boxed{0.5}", "\\\\boxed{1/2}", "none", "\\\\boxed{2}"])
    [0, 0, None, 1]
    """
    reps: list[list[Any]] = []
    out: list[int | None] = []
    for text in completions:
        parsed = _parsed_answer(text)
        if not parsed:
            out.append(None)
            continue
        for cluster, rep in enumerate(reps):
            if _same(rep, parsed):
                out.append(cluster)
                break
        else:
            reps.append(parsed)
            out.append(len(reps) - 1)
    return out
