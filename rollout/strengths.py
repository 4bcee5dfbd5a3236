"""Linear-Gaussian strength models fitted to a tournament's comparisons (pure python).

Two models, both solved as one small ridge system ``(P + kappa I) s = b`` by Cholesky:

* ``margin_strengths``: each comparison's signed confidence weight ``y = w (2 v - 1)`` is
  the difference of two strengths plus noise (Massey ratings with shrinkage). It reads
  only *who won and by how much*: the ladder's pick.
* ``rating_strengths``: each rating is the rated candidate's level plus noise, plus a
  *pair effect* shared by both ratings of one comparison (a judge that rates a pair
  higher or lower as a whole). It reads the ratings themselves. The pairwise prompts
  ask for an absolute scale (10 = correct and robust, 1 = incorrect) and the
  verification reward trains each rating towards its own candidate's label, so a rating
  carries the rated candidate's level as well as the pair's difference; how much it
  carries depends on the pair effect, which ``pair_effect_weight`` estimates from the
  comparisons themselves. With no pair effect the model reduces to each candidate's
  mean rating (shrunk toward the field's); with a dominant one, to rating differences
  only (a Massey model on ``r_a - r_b``).

The rating model, for a comparison c of a and b with ratings (r_a, r_b)::

    r_a = s_a + u_c + e_a,   r_b = s_b + u_c + e_b,   e ~ N(0, sigma^2),  u_c ~ N(0, sigma_u^2)

The difference ``r_a - r_b = s_a - s_b + (e_a - e_b)`` (variance 2 sigma^2) and the sum
``r_a + r_b = s_a + s_b + 2 u_c + (e_a + e_b)`` (variance 2 sigma^2 + 4 sigma_u^2) are
independent, so with ``rho = sigma^2 / (sigma^2 + 2 sigma_u^2)`` (the sum's weight
relative to the difference's, in (0, 1]) the posterior mean of s under a prior worth
``prior_ratings`` ratings at the field's mean rating m solves::

    (L + rho Q + 2 prior_ratings I) s = sum_c [(r_a - r_b)(e_a - e_b) + rho (r_a + r_b)(e_a + e_b)]
                                        + 2 prior_ratings m

with L the comparison graph's Laplacian and Q its signless Laplacian (one edge per
comparison).
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import mul

__all__ = ["margin_strengths", "pair_effect_weight", "rating_strengths"]

RatedComparison = tuple[int, int, float, float]
"""(a, b, r_a, r_b): one successful comparison, ratings in the schedule's (a, b) order."""

RHO_UNKNOWN = 0.5
"""The sum's weight when the pair effect cannot be estimated yet (no candidate rated
twice): halfway between "ratings are absolute" (1) and "only differences count" (0)."""


def margin_strengths(
    num_candidates: int, records: Sequence[tuple[int, int, float]], kappa: float
) -> list[float]:
    """Posterior mean strengths of the Gaussian margin model ``y_ab ~ N(s_a - s_b,
    sigma^2)`` with prior ``s ~ N(0, sigma^2 / kappa)``: the ridge solution of
    ``(kappa I + L) s = b`` (L the comparison graph's Laplacian, one edge per
    comparison; b_i = sum of i's signed weights), i.e. Massey ratings with shrinkage.
    Opponent-adjusted, and a candidate with few comparisons is pulled toward 0.
    ``records``: (a, b, y) with y = A's signed weight. Candidates without a comparison
    get 0. Dense Cholesky: O(N^3 / 6), ~0.1 ms in pure python at N = 16."""
    n = num_candidates
    if kappa <= 0:
        raise ValueError(f"kappa must be > 0, got {kappa!r}")
    mat = [[0.0] * n for _ in range(n)]
    rhs = [0.0] * n
    for i in range(n):
        mat[i][i] = kappa
    for a, b, y in records:
        mat[a][a] += 1.0
        mat[b][b] += 1.0
        mat[a][b] -= 1.0
        mat[b][a] -= 1.0
        rhs[a] += y
        rhs[b] -= y
    return _solve_spd(mat, rhs)


def pair_effect_weight(num_candidates: int, comparisons: Sequence[RatedComparison]) -> float:
    """``rho = sigma^2 / (sigma^2 + 2 sigma_u^2)`` estimated from the comparisons (moments).

    ``sigma^2 + sigma_u^2`` is the pooled variance of a candidate's ratings about its own
    mean (candidates rated at least twice). ``sigma_u^2`` is the mean, over comparisons
    whose two candidates were both rated elsewhere too, of the product of the two
    ratings' deviations from each candidate's mean *over its other comparisons* (only the
    shared pair effect survives that product in expectation); it is clipped to
    ``[0, sigma^2 + sigma_u^2]``. Returns ``RHO_UNKNOWN`` when nothing can be estimated
    and 1.0 when every rating of a candidate is the same (no noise to weigh).

    Hand-worked: candidates 0 and 1 compared twice, (8, 6) then (4, 2): each candidate's
    ratings deviate by +-2 from its mean, so sigma^2 + sigma_u^2 = (4 + 4 + 4 + 4) / 2 =
    8; leave-one-out means are the other comparison's ratings, so the products are
    (8 - 4)(6 - 2) = 16 and (4 - 8)(2 - 6) = 16: sigma_u^2 = 16, clipped to 8, sigma^2 =
    0, rho = 0 (the whole spread is the pair's: only the difference, 2 both times, counts).
    """
    total = [0.0] * num_candidates
    square = [0.0] * num_candidates
    count = [0] * num_candidates
    for a, b, ra, rb in comparisons:
        total[a] += ra
        total[b] += rb
        square[a] += ra * ra
        square[b] += rb * rb
        count[a] += 1
        count[b] += 1
    spread = dof = 0.0
    for t, q, c in zip(total, square, count, strict=True):
        if c >= 2:
            spread += q - t * t / c
            dof += c - 1
    if dof == 0:
        return RHO_UNKNOWN
    within = max(spread / dof, 0.0)
    if within == 0.0:
        return 1.0
    products = []
    for a, b, ra, rb in comparisons:
        if count[a] >= 2 and count[b] >= 2:
            rest_a = (total[a] - ra) / (count[a] - 1)
            rest_b = (total[b] - rb) / (count[b] - 1)
            products.append((ra - rest_a) * (rb - rest_b))
    if not products:
        return RHO_UNKNOWN
    pair_var = min(max(sum(products) / len(products), 0.0), within)
    noise_var = within - pair_var
    return noise_var / (noise_var + 2.0 * pair_var)


def rating_strengths(
    num_candidates: int,
    comparisons: Sequence[RatedComparison],
    prior_ratings: float = 1.0,
    rho: float | None = None,
) -> list[float]:
    """Posterior mean levels of the rating model (module docstring), on the rating scale.

    ``rho`` (in [0, 1]) is the weight of a comparison's rating sum against its rating
    difference; ``None`` estimates it (``pair_effect_weight``). ``prior_ratings`` > 0 is
    the prior's worth in ratings, centred on the mean of all ratings, so a candidate with
    few ratings is pulled toward the field. Candidates without a comparison get that mean.

    Hand-worked, one comparison 0 vs 1 rated (9, 3), prior worth 1 rating (m = 6):
    rho = 1: s_0 = (2 * 9 + 2 * 6) / (2 + 2) = 7.5, s_1 = (2 * 3 + 2 * 6) / 4 = 4.5 (the
    shrunk mean ratings); rho = 0: the system [[3, -1], [-1, 3]] s = [6 + 12, -6 + 12]
    gives s = [7.5, 4.5] too (one comparison: the sum adds nothing the prior did not).
    """
    if prior_ratings <= 0:
        raise ValueError(f"prior_ratings must be > 0, got {prior_ratings!r}")
    if rho is not None and not 0.0 <= rho <= 1.0:
        raise ValueError(f"rho must lie in [0, 1], got {rho!r}")
    n = num_candidates
    if not comparisons:
        return [0.0] * n
    if rho is None:
        rho = pair_effect_weight(n, comparisons)
    mean = sum(ra + rb for _, _, ra, rb in comparisons) / (2 * len(comparisons))
    prior = 2.0 * prior_ratings
    mat = [[0.0] * n for _ in range(n)]
    rhs = [prior * mean] * n
    for i in range(n):
        mat[i][i] = prior
    for a, b, ra, rb in comparisons:
        mat[a][a] += 1.0 + rho
        mat[b][b] += 1.0 + rho
        mat[a][b] += rho - 1.0
        mat[b][a] += rho - 1.0
        diff, both = ra - rb, rho * (ra + rb)
        rhs[a] += diff + both
        rhs[b] += both - diff
    return _solve_spd(mat, rhs)


def _solve_spd(mat: list[list[float]], rhs: list[float]) -> list[float]:
    """Solve ``mat x = rhs`` for a symmetric positive definite ``mat`` (Cholesky;
    ``map(mul, ...)`` dot products keep it ~3x faster than a generator in pure python)."""
    n = len(rhs)
    low: list[list[float]] = []  # row i holds L[i][0..i]
    for i in range(n):
        li: list[float] = []
        row = mat[i]
        for j in range(i):
            lj = low[j]
            li.append((row[j] - sum(map(mul, li, lj[:j]))) / lj[j])
        li.append((row[i] - sum(map(mul, li, li))) ** 0.5)
        low.append(li)
    u: list[float] = []
    for i in range(n):
        li = low[i]
        u.append((rhs[i] - sum(map(mul, li[:i], u))) / li[i])
    x = [0.0] * n
    for i in range(n - 1, -1, -1):
        acc = u[i]
        for k in range(i + 1, n):
            acc -= low[k][i] * x[k]
        x[i] = acc / low[i][i]
    return x
