"""Cost accounting: judge calls and tokens per selector beside its accuracy, the frontier
of cheapest selectors, selective verification's savings, the report lines and cost.png,
against numbers worked by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from pairrl.eval.aggregate import summarise
from pairrl.eval.cost import cheapest_reaching, cost_frontier, cost_summary
from pairrl.eval.selectors import Cost, Selection

LABELS = {"a": [True, False], "b": [False, True]}


def _rows(name: str, scores: tuple[float, float], *costs: Cost) -> dict[str, Selection]:
    per_task = costs or (Cost(), Cost())
    return {
        t: Selection(name, t, 0, s, cost=c)
        for t, s, c in zip(LABELS, scores, per_task, strict=True)
    }


def _selections() -> dict[str, dict[str, Selection]]:
    point = Cost(judge_calls=2, prompt_tokens=100)
    swiss = Cost(judge_calls=4, prompt_tokens=300, completion_tokens=50)
    pair = Cost(judge_calls=1, prompt_tokens=300, completion_tokens=50)
    return {
        "random": _rows("random", (0.5, 0.5)),
        "first": _rows("first", (1.0, 0.0)),
        "oracle": _rows("oracle", (1.0, 1.0)),
        "pointwise_ab": _rows("pointwise_ab", (1.0, 0.0), point, point),
        "swiss_2n": _rows("swiss_2n", (1.0, 1.0), swiss, swiss),
        "all_pairs": _rows("all_pairs", (1.0, 1.0), pair, pair),
        # task a skipped (its candidates agreed); task b paid the pre-score and the tournament
        "swiss_2n+sv": _rows(
            "swiss_2n+sv",
            (1.0, 1.0),
            Cost(),
            Cost(judge_calls=6, prompt_tokens=400, completion_tokens=50),
        ),
    }


def test_frontier_and_cheapest_by_hand() -> None:
    points = {
        "random": (0, 0.5),
        "first": (0, 0.5),
        "pointwise_ab": (200, 0.5),
        "swiss_2n+sv": (450, 1.0),
        "swiss_2n": (700, 1.0),
        "all_pairs": (700, 1.0),
    }
    assert cost_frontier(points) == ["random", "swiss_2n+sv"]
    assert cheapest_reaching(points, 0.5) == "random"
    assert cheapest_reaching(points, 0.75) == "swiss_2n+sv"
    assert cheapest_reaching(points, 1.01) is None
    assert cost_frontier({"x": (10, 0.2), "y": (5, 0.1), "z": (10, 0.3)}) == ["y", "z"]


def test_summary_reports_tokens_per_selector_and_the_savings() -> None:
    summary = summarise(LABELS, _selections(), n_boot=100)
    swiss = summary["selectors"]["swiss_2n"]["cost"]
    assert (swiss["judge_calls"], swiss["judge_tokens"], swiss["tokens_per_task"]) == (8, 700, 350)
    assert swiss["prompt_tokens"] == 600 and swiss["completion_tokens"] == 100
    assert summary["selectors"]["pointwise_ab"]["cost"]["judge_tokens"] == 200
    cost = summary["cost"]
    assert cost["axis"] == "judge_tokens" and cost["unmeasured_calls"] == 0
    # oracle reads the labels: never on the frontier, though it is free and always right.
    assert cost["frontier"] == ["random", "swiss_2n+sv"]
    saved = cost["selective_savings"]["swiss_2n+sv"]
    # swiss_2n: 2 x 350 = 700 tokens, 8 calls; +sv: 450 tokens, 6 calls; both 100% right.
    assert saved == {
        "base": "swiss_2n",
        "tokens_saved": 250,
        "share_saved": pytest.approx(250 / 700),
        "calls_saved": 2,
        "accuracy_change": 0.0,
    }


def test_uncounted_tokens_put_the_frontier_on_calls() -> None:
    rows = {
        "first": _rows("first", (1.0, 0.0)),
        "swiss_2n": _rows(
            "swiss_2n", (1.0, 1.0), Cost(judge_calls=4, unmeasured_calls=4), Cost(judge_calls=4)
        ),
    }
    summary = summarise(LABELS, rows, n_boot=100)
    assert summary["selectors"]["swiss_2n"]["cost"]["unmeasured_calls"] == 4
    assert summary["cost"]["axis"] == "judge_calls"
    assert summary["cost"]["frontier"] == ["first", "swiss_2n"]
    assert cost_summary(summary["selectors"])["unmeasured_calls"] == 4


def test_cost_of_counts_unmeasured_calls() -> None:
    from pairrl.eval.judge_cache import Verdict
    from pairrl.eval.tournament_selectors import cost_of

    verdicts = [
        Verdict("k1", [9.0, 2.0], None, prompt_tokens=10, completion_tokens=5),
        Verdict("k2", [5.0, 5.0], None),  # tokens not counted (HTTP without usage)
        Verdict("k3", None, "unparseable", prompt_tokens=7, completion_tokens=0),
        Verdict("k4", None, "missing from cache", missing=True),
    ]
    cost = cost_of(verdicts)
    assert (cost.judge_calls, cost.failed_calls) == (4, 2)
    assert (cost.prompt_tokens, cost.completion_tokens, cost.unmeasured_calls) == (17, 5, 1)


def test_report_and_plot_show_the_cost(tmp_path: Path) -> None:
    from pairrl.eval.config import EvalConfig
    from pairrl.eval.gate import GateResult
    from pairrl.eval.pipeline import EvalRun
    from pairrl.eval.runner import finish

    cfg = EvalConfig.model_validate({"out_dir": str(tmp_path), "candidates": {"pool": "p"}})
    run = EvalRun(cfg, "compute", list(LABELS), {}, {}, _selections())
    run.summary = summarise(LABELS, run.selections, n_boot=100)
    text = finish(run, GateResult("PASS", [], 0.0), tmp_path).report_text
    assert "| swiss_2n | 100.0 [100.0, 100.0] |" in text
    assert "| 8 | 0 | 700 (600/100) | 350 |" in text
    assert (
        "by judge tokens; each more accurate than every cheaper one): random (0 judge tokens, "
        "50.0 [50.0, 50.0] %) -> swiss_2n+sv (450 judge tokens, 100.0 [100.0, 100.0] %)"
    ) in text
    assert "- swiss_2n+sv: 250 judge tokens (35.7%) fewer and 2 calls fewer than swiss_2n" in text
    png = tmp_path / "cost.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
