"""A candidate's function called on given inputs in one sandbox worker: the outputs that
output-clustering selection compares and the expected outputs of canonical solutions
(``pairrl.rewards.Executor.call_outputs`` borrows the worker and gives it back)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pairrl.rewards.results import CallOutput
from pairrl.rewards.sandbox import SandboxWorker
from pairrl.rewards.session import CandidateAborted, CandidateSession, InfrastructureError

__all__ = ["call_outputs_on"]


def call_outputs_on(
    worker: SandboxWorker,
    code: str,
    entry_point: str,
    inputs: Sequence[Sequence[Any]],
    timeout_s: float,
) -> tuple[list[CallOutput], bool]:
    """``entry_point(*args)`` of ``code`` on each input, in ``worker``: plain values or
    failures, and whether the worker is still healthy (nothing left behind).

    Each call has its own limit (``timeout_s`` of the candidate's own clock; its reading is
    the output's ``wall_s``); after a call that kills the candidate
    the program is loaded afresh for the next input. An infrastructure failure is raised.
    """
    outputs: list[CallOutput] = []
    healthy = True
    session: CandidateSession | None = None
    for args in inputs:
        if session is None or session.sticky is not None:
            if session is not None:
                healthy = healthy and not session.end().get("dirty")
            session = CandidateSession(worker, code, timeout_s)
            aborted = session.load()
            if aborted is not None:
                outputs.append(CallOutput(failure=f"{aborted.status}: {aborted.reason}"))
                continue
        session.call_limit_s = timeout_s
        t0 = time.monotonic()
        output = _one_call(session, entry_point, args)
        spent = session.last_call_s  # the call alone, on the candidate's own clock
        outputs.append(replace(output, wall_s=time.monotonic() - t0 if spent is None else spent))
    if session is not None:
        report = session.end()
        healthy = healthy and not report.get("dirty") and not report.get("survivors")
    return outputs, healthy


def _one_call(session: CandidateSession, entry_point: str, args: Sequence[Any]) -> CallOutput:
    try:
        return CallOutput(value=session.call(entry_point, tuple(args), {}))
    except CandidateAborted as aborted:
        return CallOutput(failure=f"{aborted.status}: {aborted.reason}")
    except InfrastructureError:
        raise
    except Exception as exc:
        return CallOutput(failure=f"runtime_error: {type(exc).__name__}: {exc}"[:300])
