"""Selection benchmark on a simulated judge: Swiss vs sequential halving vs random pairing
vs all pairs vs oracle.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/selection.py            # 2,000 problems
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/selection.py --quick    # 300 problems

The simulated problems and judges (stated parameters) are described in
benchmarks/selection_sim.py. For each judge, N in {8, 16} and budget B in {1N, 2N, 3N}
it prints the selection accuracy (share of problems whose winner is correct; a problem
with no correct candidate counts as a miss for everyone, which is why the oracle is below
1), the rounds (batched judge calls) per tournament, the share of the Swiss -> all-pairs
gap that halving closes, and the paired difference halving - Swiss with its standard
error. A second table gives the scheduling overhead: CPU time per tournament with a
judge that costs nothing (a lookup), i.e. the schedule's own work.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from selection_sim import JudgeModel, make_problem

from pairrl.rollout.tournament import SCHEDULES

JUDGES = [
    JudgeModel("q70", mixed_accuracy=0.7),
    JudgeModel("q80", mixed_accuracy=0.8),
    JudgeModel("q90", mixed_accuracy=0.9),
    JudgeModel("q80-sticky", mixed_accuracy=0.8, persistent_share=0.4),
    JudgeModel("q80-fail10", mixed_accuracy=0.8, failure_rate=0.1),
    JudgeModel("blind", label_blind=True),
]
SIZES = (8, 16)
BUDGET_MULTIPLIERS = (1, 2, 3)
BUDGETED = ("swiss", "sequential_halving", "random_pairing")


def _problem_seed(num_candidates: int, p: int) -> int:
    return 1_000_003 * p + num_candidates


def _judge_seed(num_candidates: int, p: int, schedule: str, budget: int) -> int:
    return zlib.crc32(f"{num_candidates}/{p}/{schedule}/{budget}".encode())


def evaluate(
    judge: JudgeModel, num_candidates: int, num_problems: int
) -> dict[tuple[str, int | None], tuple[list[float], float]]:
    """Per (schedule, budget): per-problem hits (1 if the winner is correct) and mean rounds.
    Keys ("oracle", None), ("chance", None) and ("all_pairs", None) hold the references."""
    out: dict[tuple[str, int | None], tuple[list[float], float]] = {}
    labels = [
        make_problem(judge, num_candidates, _problem_seed(num_candidates, p), 0).labels
        for p in range(num_problems)
    ]
    out[("oracle", None)] = ([float(any(y)) for y in labels], 0.0)
    # chance = a uniformly random pick: its expected accuracy is the share correct
    out[("chance", None)] = ([sum(y) / len(y) for y in labels], 0.0)
    runs: list[tuple[str, int | None]] = [("all_pairs", None)]
    runs += [(s, m * num_candidates) for m in BUDGET_MULTIPLIERS for s in BUDGETED]
    for schedule, budget in runs:
        hits: list[float] = []
        rounds = 0
        for p in range(num_problems):
            problem = make_problem(
                judge,
                num_candidates,
                _problem_seed(num_candidates, p),
                _judge_seed(num_candidates, p, schedule, budget or 0),
            )
            result = SCHEDULES[schedule](num_candidates, problem.judge_pairs, budget, seed=p)
            if result.num_comparisons > (budget if budget is not None else math.inf):
                raise AssertionError(f"{schedule} exceeded budget {budget}")
            if problem.calls != result.rounds:
                raise AssertionError(
                    f"{schedule}: {problem.calls} calls for {result.rounds} rounds"
                )
            hits.append(float(result.winner is not None and problem.labels[result.winner]))
            rounds += result.rounds
        out[(schedule, budget)] = (hits, rounds / num_problems)
    return out


def _paired_diff(a: list[float], b: list[float]) -> tuple[float, float]:
    d = [x - y for x, y in zip(a, b, strict=True)]
    return statistics.fmean(d), statistics.pstdev(d) / math.sqrt(len(d))


def scheduling_overhead(num_problems: int) -> list[tuple[str, int, int, float]]:
    """CPU ms per tournament with a free judge (fixed ratings looked up per pair)."""

    def free_judge(pairs: list[tuple[int, int]]) -> list[tuple[int, int] | None]:
        return [(1 + (a * 7 + b * 3) % 10, 1 + (b * 5 + a) % 10) for a, b in pairs]

    rows = []
    for n in SIZES:
        for schedule in (*BUDGETED, "all_pairs"):
            budget = 2 * n if schedule != "all_pairs" else n * (n - 1) // 2
            t0 = time.process_time()
            for p in range(num_problems):
                SCHEDULES[schedule](n, free_judge, budget, seed=p)
            rows.append((schedule, n, budget, (time.process_time() - t0) / num_problems * 1e3))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 problems per cell")
    parser.add_argument("--problems", type=int, default=None, help="problems per cell")
    args = parser.parse_args(argv)
    num_problems = args.problems or (300 if args.quick else 2000)
    t_start, cpu_start = time.perf_counter(), time.process_time()
    print(f"# selection benchmark: {num_problems} problems per cell; judges:")
    for judge in JUDGES:
        print(f"#   {judge.describe()}")
    print("# pass rate per problem ~ Beta(1.4, 2.1); accuracy = P(winner correct)")
    header = (
        f"{'judge':<11} {'N':>3} {'B':>3} | {'swiss':>6} {'halving':>7} {'random':>6} "
        f"{'all':>6} {'oracle':>6} {'chance':>6} | {'gap':>5} {'halv-swiss':>15} | "
        f"rounds swiss/halv/rand/all"
    )
    print(header)
    print("-" * len(header))
    goal_failures = []
    for judge in JUDGES:
        for n in SIZES:
            res = evaluate(judge, n, num_problems)
            mean = {k: statistics.fmean(v[0]) for k, v in res.items()}
            for m in BUDGET_MULTIPLIERS:
                b = m * n
                sw, hv, rp = (mean[(s, b)] for s in BUDGETED)
                al = mean[("all_pairs", None)]
                gap = (
                    (hv - sw) / (al - sw) if al - sw > 0.01 and not judge.label_blind else math.nan
                )
                diff, se = _paired_diff(res[("sequential_halving", b)][0], res[("swiss", b)][0])
                rounds = "/".join(
                    f"{res[k][1]:.0f}" for k in [(s, b) for s in BUDGETED] + [("all_pairs", None)]
                )
                print(
                    f"{judge.name:<11} {n:>3} {b:>3} | {sw:6.3f} {hv:7.3f} {rp:6.3f} {al:6.3f} "
                    f"{mean[('oracle', None)]:6.3f} {mean[('chance', None)]:6.3f} | "
                    f"{'  n/a' if math.isnan(gap) else f'{gap:5.2f}'} {diff:+7.3f} ±{se:5.3f} | "
                    f"{rounds}"
                )
                if m == 2 and not judge.label_blind and (gap < 0.5 or diff < -2 * se):
                    goal_failures.append(
                        f"{judge.name} N={n} B={b}: gap {gap:.2f}, diff {diff:+.3f}"
                    )
    print("\n# scheduling overhead, CPU ms per tournament (free judge), B = 2N (all pairs: all)")
    for schedule, n, budget, ms in scheduling_overhead(max(200, num_problems // 4)):
        print(f"  {schedule:<20} N={n:<3} B={budget:<4} {ms:6.3f} ms")
    verdict = "goal met" if not goal_failures else "goal NOT met: " + "; ".join(goal_failures)
    print(
        f"\n# goal at B=2N (close >= half the Swiss->all-pairs gap where it exceeds 0.01, never "
        f"below Swiss by more than 2 SE): {verdict}"
    )
    print(
        f"# wall time {time.perf_counter() - t_start:.0f} s, "
        f"CPU time {time.process_time() - cpu_start:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
