"""The main job's paired intervals: read from the shared-pool runs' records, resampled by
held-out problem for both models together, against hand-worked cases."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from pairrl.recipes.comparison.intervals import PoolRecords, gain_intervals, read_pool_records
from pairrl.recipes.comparison.report import format_table
from pairrl.rollout.judge_quality import pairwise_quality


def _pool_run(folder: Path, ratings: list[float], swiss: list[float]) -> Path:
    """One shared-pool run: per task a mixed fixed pair (a correct, b wrong) rated
    ``ratings`` and Swiss's score; comparisons and candidates are ignored."""
    folder.mkdir(parents=True)
    rows = [{"kind": "candidate", "task_id": "t0"}]
    for i, score in enumerate(swiss):
        rows.append({"kind": "selection", "selector": "swiss_2n", "task_id": f"t{i}",
                     "chosen": 0, "score": score})  # fmt: skip
        rows.append({"kind": "selection", "selector": "random", "task_id": f"t{i}",
                     "chosen": 1, "score": 0.0})  # fmt: skip
        rows.append({"kind": "fixed_pair", "task_id": f"t{i}", "a": 0, "b": 1,
                     "ratings": ratings, "failure": None, "labels": [True, False],
                     "key": "same pair text"})  # fmt: skip
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_intervals_of_a_judge_right_everywhere_against_one_that_always_says_yes(
    tmp_path: Path,
) -> None:
    # own: 9 for the correct side (yes), 1 for the wrong (no): balanced accuracy 1.
    # other: 9 for both: true positive rate 1, true negative rate 0, balanced accuracy 0.5.
    # Every resample keeps both classes (each task holds one of each), so the gain is 50
    # points in each. Swiss: own 1, 1, 1, 0 against 0, 1, 1, 0: +25 points on average; a
    # resample's gain is 100 x (draws of task 0) / 4, between 0 and 100.
    own = read_pool_records(_pool_run(tmp_path / "own", [9, 1], [1, 1, 1, 0]), "swiss_2n")
    other = read_pool_records(_pool_run(tmp_path / "other", [9, 9], [0, 1, 1, 0]), "swiss_2n")
    assert own.swiss == {"t0": 1.0, "t1": 1.0, "t2": 1.0, "t3": 0.0}
    assert len(own.fixed["t0"]) == 1
    # a task drawn twice counts twice, although its judgements share one key
    assert own.balanced_accuracy(["t0", "t0"]) == 1.0
    ci = gain_intervals(own, other)
    assert ci["judge_balanced_accuracy_vs_grpo"] == [50.0, 50.0]
    lo, hi = ci["shared_pool_swiss_vs_grpo"]
    assert 0.0 <= lo < 25.0 < hi <= 100.0
    assert gain_intervals(own, own) == {
        "judge_balanced_accuracy_vs_grpo": [0.0, 0.0],
        "shared_pool_swiss_vs_grpo": [0.0, 0.0],
    }


def test_a_draws_balanced_accuracy_from_summed_counts_is_the_judge_quality_definition() -> None:
    # Random fixed pairs over 12 tasks, some judgements reused within a task (one key) and
    # some failed: for any draw of tasks, the counts summed per task give exactly (bit for
    # bit) what pairwise_quality gives on the drawn records, each draw's keys its own.
    rng = np.random.default_rng(7)
    fixed = {}
    for t in range(12):
        rows = []
        for _ in range(int(rng.integers(1, 5))):
            ratings = None if rng.random() < 0.15 else [int(r) for r in rng.integers(1, 11, 2)]
            rows.append({"key": f"k{int(rng.integers(0, 3))}", "ratings": ratings,
                         "labels": [bool(b) for b in rng.random(2) < 0.6]})  # fmt: skip
        fixed[f"t{t}"] = rows
    pool = PoolRecords({}, fixed)
    for _ in range(50):
        drawn = [f"t{i}" for i in rng.integers(0, 12, 12)]
        records = [{**r, "key": f"{d}:{r['key']}"} for d, t in enumerate(drawn) for r in fixed[t]]
        assert (
            pool.balanced_accuracy(drawn) == pairwise_quality(records, [], [])["balanced_accuracy"]
        )


def test_the_table_gives_each_gain_with_its_interval() -> None:
    model = {"solution_pass_rate": 0.9, "judge_balanced_accuracy": 0.8, "verdicts": {},
             "best_of_k": {"random": 0.9, "majority": 0.9, "swiss": 0.9, "oracle": 1.0},
             "shared_pool": {"random": 0.8, "swiss": 0.9, "oracle": 1.0}}  # fmt: skip
    gain = {"judge_balanced_accuracy_vs_grpo": 7.8, "shared_pool_swiss_vs_grpo": 7.5,
            "pass_rate_vs_grpo": -0.6,
            "ci95": {"judge_balanced_accuracy_vs_grpo": [2.8, 12.2],
                     "shared_pool_swiss_vs_grpo": [4.0, 11.5]}}  # fmt: skip
    summary = {"models": {"grpo": model, "pairrl": model}, "heldout": {"k": 8},
               "verification_gain": gain}  # fmt: skip
    assert (
        "judge balanced accuracy +7.8 points (95% CI +2.8 to +12.2), Swiss on the shared pool "
        "+7.5 points (95% CI +4.0 to +11.5); solution pass rate -0.6 points."
    ) in format_table(summary)


def test_a_number_measured_on_no_task_is_drawn_as_n_a_not_zero() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pairrl.recipes.comparison.report import _plot_heldout

    model = {"solution_pass_rate": 0.5, "judge_balanced_accuracy": None,
             "shared_pool": {"swiss": 0.75}, "best_of_k": {"swiss": None}}  # fmt: skip
    fig, ax = plt.subplots()
    _plot_heldout(ax, {"models": {"warm_start": model}, "heldout": {"problems": 2, "k": 4}})
    assert [t.get_text() for t in ax.texts].count("n/a") == 2
    assert [round(bar.get_height(), 2) for bar in ax.patches] == [0.5, 0.0, 0.75, 0.0]
    plt.close(fig)
