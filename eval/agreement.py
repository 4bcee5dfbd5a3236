"""Execution agreement: cluster a task's candidates by what they return on the same
inputs and pick from the largest cluster (needs no judge).

Inputs come from the prompt's own examples (calls of the entry point in the docstring),
or, where the prompt shows none, from the calls in the task's tests (MBPP's canonical
prompt shows its asserts to the model, so these are inputs the model was meant to see).
Only the *inputs* are taken; expected outputs are never read. The source used is
recorded per task.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AgreementChoice",
    "CallInput",
    "choose_by_agreement",
    "encode_output",
    "extract_call_inputs",
]


@dataclass(frozen=True)
class CallInput:
    """Positional and keyword arguments of one call, as plain literals."""

    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()

    def key(self) -> str:
        """Canonical text used for deduplication and cache keys."""
        return repr((self.args, self.kwargs))


def extract_call_inputs(text: str, names: Sequence[str], limit: int = 10) -> list[CallInput]:
    """Literal arguments of every call `name(...)` in `text`, deduplicated, in order.

    A call whose arguments are not Python literals (they use a variable, a lambda, ...)
    is skipped: it cannot be replayed without the surrounding context.
    """
    found: list[CallInput] = []
    seen: set[str] = set()
    for name in names:
        for match in re.finditer(rf"(?<![\w.]){re.escape(name)}\(", text):
            call = _parse_call_at(text, match.start())
            if call is None:
                continue
            item = _literal_call(call)
            if item is None or item.key() in seen:
                continue
            seen.add(item.key())
            found.append(item)
            if len(found) >= limit:
                return found
    return found


def _parse_call_at(text: str, start: int) -> ast.Call | None:
    """The shortest `name(...)` starting at `start` that parses as a call expression."""
    pos = start
    while True:
        pos = text.find(")", pos + 1)
        if pos == -1 or pos - start > 4000:
            return None
        snippet = text[start : pos + 1]
        try:
            node = ast.parse(snippet, mode="eval").body
        except (SyntaxError, ValueError):
            continue
        return node if isinstance(node, ast.Call) else None


def _literal_call(call: ast.Call) -> CallInput | None:
    try:
        args = tuple(ast.literal_eval(a) for a in call.args)
        kwargs = tuple((k.arg, ast.literal_eval(k.value)) for k in call.keywords if k.arg)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return None
    return CallInput(args=args, kwargs=kwargs)


def encode_output(value: Any) -> str:
    """Canonical text of one returned value (what clustering compares and the cache keeps).

    Floats are rounded to 6 decimals (equal programs may differ in the last digits),
    tuples and lists compare equal (JSON has one sequence type), sets are sorted, dict
    keys become text, and a non-plain value the sandbox could only describe (the
    executor's OpaqueValue) is encoded by its type name, never by its memory address.
    """
    try:
        return json.dumps(_canonical(value), sort_keys=True, default=_fallback)
    except (ValueError, TypeError, RecursionError) as err:
        # e.g. a structure nested past the recursion limit: equal only to its own kind.
        return f"<unencodable:{type(value).__name__}:{type(err).__name__}>"


def _fallback(value: Any) -> str:
    type_name = getattr(value, "type_name", None)
    if isinstance(type_name, str):
        return f"<opaque:{type_name}:{bool(value)}>"
    return f"<{type(value).__name__}:{value!r}>"


def _canonical(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 3000:
        return f"<bigint:{value:x}>"  # decimal conversion of huge ints is capped; hex is not
    if isinstance(value, float):
        return round(value, 6) if value == value and abs(value) != float("inf") else repr(value)
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {repr(k) if not isinstance(k, str) else k: _canonical(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted((_canonical(v) for v in value), key=repr)
    if isinstance(value, (bytes, complex)):
        return f"<{type(value).__name__}:{value!r}>"
    return value


@dataclass(frozen=True)
class AgreementChoice:
    """The chosen index, the winning cluster's size, the number of clusters, and why the
    choice fell back to the first sample (when it did)."""

    chosen: int
    cluster_size: int
    num_clusters: int
    fallback: str | None = None


def choose_by_agreement(signatures: Sequence[str | None]) -> AgreementChoice:
    """Largest cluster of equal signatures; ties go to the cluster holding the earliest
    candidate; the choice is that cluster's earliest member.

    `None` marks a candidate that produced no usable output (every call failed, or it has
    no code): it joins no cluster. With no clusters at all the first sample is chosen and
    the reason is recorded.
    """
    if not signatures:
        raise ValueError("no candidates")
    clusters: dict[str, list[int]] = {}
    for index, sig in enumerate(signatures):
        if sig is not None:
            clusters.setdefault(sig, []).append(index)
    if not clusters:
        return AgreementChoice(0, 0, 0, fallback="no candidate produced outputs")
    best = max(clusters.values(), key=lambda members: (len(members), -members[0]))
    return AgreementChoice(best[0], len(best), len(clusters))
