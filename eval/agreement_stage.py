"""The execution-agreement stage: collect each candidate's return values on the task's
example inputs (through the executor's sandbox) and choose by output clustering.

Values are cached per (task, code, inputs). A candidate whose every call failed gets no
signature and joins no cluster; a task with no usable inputs falls back to the first
sample and says so (`detail.fallback`), which the report counts. On a math task the output
is the final answer: candidates cluster by equivalent ``\\boxed{}`` answers (the majority
vote, ``pairrl.eval.majority``), with nothing executed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pairrl.eval.agreement import (
    CallInput,
    choose_by_agreement,
    encode_output,
    extract_call_inputs,
)
from pairrl.eval.cache import StageCache, content_key
from pairrl.eval.candidates import Candidate
from pairrl.eval.labels import task_fingerprint
from pairrl.eval.majority import select_majority
from pairrl.eval.selectors import Selection
from pairrl.rewards.answers import is_answer_task
from pairrl.rollout.statement import problem_text

__all__ = ["agreement_inputs", "select_by_agreement"]


def agreement_inputs(task: Any, source: str, limit: int) -> tuple[list[CallInput], str]:
    """Example inputs for a task and where they came from ("prompt", "tests" or "none").

    Only positional calls are kept: the executor replays `entry_point(*args)`.
    """
    if not str(getattr(task, "entry_point", "") or ""):
        return [], "none"  # whole-program (stdin/stdout) tasks have no function to call
    found, origin = _all_inputs(task, source, limit * 2)
    found = [i for i in found if not i.kwargs][:limit]
    return (found, origin) if found else ([], "none")


def _all_inputs(task: Any, source: str, limit: int) -> tuple[list[CallInput], str]:
    entry = str(task.entry_point)
    if source in ("prompt", "prompt_or_tests"):
        # Only the docstring and comments: the stub's own `def name(` is not a call.
        found = extract_call_inputs(_without_def_lines(problem_text(task)), [entry], limit)
        if found:
            return found, "prompt"
        if source == "prompt":
            return [], "none"
    io_inputs = getattr(getattr(task, "tests", None), "inputs", None)
    if isinstance(io_inputs, (list, tuple)) and io_inputs:
        # MBPP+/HumanEval+ style: the tests are argument lists already.
        found = [
            CallInput(args=tuple(a)) for a in io_inputs[:limit] if isinstance(a, (list, tuple))
        ]
        return (found, "tests") if found else ([], "none")
    found = extract_call_inputs(_test_source(task), [entry, "candidate"], limit)
    return (found, "tests") if found else ([], "none")


def _without_def_lines(prompt: str) -> str:
    return "\n".join(line for line in prompt.split("\n") if not re.match(r"\s*def\s", line))


def _test_source(task: Any) -> str:
    """Text of the task's tests, whatever field the task type keeps them in."""
    for attr in ("test", "tests_source", "test_source"):
        value = getattr(task, attr, None)
        if isinstance(value, str) and value:
            return value
    tests = getattr(task, "tests", None)
    if isinstance(tests, str):
        return tests
    cases = getattr(tests, "cases", None)  # rewards.AssertTests: test source snippets
    if isinstance(cases, (list, tuple)):
        return "\n".join(c for c in cases if isinstance(c, str))
    return ""


def select_by_agreement(
    tasks: Mapping[str, Any],
    candidates: Mapping[str, Sequence[Candidate]],
    labels: Mapping[str, Sequence[bool]],
    executor: Any | None,
    cache: StageCache,
    source: str,
    limit: int,
    timeout_s: float,
    progress: Callable[[int], None] | None = None,
) -> tuple[dict[str, Selection], list[tuple[str, str, str]], list[tuple[str, str, str]], int]:
    """Agreement selections per task; (task, item, reason) of output entries that were
    needed but absent (only possible in the gate's cache-only replay, `executor=None`)
    and of entries whose collection failed for infrastructure reasons; and the number of
    entries needed."""
    selections: dict[str, Selection] = {}
    missing: list[tuple[str, str, str]] = []
    failed: list[tuple[str, str, str]] = []
    needed = 0
    for task_id, cands in candidates.items():
        task = tasks[task_id]
        if is_answer_task(task):
            selections[task_id] = _by_final_answers(task_id, task, cands, labels[task_id])
            if progress:
                progress(1)
            continue
        inputs, origin = agreement_inputs(task, source, limit)
        sigs: list[str | None] = [None] * len(cands)
        if inputs:
            sigs, counted = _signatures(task_id, task, cands, inputs, executor, cache, timeout_s)
            needed += counted.needed
            missing += counted.missing
            failed += counted.failed
        choice = choose_by_agreement(sigs)
        label = labels[task_id]
        fallback = choice.fallback if inputs else f"no example inputs ({source})"
        selections[task_id] = Selection(
            "agreement",
            task_id,
            choice.chosen,
            float(label[choice.chosen]),
            detail={
                "input_source": origin,
                "num_inputs": len(inputs),
                "cluster_size": choice.cluster_size,
                "num_clusters": choice.num_clusters,
                "fallback": fallback,
            },
        )
        if progress:
            progress(1)
    return selections, missing, failed, needed


@dataclass
class _Counted:
    """Output entries a task needed, and those absent or failed (task, item, reason)."""

    needed: int = 0
    missing: list[tuple[str, str, str]] = field(default_factory=list)
    failed: list[tuple[str, str, str]] = field(default_factory=list)


def _signatures(
    task_id: str,
    task: Any,
    cands: Sequence[Candidate],
    inputs: Sequence[CallInput],
    executor: Any | None,
    cache: StageCache,
    timeout_s: float,
) -> tuple[list[str | None], _Counted]:
    """Each candidate's output signature (None: no usable outputs), collecting the absent
    ones through the executor (compute mode) and caching them."""
    fp = task_fingerprint(task)
    keys = [_outputs_key(fp, c.code, inputs, timeout_s) for c in cands]
    # Candidates without code (no_code, failed sampling) have no outputs to get.
    runnable = [i for i, c in enumerate(cands) if c.error is None and c.code.strip()]
    todo = [i for i in runnable if _needs_outputs(cache.get(keys[i]), executor)]
    if todo and executor is not None:
        values = _call_outputs(executor, task, [cands[i].code for i in todo], inputs, timeout_s)
        cache.put_many((keys[i], v) for i, v in zip(todo, values, strict=True))
    counted = _Counted()
    sigs: list[str | None] = []
    for i, key in enumerate(keys):
        if i not in runnable:
            sigs.append(None)
            continue
        counted.needed += 1
        entry = cache.get(key)
        if entry is None:
            counted.missing.append((task_id, f"candidate {i}", "no cached outputs"))
            sigs.append(None)
        elif entry.get("failure"):
            counted.failed.append((task_id, f"candidate {i}", str(entry["failure"])))
            sigs.append(None)
        else:
            sigs.append(_signature(entry))
    return sigs, counted


def _by_final_answers(
    task_id: str, task: Any, cands: Sequence[Candidate], labels: Sequence[bool]
) -> Selection:
    vote = select_majority(task_id, task, cands, labels)
    detail = {**vote.detail, "input_source": "final answers", "num_inputs": 0}
    return Selection("agreement", task_id, vote.chosen, vote.score, vote.failure, detail=detail)


def _needs_outputs(entry: dict[str, Any] | None, executor: Any | None) -> bool:
    """Absent, or an infrastructure failure worth one more try (compute mode only)."""
    return executor is not None and (entry is None or bool(entry.get("failure")))


def _outputs_key(task_fp: str, code: str, inputs: Sequence[CallInput], timeout_s: float) -> str:
    return content_key("outputs", "encoded-v2", task_fp, code, [i.key() for i in inputs], timeout_s)


def _signature(entry: dict[str, Any]) -> str | None:
    outputs = entry.get("outputs")
    if not outputs or all(_is_error(o) for o in outputs):
        return None
    return json.dumps(outputs)  # already encoded one by one (see _call_outputs)


def _is_error(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("<error:")


def _call_outputs(
    executor: Any, task: Any, codes: list[str], inputs: Sequence[CallInput], timeout_s: float
) -> list[dict[str, Any]]:
    """Return values of each code on the inputs, as cache entries (failures as markers).

    Candidates run concurrently, one executor worker each (call_outputs is per program).
    """
    from concurrent.futures import ThreadPoolExecutor

    calls = [list(i.args) for i in inputs]

    def call(code: str, batch: list[list[Any]]) -> list[Any] | str:
        """Outputs of one program on `batch`, or the reason both attempts failed."""
        failure = ""
        for _attempt in range(2):  # infrastructure errors are retried once (fresh worker)
            try:
                return list(
                    executor.call_outputs(code, str(task.entry_point), batch, timeout_s=timeout_s)
                )
            except Exception as err:
                failure = f"{type(err).__name__}: {err}"[:300]
        return failure

    def one(code: str) -> dict[str, Any]:
        # Probe with the first input: a program that hangs there is not run on the rest
        # (each hanging call would cost the full time limit); its outputs are all timeouts.
        first = call(code, calls[:1])
        if isinstance(first, str):
            return {"outputs": None, "failure": first}
        if not first[0].ok and str(first[0].failure).startswith("timeout"):
            return {"outputs": ["<error:timeout>"] * len(calls)}
        rest = call(code, calls[1:]) if len(calls) > 1 else []
        if isinstance(rest, str):
            return {"outputs": None, "failure": rest}
        # Encoded at collection time: returned values need not be JSON (sets, opaque
        # objects, dicts with tuple keys), and the cache must hold what clustering compares.
        outs = [
            encode_output(r.value) if r.ok else f"<error:{str(r.failure).split(':')[0]}>"
            for r in [*first, *rest]
        ]
        return {"outputs": outs}

    workers = max(1, int(getattr(executor, "workers", 1)))
    with ThreadPoolExecutor(min(workers, len(codes))) as pool:
        return list(pool.map(one, codes))
