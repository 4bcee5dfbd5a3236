"""Pure metric functions: pass@k, gap closed, bootstrap intervals, judge quality.

Every function takes plain numbers or arrays and returns plain numbers; the tests check
them against hand-worked values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

__all__ = [
    "auroc",
    "balanced_accuracy",
    "bootstrap_ci",
    "gap_closed",
    "pass_at_k",
    "swap_consistency",
]


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


def balanced_accuracy(predicted: Sequence[bool], actual: Sequence[bool]) -> float | None:
    """(TPR + TNR) / 2; None when either class is absent from `actual`."""
    pred = np.asarray(predicted, dtype=bool)
    act = np.asarray(actual, dtype=bool)
    if act.all() or not act.any():
        return None
    tpr = float((pred & act).sum() / act.sum())
    tnr = float((~pred & ~act).sum() / (~act).sum())
    return (tpr + tnr) / 2.0


def auroc(scores: Sequence[float], actual: Sequence[bool]) -> float | None:
    """Area under the ROC curve as the Mann-Whitney probability that a random positive
    outscores a random negative (ties count 1/2); None when a class is absent."""
    s = np.asarray(scores, dtype=float)
    act = np.asarray(actual, dtype=bool)
    pos, neg = s[act], s[~act]
    if len(pos) == 0 or len(neg) == 0:
        return None
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return float((greater + 0.5 * ties) / (len(pos) * len(neg)))


def swap_consistency(forward: Sequence[int], swapped: Sequence[int]) -> float | None:
    """Fraction of pairs whose preference survives swapping A and B.

    Preferences are signs: +1 prefers the first-named candidate, -1 the second, 0 tie.
    `forward[i]` is judged as (x, y); `swapped[i]` as (y, x) and already mapped back to
    the (x, y) frame by the caller, so a consistent judge has forward == swapped.
    """
    if len(forward) != len(swapped):
        raise ValueError("forward and swapped must have equal length")
    if not forward:
        return None
    same = sum(1 for f, s in zip(forward, swapped, strict=True) if f == s)
    return same / len(forward)
