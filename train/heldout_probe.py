"""The held-out judge probe: the judge's quality on one fixed set of held-out pairs, every N
training steps, for learning curves that any two runs share.

A *probe pair* is two candidate solutions of one held-out task with their execution
labels. Each pair is shown twice, once in each order, and only the rating of the candidate
shown as A is read: the expectation of the rating tokens right after ``<rating_A>``
(``pairrl.rollout.readouts``), without sampling. A probe is two forwards per pair (three
where ``"10"`` is two tokens) and no generation, so it is cheap beside an RL step, and
the rating of each candidate is read at the same place in the answer, whatever stands in
the other slot.

Item quality (balanced accuracy, AUROC, yes-rate, failed items) has its one definition in
``pairrl.rollout.judge_quality``; the probe reports it over all items and per pair type
(``mixed``: one candidate passes; ``same_label``: both or neither), on mixed pairs how
often the passing candidate is rated above the failing one (ties count one half), and the
mean score, where a drift of every rating shows before it crosses the yes cut.

The pairs are built once per run from the recipe's held-out tasks (``build_probe_pairs``),
written to ``RUN/heldout_pairs.jsonl`` and read from there by a resumed run and by an
experiment's baselines, so every model of a comparison is probed on the same items.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from pairrl.config import PairrlModel
from pairrl.rewards.tasks import Task
from pairrl.rollout.judge_quality import item_quality
from pairrl.rollout.prompt_kit import Messages

__all__ = [
    "PAIRS_FILE",
    "PROBE_LOG",
    "HeldoutProbeConfig",
    "ProbePair",
    "build_probe_pairs",
    "probe_metrics",
    "read_probe_log",
    "read_probe_pairs",
    "write_probe_pairs",
]

PAIRS_FILE = "heldout_pairs.jsonl"  # the run's probe pairs, in the run folder
PROBE_LOG = "heldout_judge.jsonl"  # one line per probed step, in the run folder


class HeldoutProbeConfig(PairrlModel):
    """The held-out judge probe (learning curves of the judge on held-out pairs)."""

    every_steps: int = Field(
        default=0,
        ge=0,
        le=1_000_000,
        description="probe the judge before the first step and every N optimiser steps "
        "(0: no probe)",
    )
    pairs_file: str | None = Field(
        default=None,
        description="a JSONL file of probe pairs (a run's RUN/heldout_pairs.jsonl); unset: "
        "the recipe builds them from its held-out tasks into RUN/heldout_pairs.jsonl",
    )
    max_pairs: int = Field(
        default=100,
        ge=2,
        le=5000,
        description="pairs the recipe builds (half mixed where the tasks allow); each is "
        "judged in both orders",
    )
    batch_size: int = Field(default=16, ge=1, le=1024, description="prompts per forward")


@dataclass(frozen=True)
class ProbePair:
    """Two labelled candidates of one task, as the two judge prompts that show each as A."""

    task_id: str
    a_first: Messages  # the pairwise prompt with candidate a as A, b as B
    b_first: Messages  # the same pair with b as A
    label_a: bool
    label_b: bool

    @property
    def mixed(self) -> bool:
        return self.label_a != self.label_b


def build_probe_pairs(
    tasks: Sequence[Task],
    candidates: Sequence[Sequence[tuple[str, bool]]],
    pairwise: Callable[[Task, str, str], Messages],
    *,
    seed: int,
    max_pairs: int,
) -> list[ProbePair]:
    """At most ``max_pairs`` pairs of distinct candidates (solution text as the judge sees
    it, execution label) of the same task, for ``tasks`` and their ``candidates``: every
    unordered pair, shuffled with ``seed``; mixed pairs fill up to half of ``max_pairs``,
    same-label pairs the rest, and mixed ones again where same-label ones run out.
    ``pairwise`` builds a judge prompt (the prompt kit's)."""
    rng = random.Random(seed)
    mixed: list[tuple[Task, tuple[str, bool], tuple[str, bool]]] = []
    same: list[tuple[Task, tuple[str, bool], tuple[str, bool]]] = []
    for task, found in zip(tasks, candidates, strict=True):
        first_labels: dict[str, bool] = {}
        for text, label in found:
            first_labels.setdefault(text, label)
        distinct = list(first_labels.items())
        for i, first in enumerate(distinct):
            for second in distinct[i + 1 :]:
                (mixed if first[1] != second[1] else same).append((task, first, second))
    rng.shuffle(mixed)
    rng.shuffle(same)
    take_mixed = min(len(mixed), (max_pairs + 1) // 2)
    chosen = mixed[:take_mixed] + same[: max_pairs - take_mixed]
    chosen += mixed[take_mixed : take_mixed + max_pairs - len(chosen)]
    rng.shuffle(chosen)
    return [
        ProbePair(
            task_id=task.task_id,
            a_first=pairwise(task, a, b),
            b_first=pairwise(task, b, a),
            label_a=label_a,
            label_b=label_b,
        )
        for task, (a, label_a), (b, label_b) in chosen
    ]


def probe_metrics(
    pairs: Sequence[ProbePair], scores: Sequence[tuple[float | None, float | None]]
) -> dict[str, float | None]:
    """The probe's numbers from each pair's item scores (a's and b's, each in [0, 1] when
    shown as A; None where the read-out failed).

    Worked example: a mixed pair (pass, fail) scored (0.9, 0.2), a mixed pair (fail, pass)
    scored (0.7, 0.6) and a same-label pair (fail, fail) scored (0.1, None). Items judged:
    yes for 0.9, 0.7, 0.6; no for 0.2, 0.1; one failed. Positives 0.9 and 0.6 both "yes":
    TPR 1; negatives 0.2, 0.7, 0.1: TNR 2/3; balanced accuracy 5/6. Mixed pairs: TPR 1,
    TNR 1/2, 0.75; the passing candidate above the failing one in 1 of 2 pairs: 0.5. The
    mean score of the five items read: 2.5 / 5.

    >>> fail_pass = ProbePair("t", [], [], False, True)
    >>> pairs = [ProbePair("t", [], [], True, False), fail_pass, ProbePair("t", [], [], False, False)]
    >>> m = probe_metrics(pairs, [(0.9, 0.2), (0.7, 0.6), (0.1, None)])
    >>> round(m["judge_balanced_accuracy"], 4), m["mixed_balanced_accuracy"], m["mixed_order_accuracy"]
    (0.8333, 0.75, 0.5)
    >>> m["failed_items"], m["same_label_balanced_accuracy"], m["pairs"], m["mean_score"]
    (1, None, 3, 0.5)
    """
    if len(pairs) != len(scores):
        raise ValueError(f"{len(pairs)} pairs but {len(scores)} score pairs")

    def items(chosen: Sequence[int]) -> dict[str, Any]:
        values = [v for i in chosen for v in scores[i]]
        labels = [y for i in chosen for y in (pairs[i].label_a, pairs[i].label_b)]
        return item_quality(values, labels)

    every = items(range(len(pairs)))
    mixed_at = [i for i, p in enumerate(pairs) if p.mixed]
    same_at = [i for i, p in enumerate(pairs) if not p.mixed]
    ordered = [_passing_first(pairs[i], scores[i]) for i in mixed_at]
    judged = [o for o in ordered if o is not None]
    read = [v for pair in scores for v in pair if v is not None]
    return {
        "pairs": len(pairs),
        "mixed_pairs": len(mixed_at),
        "judge_balanced_accuracy": every["balanced_accuracy"],
        "judge_auroc": every["auroc"],
        "judge_yes_rate": every["yes_rate"],
        "failed_items": every["failed_items"],
        "mixed_balanced_accuracy": items(mixed_at)["balanced_accuracy"],
        "same_label_balanced_accuracy": items(same_at)["balanced_accuracy"],
        "mixed_order_accuracy": sum(judged) / len(judged) if judged else None,
        "mean_score": sum(read) / len(read) if read else None,
    }


def _passing_first(pair: ProbePair, score: tuple[float | None, float | None]) -> float | None:
    """1 when a mixed pair's passing candidate scored above the failing one, 0.5 on a tie,
    0 below; None when either read-out failed."""
    a, b = score
    if a is None or b is None:
        return None
    passing, failing = (a, b) if pair.label_a else (b, a)
    return 1.0 if passing > failing else 0.5 if passing == failing else 0.0


def write_probe_pairs(path: Path, pairs: Sequence[ProbePair]) -> None:
    """``pairs`` as JSON lines, written next to ``path`` and renamed into place."""
    staged = path.with_name(f".{path.name}.partial")
    with staged.open("w") as fh:
        for pair in pairs:
            fh.write(json.dumps(asdict(pair)) + "\n")
    staged.replace(path)


def read_probe_pairs(path: Path) -> list[ProbePair]:
    """The pairs of a probe pairs file; a clear error naming the file and line otherwise."""
    if not path.is_file():
        raise FileNotFoundError(f"heldout_probe.pairs_file {path}: no such file")
    pairs = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        try:
            pairs.append(ProbePair(**json.loads(line)))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{path}:{number}: not a probe pair ({err})") from err
    if not pairs:
        raise ValueError(f"{path} holds no probe pairs")
    return pairs


def read_probe_log(path: Path) -> list[dict[str, Any]]:
    """The probe's lines of a run's ``heldout_judge.jsonl``, one per step (a step probed
    again after a resume keeps its last line), in step order; [] when there is none."""
    if not path.is_file():
        return []
    by_step = {}
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            by_step[int(row["step"])] = row
    return [by_step[step] for step in sorted(by_step)]
