"""Selection benchmark on simulated judges: Swiss vs sequential halving vs rated halving
vs the evidence ladder vs random pairing vs all pairs (and the oracle / chance references).

    OMP_NUM_THREADS=1 python3.11 selection.py --problems 2000 --seed-offset 10000  # report
    OMP_NUM_THREADS=1 python3.11 selection.py --problems 300                     # iterate

The simulated problems and judges (stated parameters) are described in selection_sim.py.
For each judge, N in {8, 16, 32} and budget B in {1N, 2N, 3N} it prints the selection
accuracy of every schedule (share of problems whose winner is correct; a problem with no
correct candidate is a miss for everyone, which is why the oracle is below 1), two
all-pairs references (every pair once, picked by mu as the paper does, and by the rating
model of rated halving), the share of the Swiss -> all-pairs gap that halving, the ladder
and rated halving close (n/a where all pairs is not at least 0.01 above Swiss, or for the
label-blind judge), the same for rated halving against all pairs with its own pick, the
paired difference rated halving - Swiss with its standard error (paired by problem: same
candidates, independent judge noise), and the rounds (batched judge calls) per
tournament. Then: the A-biased vs B-biased judge difference per schedule (paired by
problem), the scheduling overhead (CPU time per tournament with a judge that costs
nothing, i.e. the schedule's own work), and the check of the chosen schedule's targets.

Problems are numbered seed_offset .. seed_offset + problems - 1: tune on one range (the
schedules were tuned on 0 .. 9999) and report on another (10000 .. 11999, the figures in
docs/experiments.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from selection_sim import JudgeModel, make_problem

from pairrl.rollout.schedule_registry import SCHEDULES
from pairrl.rollout.strengths import rating_strengths
from pairrl.rollout.tournament import all_pairs_tournament

JUDGES = [
    JudgeModel("q70", mixed_accuracy=0.7),
    JudgeModel("q80", mixed_accuracy=0.8),
    JudgeModel("q90", mixed_accuracy=0.9),
    JudgeModel("q80-sticky", mixed_accuracy=0.8, persistent_share=0.4),
    JudgeModel("q80-fail10", mixed_accuracy=0.8, failure_rate=0.1),
    JudgeModel("q80-fail20", mixed_accuracy=0.8, failure_rate=0.2),
    JudgeModel("q80-posA", mixed_accuracy=0.8, position_bias=0.3, biased_position="A"),
    JudgeModel("q80-posB", mixed_accuracy=0.8, position_bias=0.3, biased_position="B"),
    JudgeModel("q80-expect", mixed_accuracy=0.8, expected_ratings=True),
    JudgeModel("q80-dead1", mixed_accuracy=0.8, dead_candidate=True),
    JudgeModel("q80-pair1", mixed_accuracy=0.8, pair_effect=1.0),
    JudgeModel("q80-pair2", mixed_accuracy=0.8, pair_effect=2.0),
    JudgeModel("blind", label_blind=True),
]
SIZES = (8, 16, 32)
BUDGET_MULTIPLIERS = (1, 2, 3)
BUDGETED = ("swiss", "sequential_halving", "rated_halving", "ladder", "random_pairing")
REFERENCES = ("all_pairs", "all_pairs_rated")
SHORT = {
    "swiss": "swiss",
    "sequential_halving": "halv",
    "rated_halving": "rated",
    "ladder": "ladder",
    "random_pairing": "rand",
    "all_pairs": "all",
    "all_pairs_rated": "all:r",
}
CANDIDATE = "rated_halving"  # the schedule whose targets are checked (the project's default)
HEADLINE = ("q80", 16, 2)


def all_pairs_rated(num_candidates: int, judge_pairs, budget=None, *, seed: int = 0):
    """Every pair once, picked by rated halving's rating model instead of mu."""
    res = all_pairs_tournament(num_candidates, judge_pairs, budget, seed=seed)
    rated = [(c.a, c.b, *c.ratings) for c in res.comparisons if c.ratings is not None]
    level = rating_strengths(num_candidates, rated)
    has = [i for i in range(num_candidates) if res.degree[i]]
    winner = max(has, key=lambda i: (level[i], -i)) if has else None
    return dataclasses.replace(res, schedule="all_pairs_rated", winner=winner)


RUNNERS = {**SCHEDULES, "all_pairs_rated": all_pairs_rated}


def _problem_seed(num_candidates: int, p: int) -> int:
    return 1_000_003 * p + num_candidates


def _judge_seed(num_candidates: int, p: int, schedule: str, budget: int) -> int:
    return zlib.crc32(f"{num_candidates}/{p}/{schedule}/{budget}".encode())


def evaluate(
    judge: JudgeModel, num_candidates: int, problems: range
) -> dict[tuple[str, int | None], tuple[list[float], float]]:
    """Per (schedule, budget): per-problem hits (1 if the winner is correct) and mean rounds.
    Keys ("oracle", None), ("chance", None) and ("all_pairs", None) hold the references."""
    out: dict[tuple[str, int | None], tuple[list[float], float]] = {}
    labels = [
        make_problem(judge, num_candidates, _problem_seed(num_candidates, p), 0).labels
        for p in problems
    ]
    out[("oracle", None)] = ([float(any(y)) for y in labels], 0.0)
    # chance = a uniformly random pick: its expected accuracy is the share correct
    out[("chance", None)] = ([sum(y) / len(y) for y in labels], 0.0)
    runs: list[tuple[str, int | None]] = [(r, None) for r in REFERENCES]
    runs += [(s, m * num_candidates) for m in BUDGET_MULTIPLIERS for s in BUDGETED]
    for schedule, budget in runs:
        hits: list[float] = []
        rounds = 0
        for p in problems:
            problem = make_problem(
                judge,
                num_candidates,
                _problem_seed(num_candidates, p),
                _judge_seed(num_candidates, p, schedule, budget or 0),
            )
            result = RUNNERS[schedule](num_candidates, problem.judge_pairs, budget, seed=p)
            if result.num_comparisons > (budget if budget is not None else math.inf):
                raise AssertionError(f"{schedule} exceeded budget {budget}")
            if problem.calls != result.rounds:
                raise AssertionError(
                    f"{schedule}: {problem.calls} calls for {result.rounds} rounds"
                )
            hits.append(float(result.winner is not None and problem.labels[result.winner]))
            rounds += result.rounds
        out[(schedule, budget)] = (hits, rounds / len(problems))
    return out


def _paired_diff(a: list[float], b: list[float]) -> tuple[float, float]:
    d = [x - y for x, y in zip(a, b, strict=True)]
    return statistics.fmean(d), statistics.pstdev(d) / math.sqrt(len(d))


def _gap(x: float, swiss: float, all_pairs: float, blind: bool) -> float:
    return (x - swiss) / (all_pairs - swiss) if all_pairs - swiss > 0.01 and not blind else math.nan


def _fmt_gap(g: float) -> str:
    return "  n/a" if math.isnan(g) else f"{g:5.2f}"


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


GAPPED = ("sequential_halving", "ladder", CANDIDATE)
"""Schedules whose share of the Swiss -> all-pairs gap closed is printed."""


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 problems per cell")
    parser.add_argument("--problems", type=int, default=None, help="problems per cell")
    parser.add_argument("--seed-offset", type=int, default=0, help="first problem number")
    parser.add_argument("--judges", default=None, help="comma-separated judge names (default all)")
    parser.add_argument("--sizes", default=None, help="comma-separated N (default 8,16,32)")
    parser.add_argument("--json", default=None, help="also write every cell's numbers here")
    return parser.parse_args(argv)


def _print_preamble(num_problems: int, problems: range, judges: list[JudgeModel]) -> None:
    print(
        f"# selection benchmark: {num_problems} problems per cell "
        f"(problems {problems.start}..{problems.stop - 1}); judges:"
    )
    for judge in judges:
        print(f"#   {judge.describe()}")
    print("# pass rate per problem ~ Beta(1.4, 2.1); accuracy = P(winner correct)")
    print("# every comparison's A/B order is a seeded coin flip (ratings mapped back)")
    header = (
        f"{'judge':<11} {'N':>3} {'B':>3} | "
        + " ".join(f"{SHORT[s]:>6}" for s in (*BUDGETED, *REFERENCES))
        + f" {'oracle':>6} {'chance':>6} | "
        + " ".join(f"{'gap:' + SHORT[s][:1]:>5}" for s in GAPPED)
        + f" {'gap:r*':>6} | {SHORT[CANDIDATE] + '-swiss':>14} | rounds "
        + "/".join(SHORT[s] for s in (*BUDGETED, "all_pairs"))
    )
    print(header)
    print("-" * len(header))


def _cell(judge: JudgeModel, n: int, b: int, res: dict, mean: dict) -> dict:
    """One (judge, N, B) cell of the accuracy table: printed, and returned as a dict."""
    ref = {r: mean[(r, None)] for r in REFERENCES}
    acc = {s: mean[(s, b)] for s in BUDGETED}
    sw = acc["swiss"]
    blind = judge.label_blind
    gaps = {s: _gap(acc[s], sw, ref["all_pairs"], blind) for s in GAPPED}
    own_gap = _gap(acc[CANDIDATE], sw, ref["all_pairs_rated"], blind)
    diff, se = _paired_diff(res[(CANDIDATE, b)][0], res[("swiss", b)][0])
    rounds = {s: res[(s, b)][1] for s in BUDGETED}
    rounds["all_pairs"] = res[("all_pairs", None)][1]
    rtxt = "/".join(f"{rounds[s]:.0f}" for s in (*BUDGETED, "all_pairs"))
    print(
        f"{judge.name:<11} {n:>3} {b:>3} | "
        + " ".join(f"{x:6.3f}" for x in (*acc.values(), *ref.values()))
        + f" {mean[('oracle', None)]:6.3f} {mean[('chance', None)]:6.3f} | "
        + " ".join(_fmt_gap(gaps[s]) for s in GAPPED)
        + f"  {_fmt_gap(own_gap)} | {diff:+7.3f} ±{se:5.3f} | {rtxt}",
        flush=True,
    )
    return dict(
        judge=judge.name,
        n=n,
        budget=b,
        acc=acc,
        references=ref,
        oracle=mean[("oracle", None)],
        chance=mean[("chance", None)],
        gaps=gaps,
        gap_against_own_pick=own_gap,
        candidate_minus_swiss=[diff, se],
        rounds=rounds,
        blind=blind,
    )


def accuracy_table(
    judges: list[JudgeModel], sizes: tuple[int, ...], problems: range
) -> tuple[list[dict], dict[tuple[str, int, int, str], list[float]]]:
    """Every (judge, N, B) cell, printed; the cells and per-problem hits by
    (judge, N, B, schedule)."""
    cells: list[dict] = []
    hits_by: dict[tuple[str, int, int, str], list[float]] = {}
    for judge in judges:
        for n in sizes:
            res = evaluate(judge, n, problems)
            mean = {k: statistics.fmean(v[0]) for k, v in res.items()}
            for m in BUDGET_MULTIPLIERS:
                b = m * n
                cells.append(_cell(judge, n, b, res, mean))
                for s in BUDGETED:
                    hits_by[(judge.name, n, b, s)] = res[(s, b)][0]
    return cells, hits_by


def position_bias_table(
    judges: list[JudgeModel],
    sizes: tuple[int, ...],
    hits_by: dict[tuple[str, int, int, str], list[float]],
) -> list[dict]:
    """A-biased minus B-biased judge accuracy per schedule, printed (when both judges ran)."""
    bias_rows: list[dict] = []
    names = {j.name for j in judges}
    if not {"q80-posA", "q80-posB"} <= names:
        return bias_rows
    print(
        "\n# position bias: accuracy with the A-biased minus the B-biased judge "
        "(same problems; paired SE)"
    )
    print(f"{'N':>3} {'B':>3} | " + " ".join(f"{SHORT[s]:>15}" for s in BUDGETED))
    for n in sizes:
        for m in BUDGET_MULTIPLIERS:
            b = m * n
            parts = []
            for s in BUDGETED:
                d, se = _paired_diff(hits_by[("q80-posA", n, b, s)], hits_by[("q80-posB", n, b, s)])
                parts.append(f"{d:+7.3f} ±{se:5.3f}")
                bias_rows.append(dict(n=n, budget=b, schedule=s, diff=d, se=se))
            print(f"{n:>3} {b:>3} | " + " ".join(f"{p:>15}" for p in parts))
    return bias_rows


def _print_overhead(num_problems: int) -> list[tuple[str, int, int, float]]:
    print("\n# scheduling overhead, CPU ms per tournament (free judge), B = 2N (all pairs: all)")
    overhead = scheduling_overhead(max(200, num_problems // 4))
    for schedule, n, budget, ms in overhead:
        print(f"  {schedule:<20} N={n:<3} B={budget:<4} {ms:6.3f} ms")
    return overhead


def target_checks(
    cells: list[dict], bias_rows: list[dict], overhead: list[tuple[str, int, int, float]]
) -> tuple[list[tuple[str, bool]], list[dict]]:
    """The chosen schedule's targets as (text, met), and the cells where it is below Swiss
    by more than 2 SE."""
    checks = []
    head = next((c for c in cells if (c["judge"], c["n"], c["budget"] // c["n"]) == HEADLINE), None)
    if head is not None:
        checks.append(
            (
                f"gap closed at q80 N=16 B=2N >= 0.9: {head['gaps'][CANDIDATE]:.2f} "
                f"(against all pairs with its own pick: {head['gap_against_own_pick']:.2f})",
                head["gaps"][CANDIDATE] >= 0.9,
            )
        )
    informative = [c for c in cells if not c["blind"]]
    below = [
        c for c in informative if c["candidate_minus_swiss"][0] < -2 * c["candidate_minus_swiss"][1]
    ]
    worst = min(
        informative,
        key=lambda c: c["candidate_minus_swiss"][0] / max(c["candidate_minus_swiss"][1], 1e-9),
    )
    checks.append(
        (
            f"never below Swiss by > 2 SE ({len(informative)} cells with an informative judge; "
            f"worst {worst['judge']} N={worst['n']} B={worst['budget']}: "
            f"{worst['candidate_minus_swiss'][0]:+.3f} ±{worst['candidate_minus_swiss'][1]:.3f})",
            not below,
        )
    )
    checks += _bias_and_overhead_checks(bias_rows, overhead)
    return checks, below


def _bias_and_overhead_checks(
    bias_rows: list[dict], overhead: list[tuple[str, int, int, float]]
) -> list[tuple[str, bool]]:
    checks = []
    cand_bias = [r for r in bias_rows if r["schedule"] == CANDIDATE]
    if cand_bias:
        mx = max(cand_bias, key=lambda r: abs(r["diff"]))
        checks.append(
            (
                f"|acc(A-biased) - acc(B-biased)| <= 0.02 in every N, B (max "
                f"{mx['diff']:+.3f} at N={mx['n']} B={mx['budget']})",
                abs(mx["diff"]) <= 0.02,
            )
        )
    oh = next(ms for s, n, b, ms in overhead if s == CANDIDATE and n == 16)
    checks.append((f"overhead at N=16, B=2N < 1 ms: {oh:.3f} ms", oh < 1.0))
    return checks


def _print_targets(checks: list[tuple[str, bool]], below: list[dict]) -> None:
    print(f"\n# targets for '{CANDIDATE}':")
    for text, ok in checks:
        print(f"#   [{'ok' if ok else 'NOT MET'}] {text}")
    for c in below:
        print(
            f"#     below Swiss: {c['judge']} N={c['n']} B={c['budget']} "
            f"{c['candidate_minus_swiss'][0]:+.3f} ±{c['candidate_minus_swiss'][1]:.3f}"
        )


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    num_problems = args.problems or (300 if args.quick else 2000)
    problems = range(args.seed_offset, args.seed_offset + num_problems)
    judges = [j for j in JUDGES if args.judges is None or j.name in args.judges.split(",")]
    sizes = tuple(int(x) for x in args.sizes.split(",")) if args.sizes else SIZES
    t_start, cpu_start = time.perf_counter(), time.process_time()
    _print_preamble(num_problems, problems, judges)
    cells, hits_by = accuracy_table(judges, sizes, problems)
    bias_rows = position_bias_table(judges, sizes, hits_by)
    overhead = _print_overhead(num_problems)
    checks, below = target_checks(cells, bias_rows, overhead)
    _print_targets(checks, below)
    print(
        f"# wall time {time.perf_counter() - t_start:.0f} s, "
        f"CPU time {time.process_time() - cpu_start:.0f} s"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                dict(
                    problems=[problems.start, problems.stop],
                    cells=cells,
                    bias=bias_rows,
                    overhead=overhead,
                    checks=checks,
                ),
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
