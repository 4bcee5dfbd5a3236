"""Metric functions against hand-worked numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pairrl.eval.aggregate import summarise
from pairrl.eval.metrics import bootstrap_ci, gap_closed, pass_at_k
from pairrl.eval.selectors import Selection, select_first, select_oracle, select_random
from pairrl.rollout.judge_quality import auroc, balanced_accuracy, swap_consistency


def test_pass_at_k_hand_worked() -> None:
    # n=5, c=2, k=1: 2/5.
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    # n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10 = 0.7.
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    # n-c < k: every draw of 4 out of 5 with 2 correct has a correct one.
    assert pass_at_k(5, 2, 4) == 1.0
    assert pass_at_k(5, 0, 3) == 0.0
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


def test_gap_closed() -> None:
    # pass@1 0.2, oracle 0.6, selector 0.5: (0.5-0.2)/(0.6-0.2) = 0.75.
    assert gap_closed(0.5, 0.2, 0.6) == pytest.approx(0.75)
    # below pass@1 is a negative share, not clipped.
    assert gap_closed(0.1, 0.2, 0.6) == pytest.approx(-0.25)
    assert gap_closed(0.3, 0.3, 0.3) is None


def test_balanced_accuracy_and_auroc() -> None:
    actual = [True, True, False, False, False]
    predicted = [True, False, False, False, True]
    # TPR 1/2, TNR 2/3 -> (0.5 + 0.6667) / 2 = 0.58333.
    assert balanced_accuracy(predicted, actual) == pytest.approx(7 / 12)
    assert balanced_accuracy([True], [True]) is None
    # positives 0.9, 0.4; negatives 0.4, 0.1, 0.2. Pairs: 0.9 beats all 3; 0.4 ties one
    # (0.5) and beats two -> (3 + 2.5) / 6 = 0.91667.
    assert auroc([0.9, 0.4, 0.4, 0.1, 0.2], actual) == pytest.approx(5.5 / 6)
    assert auroc([0.5, 0.5], [True, True]) is None


def test_swap_consistency() -> None:
    assert swap_consistency([1, -1, 0, 1], [1, 1, 0, -1]) == pytest.approx(0.5)
    assert swap_consistency([], []) is None


def test_bootstrap_ci_brackets_mean_and_collapses_on_constant() -> None:
    x = np.array([0.0, 1.0] * 50)
    lo, hi = bootstrap_ci([x], lambda a: float(a.mean()), n_boot=500, seed=1)
    assert lo is not None and hi is not None
    assert lo < 0.5 < hi
    # Std error of a mean of 100 fair coins is 0.05, so the 95% interval is about +-0.1.
    assert 0.05 < hi - lo < 0.3
    assert bootstrap_ci([np.ones(10)], lambda a: float(a.mean()), n_boot=200) == (1.0, 1.0)


def test_basic_selectors() -> None:
    labels = [False, True, True, False]
    assert select_random("t", labels).score == pytest.approx(0.5)
    assert select_first("t", labels).score == 0.0
    oracle = select_oracle("t", labels)
    assert (oracle.chosen, oracle.score) == (1, 1.0)
    assert select_oracle("t", [False, False]).score == 0.0


def test_summarise_table() -> None:
    labels = {"a": [True, False], "b": [False, False], "c": [True, True], "d": [False, True]}
    # pass@1 = (0.5 + 0 + 1 + 0.5) / 4 = 0.5; oracle = 3/4; swing tasks a and d.
    sel = {
        "first": {t: select_first(t, v) for t, v in labels.items()},
        "oracle": {t: select_oracle(t, v) for t, v in labels.items()},
    }
    summary = summarise(labels, sel, n_boot=200)
    assert summary["pass@1"]["value"] == pytest.approx(0.5)
    assert summary["oracle"]["value"] == pytest.approx(0.75)
    assert summary["swing_tasks"] == 2
    first = summary["selectors"]["first"]
    # first picks: a 1, b 0, c 1, d 0 -> 0.5, gap closed 0; on swing tasks 1/2.
    assert first["accuracy"]["value"] == pytest.approx(0.5)
    assert first["gap_closed"]["value"] == pytest.approx(0.0)
    assert first["swing_accuracy"]["value"] == pytest.approx(0.5)
    assert summary["selectors"]["oracle"]["gap_closed"]["value"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="no selection"):
        summarise(labels, {"x": {"a": Selection("x", "a", 0, 1.0)}})
    assert not math.isnan(summary["pass@1"]["ci95"][0])


def test_pairwise_quality_hand_worked() -> None:
    from pairrl.rollout.judge_quality import pairwise_quality, pointwise_quality

    records = [
        # mixed pair, correct A rated higher: right.
        {"key": "k1", "ratings": [9, 2], "labels": [True, False]},
        # mixed pair, correct B tied with A: half right.
        {"key": "k2", "ratings": [5, 5], "labels": [False, True]},
        # the same judgement reused by another selector: counted once.
        {"key": "k1", "ratings": [9, 2], "labels": [True, False]},
        {"key": "k3", "ratings": None, "labels": [True, True]},
    ]
    swaps = [([9, 2], [3, 8]), ([6, 6], [7, 4]), ([5, 4], None)]
    q = pairwise_quality(records, swaps, foreign=[2.0, 7.0, None])
    # Side judgements: (9,T) (2,F) (5,F) (5,T); yes = r >= 5.5 -> only the 9.
    # TPR 1/2, TNR 2/2 -> balanced accuracy 0.75; yes-rate 1/4; true rate 2/4.
    assert q["balanced_accuracy"] == pytest.approx(0.75)
    assert q["yes_rate"] == pytest.approx(0.25) and q["true_correct_rate"] == pytest.approx(0.5)
    # AUROC: positives 9, 5 vs negatives 2, 5 -> 9 beats both (2), 5 beats 2 and ties 5
    # (1.5) -> 3.5 / 4.
    assert q["auroc"] == pytest.approx(0.875)
    assert q["mixed_pairs"] == 2 and q["mixed_pair_accuracy"] == pytest.approx(0.75)
    assert q["failed"] == 1
    # Swaps: first prefers x both times (consistent); second tie then prefers x (not).
    assert q["swap_pairs"] == 2 and q["swap_consistency"] == pytest.approx(0.5)
    assert q["foreign_checked"] == 2 and q["foreign_failed"] == 1
    assert q["foreign_reject_rate"] == pytest.approx(0.5)

    p = pointwise_quality(
        [
            {"p_correct": 0.9, "label": True},
            {"p_correct": 0.2, "label": False},
            {"p_correct": None, "label": False},
        ],
        foreign=[0.1],
    )
    assert p["balanced_accuracy"] == 1.0 and p["auroc"] == 1.0 and p["failed"] == 1
    assert p["foreign_reject_rate"] == 1.0


def test_selective_verification_skips_agreeing_and_confident_tasks() -> None:
    from pairrl.eval.config import EvalConfig
    from pairrl.eval.judge_controls import selective_rows
    from pairrl.eval.judge_selectors import JudgeOutcome
    from pairrl.eval.pipeline import EvalRun
    from pairrl.eval.selectors import Cost

    cfg = EvalConfig.model_validate(
        {"candidates": {"pool": "p"}, "selective": {"pointwise_confidence": 0.9}}
    )
    run = EvalRun(cfg, "compute", ["a", "b", "c"], {}, {}, {})
    run.selections["agreement"] = {
        "a": Selection("agreement", "a", 1, 1.0, detail={"num_clusters": 1}),
        "b": Selection("agreement", "b", 0, 0.0, detail={"num_clusters": 2}),
        "c": Selection("agreement", "c", 0, 0.0, detail={"num_clusters": 3}),
    }
    out = JudgeOutcome()
    out.selections["pointwise_ab"] = {
        t: Selection("pointwise_ab", t, 0, 0.0, cost=Cost(judge_calls=2), detail={"scores": s})
        for t, s in {"a": [0.5, 0.5], "b": [0.95, 0.97], "c": [0.2, 0.8]}.items()
    }
    out.selections["swiss_2n"] = {
        t: Selection("swiss_2n", t, 1, 1.0, cost=Cost(judge_calls=4)) for t in "abc"
    }
    out.selections.update(selective_rows(cfg, run, out.selections))
    sv = out.selections["swiss_2n+sv"]
    # a: one output cluster -> agreement's pick, no judge call at all.
    assert (sv["a"].chosen, sv["a"].cost.judge_calls, sv["a"].detail["skipped"]) == (
        1,
        0,
        "one output cluster",
    )
    # b: every P(correct) >= 0.9 -> the pointwise pick; only its 2 calls are charged.
    assert (sv["b"].cost.judge_calls, sv["b"].detail["skipped"]) == (2, "confident pointwise")
    # c: neither -> the tournament, charged pre-score + tournament = 2 + 4.
    assert (sv["c"].score, sv["c"].cost.judge_calls, sv["c"].detail["skipped"]) == (1.0, 6, None)
    assert "pointwise_ab+sv" not in out.selections
