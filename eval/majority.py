"""Majority vote over final answers (``majority``), the self-consistency baseline.

On a math task the candidates vote with their final ``\\boxed{}`` answers, equivalent
answers counting as one (math-verify: ``1/2``, ``0.5`` and ``\\frac{1}{2}`` agree); on a
code task with their programs, identical up to whitespace. The largest group wins (ties:
the group holding the earliest candidate), and its earliest member is chosen. Candidates
with no final answer (or no code), and failed samples, do not vote; when nobody votes,
the first sample is chosen and ``detail.fallback`` says why. No judge, no execution.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pairrl.eval.agreement import choose_by_agreement
from pairrl.eval.candidates import Candidate
from pairrl.eval.selectors import Selection

__all__ = ["select_majority", "vote_keys"]


def vote_keys(task: Any, candidates: Sequence[Candidate]) -> list[str | None]:
    """Each candidate's vote (equal strings are one answer), None for no vote."""
    from pairrl.rewards.answers import answer_clusters, is_answer_task

    if is_answer_task(task):
        voting = [i for i, c in enumerate(candidates) if c.error is None]
        clusters = answer_clusters([candidates[i].completion for i in voting])
        keys: list[str | None] = [None] * len(candidates)
        for i, cluster in zip(voting, clusters, strict=True):
            keys[i] = None if cluster is None else f"answer {cluster}"
        return keys
    return [
        " ".join(c.code.split()) if c.error is None and c.code.strip() else None for c in candidates
    ]


def select_majority(
    task_id: str, task: Any, candidates: Sequence[Candidate], labels: Sequence[bool]
) -> Selection:
    """The ``majority`` selection on one task (see the module docstring)."""
    if not candidates:
        return Selection("majority", task_id, None, 0.0, failure="no candidates")
    choice = choose_by_agreement(vote_keys(task, candidates))
    fallback = "no candidate gave a final answer" if choice.fallback else None
    return Selection(
        "majority",
        task_id,
        choice.chosen,
        float(labels[choice.chosen]),
        detail={
            "cluster_size": choice.cluster_size,
            "num_clusters": choice.num_clusters,
            "fallback": fallback,
        },
    )
