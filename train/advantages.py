"""PairRL advantages as a pure function of the batch's rows.

Why not TRL's own: TRL subtracts one baseline per group of G consecutive rows. PairRL
needs two baselines inside one group (solutions against the problem's solutions,
judgements by default against the mean of *all* judgement rows in the batch: this
project's reading of the paper, which does not spell the judgement baseline out), and
TRL always makes a group's advantages sum to zero, which a batch baseline does not.
So ``PairRLTrainer`` lets TRL run unchanged and replaces only the advantages with these.

Definitions (``no_pair`` and ``unlabelled`` rows always get 0 and enter no baseline):

* solution row i of problem p:  A_i = r_i - mean_{solutions of p} r
* judgement row j:              A_j = lambda * (r_j - b),
  with b the mean over every judgement row of the batch (``baseline='batch'``) or over
  the judgement rows of j's own problem (``baseline='problem'``).
* ``scale='group'`` divides each row's centred reward by (std + 1e-4) of the set its
  baseline was taken over; ``scale='batch'`` by the std of all rows of its sample type.
  The std is Bessel-corrected as TRL's ``nanstd``; a set of one row has std 0.
* GRPO mode is the solution rule alone, which equals TRL's advantage with
  ``scale_rewards='none'``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pairrl.rollout.layout import JUDGEMENT, NO_REWARD, SOLUTION

__all__ = ["EPS_STD", "compute_advantages", "sample_type_weights"]

EPS_STD = 1e-4  # TRL's epsilon in (r - mean) / (std + eps)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _std(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = _mean(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def compute_advantages(
    groups: Sequence[int],
    sample_types: Sequence[str],
    rewards: Sequence[float | None],
    *,
    lambda_ver: float = 1.0,
    judgement_baseline: Literal["batch", "problem"] = "batch",
    scale: Literal["none", "group", "batch"] = "none",
) -> list[float]:
    """Advantage per row (see module docstring). Inputs are parallel, one entry per row."""
    if not len(groups) == len(sample_types) == len(rewards):
        raise ValueError(
            f"length mismatch: {len(groups)} groups, {len(sample_types)} types, {len(rewards)} rewards"
        )
    if judgement_baseline not in ("batch", "problem"):
        raise ValueError(f"judgement_baseline {judgement_baseline!r}; allowed: batch, problem")
    if scale not in ("none", "group", "batch"):
        raise ValueError(f"scale {scale!r}; allowed: none, group, batch")
    for i, (kind, reward) in enumerate(zip(sample_types, rewards, strict=True)):
        if kind not in (SOLUTION, JUDGEMENT, *NO_REWARD):
            raise ValueError(f"row {i}: unknown sample type {kind!r}")
        has_reward = reward is not None and reward == reward  # not NaN
        if (kind in NO_REWARD) == has_reward:
            raise ValueError(f"row {i}: {kind} row with reward {reward!r}")

    # Baseline sets: solutions by problem; judgements by problem or all together.
    sets: dict[tuple[str, int], list[int]] = {}
    for i, (group, kind) in enumerate(zip(groups, sample_types, strict=True)):
        if kind == SOLUTION:
            sets.setdefault((SOLUTION, group), []).append(i)
        elif kind == JUDGEMENT:
            key = group if judgement_baseline == "problem" else -1
            sets.setdefault((JUDGEMENT, key), []).append(i)

    type_std = {
        kind: _std([float(rewards[i]) for i, k in enumerate(sample_types) if k == kind])  # type: ignore[arg-type]
        for kind in (SOLUTION, JUDGEMENT)
    }
    advantages = [0.0] * len(groups)
    for (kind, _), rows in sets.items():
        values = [float(rewards[i]) for i in rows]  # type: ignore[arg-type]
        baseline = _mean(values)
        if scale == "group":
            divisor = _std(values) + EPS_STD
        elif scale == "batch":
            divisor = type_std[kind] + EPS_STD
        else:
            divisor = 1.0
        weight = lambda_ver if kind == JUDGEMENT else 1.0
        for i, value in zip(rows, values, strict=True):
            advantages[i] = weight * (value - baseline) / divisor
    return advantages


def sample_type_weights(sample_types: Sequence[str], token_counts: Sequence[float]) -> list[float]:
    """Per-row advantage weights that turn TRL's batch token mean into one mean per type.

    TRL's ``dapo`` loss divides the sum of every row's token losses by the batch's token
    count N, so a sample type's share of the objective is its share of the tokens: lambda
    means "lambda times the judgement token share", and judgement tokens dilute J_gen even
    at lambda = 0. The per-token loss is positively homogeneous in the advantage, so
    scaling a row's advantage by N / N_T (N_T: tokens of its type) makes the loss
    sum_T (1 / N_T) * sum over T's tokens, i.e. J = J_gen + lambda * J_ver with each J a
    token mean of its own type. Rows without a reward get weight 0 (their advantage is 0).

    Worked example: solution rows of 10 and 30 tokens, one judgement row of 60: N = 100,
    N_solution = 40, N_judgement = 60 -> weights 2.5, 2.5, 1.6667.

    >>> [round(w, 4) for w in sample_type_weights(["solution", "solution", "judgement"], [10, 30, 60])]
    [2.5, 2.5, 1.6667]
    """
    if len(sample_types) != len(token_counts):
        raise ValueError(f"{len(sample_types)} rows but {len(token_counts)} token counts")
    total = float(sum(token_counts))
    per_type: dict[str, float] = {}
    for kind, count in zip(sample_types, token_counts, strict=True):
        per_type[kind] = per_type.get(kind, 0.0) + float(count)
    return [
        total / per_type[kind] if kind in (SOLUTION, JUDGEMENT) and per_type[kind] > 0 else 0.0
        for kind in sample_types
    ]
