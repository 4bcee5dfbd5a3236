"""Selection benchmark on simulated judges: Swiss vs sequential halving vs the evidence
ladder vs random pairing vs all pairs (and the oracle / chance references).

    OMP_NUM_THREADS=1 python3.11 selection.py --problems 2000 --seed-offset 10000  # report
    OMP_NUM_THREADS=1 python3.11 selection.py --problems 300                     # iterate

The simulated problems and judges (stated parameters) are described in selection_sim.py.
For each judge, N in {8, 16, 32} and budget B in {1N, 2N, 3N} it prints the selection
accuracy of every schedule (share of problems whose winner is correct; a problem with no
correct candidate is a miss for everyone, which is why the oracle is below 1), the share
of the Swiss -> all-pairs gap that halving and the ladder close (n/a where all pairs is
not at least 0.01 above Swiss, or for the label-blind judge), the paired difference
ladder - Swiss and halving - Swiss with its standard error (paired by problem: same
candidates, independent judge noise), and the rounds (batched judge calls) per
tournament. Then: the A-biased vs B-biased judge difference per schedule (paired by
problem), the scheduling overhead (CPU time per tournament with a judge that costs
nothing, i.e. the schedule's own work), and the check of the ladder's targets.

Problems are numbered seed_offset .. seed_offset + problems - 1: tune on one range (the
schedules were tuned on 0 .. 9999) and report on another (10000 .. 11999, the figures in
docs/experiments.md).
"""

from __future__ import annotations

import argparse
import json
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
    JudgeModel("q80-fail20", mixed_accuracy=0.8, failure_rate=0.2),
    JudgeModel("q80-posA", mixed_accuracy=0.8, position_bias=0.3, biased_position="A"),
    JudgeModel("q80-posB", mixed_accuracy=0.8, position_bias=0.3, biased_position="B"),
    JudgeModel("q80-expect", mixed_accuracy=0.8, expected_ratings=True),
    JudgeModel("q80-dead1", mixed_accuracy=0.8, dead_candidate=True),
    JudgeModel("blind", label_blind=True),
]
SIZES = (8, 16, 32)
BUDGET_MULTIPLIERS = (1, 2, 3)
BUDGETED = ("swiss", "sequential_halving", "ladder", "random_pairing")
SHORT = {
    "swiss": "swiss",
    "sequential_halving": "halv",
    "ladder": "ladder",
    "random_pairing": "rand",
    "all_pairs": "all",
}
CANDIDATE = "ladder"  # the schedule whose targets are checked
HEADLINE = ("q80", 16, 2)


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
    runs: list[tuple[str, int | None]] = [("all_pairs", None)]
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
            result = SCHEDULES[schedule](num_candidates, problem.judge_pairs, budget, seed=p)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 problems per cell")
    parser.add_argument("--problems", type=int, default=None, help="problems per cell")
    parser.add_argument("--seed-offset", type=int, default=0, help="first problem number")
    parser.add_argument("--judges", default=None, help="comma-separated judge names (default all)")
    parser.add_argument("--sizes", default=None, help="comma-separated N (default 8,16,32)")
    parser.add_argument("--json", default=None, help="also write every cell's numbers here")
    args = parser.parse_args(argv)
    num_problems = args.problems or (300 if args.quick else 2000)
    problems = range(args.seed_offset, args.seed_offset + num_problems)
    judges = [j for j in JUDGES if args.judges is None or j.name in args.judges.split(",")]
    sizes = tuple(int(x) for x in args.sizes.split(",")) if args.sizes else SIZES
    t_start, cpu_start = time.perf_counter(), time.process_time()
    print(
        f"# selection benchmark: {num_problems} problems per cell "
        f"(problems {problems.start}..{problems.stop - 1}); judges:"
    )
    for judge in judges:
        print(f"#   {judge.describe()}")
    print("# pass rate per problem ~ Beta(1.4, 2.1); accuracy = P(winner correct)")
    print("# every comparison's A/B order is a seeded coin flip (ratings mapped back)")
    header = (
        f"{'judge':<11} {'N':>3} {'B':>3} | {'swiss':>6} {'halv':>6} {'ladder':>6} {'rand':>6} "
        f"{'all':>6} {'oracle':>6} {'chance':>6} | {'gap:h':>5} {'gap:L':>5} | "
        f"{'ladder-swiss':>14} {'halv-swiss':>14} | rounds s/h/L/r/all"
    )
    print(header)
    print("-" * len(header))
    cells: list[dict] = []
    hits_by: dict[tuple[str, int, int, str], list[float]] = {}
    for judge in judges:
        for n in sizes:
            res = evaluate(judge, n, problems)
            mean = {k: statistics.fmean(v[0]) for k, v in res.items()}
            al = mean[("all_pairs", None)]
            for m in BUDGET_MULTIPLIERS:
                b = m * n
                acc = {s: mean[(s, b)] for s in BUDGETED}
                sw = acc["swiss"]
                gap_h = _gap(acc["sequential_halving"], sw, al, judge.label_blind)
                gap_l = _gap(acc["ladder"], sw, al, judge.label_blind)
                dl, sel = _paired_diff(res[("ladder", b)][0], res[("swiss", b)][0])
                dh, seh = _paired_diff(res[("sequential_halving", b)][0], res[("swiss", b)][0])
                rounds = {s: res[(s, b)][1] for s in BUDGETED}
                rounds["all_pairs"] = res[("all_pairs", None)][1]
                rtxt = "/".join(f"{rounds[s]:.0f}" for s in (*BUDGETED, "all_pairs"))
                print(
                    f"{judge.name:<11} {n:>3} {b:>3} | {sw:6.3f} {acc['sequential_halving']:6.3f} "
                    f"{acc['ladder']:6.3f} {acc['random_pairing']:6.3f} {al:6.3f} "
                    f"{mean[('oracle', None)]:6.3f} {mean[('chance', None)]:6.3f} | "
                    f"{_fmt_gap(gap_h)} {_fmt_gap(gap_l)} | {dl:+7.3f} ±{sel:5.3f} "
                    f"{dh:+7.3f} ±{seh:5.3f} | {rtxt}",
                    flush=True,
                )
                cells.append(
                    dict(
                        judge=judge.name,
                        n=n,
                        budget=b,
                        acc=acc,
                        all_pairs=al,
                        oracle=mean[("oracle", None)],
                        chance=mean[("chance", None)],
                        gap_halving=gap_h,
                        gap_ladder=gap_l,
                        ladder_minus_swiss=[dl, sel],
                        halving_minus_swiss=[dh, seh],
                        rounds=rounds,
                        blind=judge.label_blind,
                    )
                )
                for s in BUDGETED:
                    hits_by[(judge.name, n, b, s)] = res[(s, b)][0]
    # ------------------------------------------------------------- A- vs B-biased judge
    bias_rows = []
    if any(j.name == "q80-posA" for j in judges) and any(j.name == "q80-posB" for j in judges):
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
                    d, se = _paired_diff(
                        hits_by[("q80-posA", n, b, s)], hits_by[("q80-posB", n, b, s)]
                    )
                    parts.append(f"{d:+7.3f} ±{se:5.3f}")
                    bias_rows.append(dict(n=n, budget=b, schedule=s, diff=d, se=se))
                print(f"{n:>3} {b:>3} | " + " ".join(f"{p:>15}" for p in parts))
    # ---------------------------------------------------------------------- overhead
    print("\n# scheduling overhead, CPU ms per tournament (free judge), B = 2N (all pairs: all)")
    overhead = scheduling_overhead(max(200, num_problems // 4))
    for schedule, n, budget, ms in overhead:
        print(f"  {schedule:<20} N={n:<3} B={budget:<4} {ms:6.3f} ms")
    # ------------------------------------------------------------------- targets
    checks = []
    head = next((c for c in cells if (c["judge"], c["n"], c["budget"] // c["n"]) == HEADLINE), None)
    if head is not None:
        checks.append(
            (
                f"gap closed at q80 N=16 B=2N >= 0.9: {head['gap_ladder']:.2f}",
                head["gap_ladder"] >= 0.9,
            )
        )
    below = [c for c in cells if c["ladder_minus_swiss"][0] < -2 * c["ladder_minus_swiss"][1]]
    worst = min(
        cells, key=lambda c: c["ladder_minus_swiss"][0] / max(c["ladder_minus_swiss"][1], 1e-9)
    )
    checks.append(
        (
            f"never below Swiss by > 2 SE ({len(cells)} cells; worst "
            f"{worst['judge']} N={worst['n']} B={worst['budget']}: "
            f"{worst['ladder_minus_swiss'][0]:+.3f} ±{worst['ladder_minus_swiss'][1]:.3f})",
            not below,
        )
    )
    lad_bias = [r for r in bias_rows if r["schedule"] == CANDIDATE]
    if lad_bias:
        mx = max(lad_bias, key=lambda r: abs(r["diff"]))
        checks.append(
            (
                f"|acc(A-biased) - acc(B-biased)| <= 0.02 in every N, B (max "
                f"{mx['diff']:+.3f} at N={mx['n']} B={mx['budget']})",
                abs(mx["diff"]) <= 0.02,
            )
        )
    oh = next(ms for s, n, b, ms in overhead if s == CANDIDATE and n == 16)
    checks.append((f"overhead at N=16, B=2N < 1 ms: {oh:.3f} ms", oh < 1.0))
    print(f"\n# targets for '{CANDIDATE}':")
    for text, ok in checks:
        print(f"#   [{'ok' if ok else 'NOT MET'}] {text}")
    for c in below:
        print(
            f"#     below Swiss: {c['judge']} N={c['n']} B={c['budget']} "
            f"{c['ladder_minus_swiss'][0]:+.3f} ±{c['ladder_minus_swiss'][1]:.3f}"
        )
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
