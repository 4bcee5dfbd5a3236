"""Pure metric functions of the benchmark: pass@k, gap closed, bootstrap intervals, a
task's difficulty bucket.

Judge quality (balanced accuracy, AUROC, yes-rate, swap consistency) has its one home in
``pairrl.rollout.judge_quality``, shared with training metrics.

Every function takes plain numbers or arrays and returns plain numbers; the tests check
them against hand-worked values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["DIFFICULTY_BUCKETS", "bootstrap_ci", "difficulty_bucket", "gap_closed", "pass_at_k"]

DIFFICULTY_BUCKETS: tuple[str, ...] = ("easy", "medium", "hard")
# pass rates are ratios of small counts (1/3 computed from labels, 1/3 typed in a config as
# 0.3333): a threshold this close counts as reached
_RATE_TOLERANCE = 1e-3


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k).

    With n samples of which c pass, the chance that k drawn without replacement contain a
    pass. pass_at_k(n, c, 1) = c / n.
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def gap_closed(selected: float, pass1: float, oracle: float) -> float | None:
    """Share of the pass@1 -> oracle gap a selector closes: (sel - p1) / (oracle - p1).

    None when there is no gap (oracle == pass@1): the share is undefined, not 0 or 1.
    """
    gap = oracle - pass1
    if gap <= 1e-12:
        return None
    return (selected - pass1) / gap


def bootstrap_ci(
    columns: Sequence[np.ndarray],
    statistic: Callable[..., float | None],
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval over tasks.

    `columns` are per-task arrays of equal length, resampled *jointly* (the same task
    indices for every column, so paired statistics such as gap closed keep their
    pairing); `statistic(*resampled_columns)` gives one replicate. Replicates where the
    statistic is undefined (None) are dropped; if all are, the interval is (None, None).
    """
    n = len(columns[0])
    if any(len(c) != n for c in columns):
        raise ValueError("bootstrap columns must have equal length")
    if n == 0:
        return (None, None)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    reps: list[float] = []
    for row in idx:
        value = statistic(*(np.asarray(c)[row] for c in columns))
        if value is not None:
            reps.append(float(value))
    if not reps:
        return (None, None)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(np.asarray(reps), [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


def difficulty_bucket(pass_rate: float, easy_at: float, hard_at: float) -> str:
    """``easy`` when ``pass_rate >= easy_at``, ``hard`` when ``pass_rate <= hard_at``, else
    ``medium`` (a threshold within 0.001 counts as reached).

    >>> [difficulty_bucket(r, 2 / 3, 1 / 3) for r in (1.0, 2 / 3, 0.5, 0.3333, 0.0)]
    ['easy', 'easy', 'medium', 'hard', 'hard']
    """
    if not 0.0 <= hard_at < easy_at <= 1.0:
        raise ValueError(f"need 0 <= hard_at < easy_at <= 1, got {hard_at} and {easy_at}")
    if pass_rate >= easy_at - _RATE_TOLERANCE:
        return "easy"
    if pass_rate <= hard_at + _RATE_TOLERANCE:
        return "hard"
    return "medium"
