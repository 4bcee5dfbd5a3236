"""The rows TRL receives for one problem group, and the record kept for each row.

TRL repeats every problem G times consecutively and expects G rows back per problem, in
that order. PairRL fills a group as::

    [solution x G_gen] [judgement x n_pairs] [no_pair x (G_ver - n_pairs)]

``no_pair`` rows are verification slots for which the problem had no eligible pair
(every solution failed, or fewer distinct eligible pairs than slots). They carry a
one-token placeholder completion, no reward, zero advantage and a zero loss mask, so
they add neither gradient nor tokens to the loss normaliser; they are counted.

``unlabelled`` rows are solution slots whose execution ended in ``sandbox_error``: an
infrastructure failure, never a wrong answer (the executor's contract). They keep their
completion but carry no reward, zero advantage and a zero loss mask, never enter a pair or
a pointwise judgement, and are counted (``pairrl/unlabelled_solutions``).
PointRL uses the same layout with pointwise judgements; GRPO has G_gen = G, G_ver = 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "JUDGEMENT",
    "NO_PAIR",
    "RECORD_COLUMN",
    "SOLUTION",
    "STATS_COLUMN",
    "TEMPERATURE_COLUMN",
    "UNLABELLED",
    "RowRecord",
    "SampleType",
    "check_group_order",
    "group_layout",
]

SampleType = Literal["solution", "judgement", "no_pair", "unlabelled"]
SOLUTION: SampleType = "solution"
JUDGEMENT: SampleType = "judgement"
NO_PAIR: SampleType = "no_pair"
UNLABELLED: SampleType = "unlabelled"
NO_REWARD: tuple[str, ...] = (NO_PAIR, UNLABELLED)  # rows that carry no reward, no gradient

# The rollout's extra columns: TRL hands them to the reward functions and puts them on the
# batch's rows (``inputs``) that the trainer reads after scoring.
RECORD_COLUMN = "pairrl_record"  # each row's RowRecord
TEMPERATURE_COLUMN = "pairrl_temperature"  # the temperature each row was sampled at
STATS_COLUMN = "pairrl_rollout_stats"  # one value for the whole call: fillers, phase timings


def group_layout(num_solutions: int, num_judgements: int, num_pairs: int) -> list[SampleType]:
    """Sample types of one group's rows: solutions, then judged pairs, then empty slots.

    >>> group_layout(4, 4, 3)
    ['solution', 'solution', 'solution', 'solution', 'judgement', 'judgement', 'judgement', 'no_pair']
    """
    if num_solutions < 1 or num_judgements < 0:
        raise ValueError(
            f"need num_solutions >= 1 and num_judgements >= 0, got {num_solutions}, {num_judgements}"
        )
    if not 0 <= num_pairs <= num_judgements:
        raise ValueError(f"num_pairs must be in 0..{num_judgements}, got {num_pairs}")
    return (
        [SOLUTION] * num_solutions
        + [JUDGEMENT] * num_pairs
        + [NO_PAIR] * (num_judgements - num_pairs)
    )


@dataclass
class RowRecord:
    """What the rollout knows about one row; plain data so it can be gathered across processes.

    ``group`` is the problem's index in the *global* batch. ``reward`` is None exactly for
    ``no_pair`` and ``unlabelled`` rows. Solution rows carry the execution outcome; judgement rows carry the
    judged solutions' labels, the parsed ratings (None when unparseable, with the reason)
    and, for pairs, the pair kind.
    """

    group: int
    sample_type: SampleType
    reward: float | None
    completion_tokens: int = 0
    task_id: str = ""
    # solution rows
    passed: bool | None = None
    exec_status: str | None = None
    # judgement rows (one label per judged solution: 2 for pairs, 1 for pointwise)
    judged: tuple[int, ...] = ()
    labels: tuple[bool, ...] = ()
    ratings: tuple[int, ...] | None = None
    parse_failure: str | None = None
    pair_kind: str | None = None

    def check(self) -> None:
        """Raise ValueError when the record is inconsistent with its sample type."""
        if self.sample_type in NO_REWARD:
            if self.reward is not None:
                raise ValueError(
                    f"{self.sample_type} row of group {self.group} has a reward {self.reward}"
                )
            return
        if self.reward is None or self.reward != self.reward:  # None or NaN
            raise ValueError(f"{self.sample_type} row of group {self.group} has no reward")
        if self.sample_type == SOLUTION and self.passed is None:
            raise ValueError(f"solution row of group {self.group} has no execution label")
        if self.sample_type == JUDGEMENT and len(self.labels) not in (1, 2):
            raise ValueError(f"judgement row of group {self.group} judges {len(self.labels)} items")


def check_group_order(groups: Sequence[int], group_size: int) -> None:
    """Rows must come as whole groups of ``group_size`` consecutive rows with one group id."""
    if len(groups) % group_size:
        raise ValueError(f"{len(groups)} rows is not a multiple of the group size {group_size}")
    for start in range(0, len(groups), group_size):
        block = set(groups[start : start + group_size])
        if len(block) != 1:
            raise ValueError(f"rows {start}..{start + group_size - 1} mix groups {sorted(block)}")
