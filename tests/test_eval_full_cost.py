"""The full cost of selection: generation tokens beside judge tokens per selector, the
verification rate, prices for input, cached input and output tokens, the cost over the
no-verifier baseline, and the selective-verification threshold sweep, against numbers
worked by hand."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pairrl.eval.aggregate import summarise
from pairrl.eval.candidates import Candidate
from pairrl.eval.config import CostConfig, EvalConfig
from pairrl.eval.cost import full_cost, generation_tokens, price, selective_sweep
from pairrl.eval.gate import GateResult
from pairrl.eval.judge_controls import selective_rows
from pairrl.eval.pipeline import EvalRun
from pairrl.eval.selectors import Cost, Selection

LABELS = {"a": [True, False], "b": [False, True], "c": [True, True]}
# per task: (prompt tokens of each sample, completion tokens of each sample)
GENERATED = {"a": (1000, [100, 300]), "b": (2000, [200, 200]), "c": (500, [50, 150])}
PRICES = {"input_per_mtok": 2.0, "cached_input_per_mtok": 0.5, "output_per_mtok": 8.0}
POINTWISE = Cost(judge_calls=2, prompt_tokens=100)
SWISS = Cost(judge_calls=4, prompt_tokens=300, completion_tokens=20)


def _candidates() -> dict[str, list[Candidate]]:
    return {
        t: [
            Candidate(
                t, str(i), "x = 1", text="x = 1", meta={"prompt_tokens": p, "completion_tokens": n}
            )
            for i, n in enumerate(outs)
        ]
        for t, (p, outs) in GENERATED.items()
    }


def _selections() -> dict[str, dict[str, Selection]]:
    """agreement: one output cluster on c only; pointwise_ab: a rated [0.96, 0.97] (its
    pick, 1, is wrong), b [0.25, 0.1] (its pick, 0, is wrong), c [0.5, 0.5]; swiss_2n
    right everywhere."""
    scores = {"a": [0.96, 0.97], "b": [0.25, 0.1], "c": [0.5, 0.5]}
    picks = {"a": 1, "b": 0, "c": 0}
    return {
        "agreement": {
            t: Selection(
                "agreement", t, 0, float(v[0]), detail={"num_clusters": 1 if t == "c" else 2}
            )
            for t, v in LABELS.items()
        },
        "pointwise_ab": {
            t: Selection(
                "pointwise_ab",
                t,
                picks[t],
                float(v[picks[t]]),
                cost=POINTWISE,
                detail={"scores": scores[t]},
            )
            for t, v in LABELS.items()
        },
        "swiss_2n": {
            t: Selection("swiss_2n", t, v.index(True), 1.0, cost=SWISS) for t, v in LABELS.items()
        },
    }


def _run(tmp_path: Path, candidates: dict[str, list[Candidate]] | None = None) -> EvalRun:
    cfg = EvalConfig.model_validate(
        {
            "out_dir": str(tmp_path),
            "candidates": {"pool": "p", "k": 2},
            "selectors": ["agreement", "pointwise_ab", "swiss_2n"],
            "selective": {"pointwise_confidence": 0.9, "sweep": [0.7, 0.8, 0.99]},
            "cost": PRICES,
        }
    )
    labels = {
        t: [{"passed": x, "status": "pass" if x else "fail"} for x in v] for t, v in LABELS.items()
    }
    cands = _candidates() if candidates is None else candidates
    run = EvalRun(cfg, "compute", list(LABELS), cands, labels, _selections())
    run.selections.update(selective_rows(cfg, run, run.selections))  # as the pipeline does
    run.summary = summarise(LABELS, run.selections, n_boot=100)
    return run


def test_price_by_hand() -> None:
    prices = CostConfig(**PRICES)
    # (1,000 x 2 + 4,000 x 0.5 + 500 x 8) / 1e6 = 8,000 / 1e6
    assert price(prices, 1000, 4000, 500) == pytest.approx(0.008)
    # the defaults are relative units: every token 1 per million
    assert price(CostConfig(), 1000, 4000, 500) == pytest.approx(5500 / 1e6)


def test_generation_tokens_by_hand() -> None:
    gen = generation_tokens(_candidates())
    # a task's first sample reads its prompt; its second reuses it (cached input)
    assert gen == {
        "candidates": 6,
        "prompt_tokens": 1000 + 2000 + 500,
        "cached_prompt_tokens": 1000 + 2000 + 500,
        "completion_tokens": 100 + 300 + 200 + 200 + 50 + 150,
        "unmeasured_prompts": 0,
        "unmeasured_completions": 0,
    }


def test_tokens_that_were_not_counted_are_not_measured_never_zero() -> None:
    pool = {"a": [Candidate("a", "0", "x = 1"), Candidate("a", "1", "x = 2")]}
    gen = generation_tokens(pool)
    assert (gen["prompt_tokens"], gen["completion_tokens"]) == (None, None)
    assert (gen["unmeasured_prompts"], gen["unmeasured_completions"]) == (2, 2)
    # 0 tokens for a completion with text: a server that returned no token ids
    served = {
        "a": [
            Candidate("a", "0", "", text="", meta={"prompt_tokens": 7, "completion_tokens": 0}),
            Candidate("a", "1", "x", text="x", meta={"prompt_tokens": 7, "completion_tokens": 0}),
        ]
    }
    gen = generation_tokens(served)
    assert (gen["completion_tokens"], gen["unmeasured_completions"]) == (0, 1)
    assert (gen["prompt_tokens"], gen["cached_prompt_tokens"]) == (7, 7)
    rows = {
        "swiss_2n": {"cost": {"unmeasured_calls": 0, "prompt_tokens": 10, "completion_tokens": 2}}
    }
    full = full_cost(rows, gen, CostConfig())
    assert full["baseline_cost"] is None
    priced = full["selectors"]["swiss_2n"]
    assert priced["judge_cost"] == pytest.approx(12 / 1e6)
    assert (priced["cost"], priced["relative_cost"]) == (None, None)
    rows["swiss_2n"]["cost"]["unmeasured_calls"] = 1
    assert full_cost(rows, gen, CostConfig())["selectors"]["swiss_2n"]["judge_cost"] is None


def test_full_cost_and_verification_rate_by_hand(tmp_path: Path) -> None:
    from pairrl.eval.report import build_summary

    summary = build_summary(_run(tmp_path), GateResult("PASS", [], 0.0))
    full = summary["full_cost"]
    # generation: 3,500 input x 2 + 3,500 cached x 0.5 + 1,000 output x 8 = 16,750 per 1e6
    assert full["baseline_cost"] == pytest.approx(16750 / 1e6)
    swiss = full["selectors"]["swiss_2n"]
    # judge: 900 prompt x 2 + 60 output x 8 = 2,280 per 1e6 (judge prompts: no cache discount)
    assert swiss["judge_cost"] == pytest.approx(2280 / 1e6)
    assert swiss["cost"] == pytest.approx(19030 / 1e6)
    assert swiss["relative_cost"] == pytest.approx(19030 / 16750)
    assert full["selectors"]["agreement"]["relative_cost"] == pytest.approx(1.0)
    rows = summary["selectors"]
    # swiss_2n+sv at c = 0.9: c skipped (one cluster), a confident (pre-scores only),
    # b to the tournament: judged on a and b
    assert rows["swiss_2n+sv"]["cost"]["verified_tasks"] == 2
    assert rows["swiss_2n+sv"]["cost"]["verification_rate"] == pytest.approx(2 / 3)
    assert rows["swiss_2n"]["cost"]["verification_rate"] == 1.0
    assert rows["agreement"]["cost"]["verification_rate"] == 0.0


def test_sweep_replays_the_skip_rule_by_hand(tmp_path: Path) -> None:
    run = _run(tmp_path)
    gen_cost = 16750 / 1e6
    sweep = selective_sweep(run, gen_cost)
    assert sweep is not None and sweep["configured"] == 0.9 and sweep["axis"] == "judge_tokens"
    rows = {r["threshold"]: r for r in sweep["rows"]}
    assert sorted(rows) == [0.7, 0.8, 0.9, 0.99]
    # c = 0.7: a (min 0.96 >= 0.7) and b (max 0.25 <= 0.3) confident, c one cluster:
    # pointwise picks on a and b (both wrong), agreement's on c (right): 1/3, 2 x 100 tokens
    low = rows[0.7]
    assert (low["skipped_one_cluster"], low["skipped_confident"], low["to_tournament"]) == (1, 2, 0)
    point = low["selectors"]["swiss_2n+sv"]
    assert point["accuracy"] == pytest.approx(1 / 3)
    assert (point["judge_calls"], point["judge_tokens"]) == (4, 200)
    assert point["verification_rate"] == pytest.approx(2 / 3)
    # c = 0.8 and 0.9: b (max 0.25 > 0.2) goes to the tournament: 2/3, 100 + (100 + 320)
    for c in (0.8, 0.9):
        point = rows[c]["selectors"]["swiss_2n+sv"]
        assert rows[c]["to_tournament"] == 1
        assert (point["accuracy"], point["judge_tokens"]) == (pytest.approx(2 / 3), 520)
    # c = 0.99: a and b to the tournament, all right: 2 x (100 + 320) tokens
    high = rows[0.99]["selectors"]["swiss_2n+sv"]
    assert (high["accuracy"], high["judge_tokens"]) == (1.0, 840)
    # full cost: 800 prompt x 2 + 40 output x 8 = 1,920 per 1e6 over the generation's
    assert high["relative_cost"] == pytest.approx((16750 + 1920) / 16750)
    # the configured threshold gives the table's swiss_2n+sv row
    table = run.summary["selectors"]["swiss_2n+sv"]
    assert rows[0.9]["selectors"]["swiss_2n+sv"]["accuracy"] == table["accuracy"]["value"]
    assert rows[0.9]["selectors"]["swiss_2n+sv"]["judge_tokens"] == table["cost"]["judge_tokens"]


def test_no_sweep_without_a_confidence_to_vary(tmp_path: Path) -> None:
    run = _run(tmp_path)
    del run.selections["pointwise_ab"]
    assert selective_sweep(run, None) is None
    run = _run(tmp_path)
    run.config.selective.enabled = False
    assert selective_sweep(run, None) is None


def _report(tmp_path: Path, verdict: str, run: EvalRun | None = None) -> tuple[str, dict[str, Any]]:
    from pairrl.eval.runner import finish

    reasons = [] if verdict == "PASS" else ["a judge selector made no judge call"]
    outcome = finish(run or _run(tmp_path), GateResult(verdict, reasons, 0.0), tmp_path)
    return outcome.report_text, outcome.summary


def test_report_shows_generation_judge_tokens_cost_and_sweep(tmp_path: Path) -> None:
    from pairrl.eval.plots import plot_selective_sweep

    text, summary = _report(tmp_path, "PASS")
    assert "| tokens per task | verified % |" in text
    # swiss_2n+sv: 100 (a's pre-scores) + 420 (b's and its tournament) tokens over 3 tasks,
    # judged on 2 of them
    assert "| 173 | 66.7 |" in text
    assert "candidates (prompt / cached prompt / output" in text
    assert "3,500 / 3,500 / 1,000" in text
    assert "input 2, cached input 0.5, output 8" in text
    assert "costs 0.01675." in text
    assert "| swiss_2n | 3,500 / 3,500 / 1,000 | 960 (900/60) | 0.00228 | 0.01903 | x1.14 |" in text
    assert "| c | skipped: one cluster | skipped: confident | to tournament | swiss_2n+sv |" in text
    # c = 0.7: 200 prompt tokens x 2 = 400 per 1e6: (16,750 + 400) / 16,750 = 1.024
    assert "| 0.7 | 1 | 2 | 0 | 33.3 @ 200 (x1.02) |" in text
    # c = 0.9: 500 prompt x 2 + 20 output x 8 = 1,160: (16,750 + 1,160) / 16,750 = 1.069
    assert "| 0.9 (configured) | 1 | 1 | 1 | 66.7 @ 520 (x1.07) |" in text
    png = plot_selective_sweep(summary, tmp_path / "sweep.png", "sweep")
    assert png is not None and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (
        plot_selective_sweep({**summary, "selective_sweep": None}, tmp_path / "x.png", "") is None
    )


def test_a_pool_reports_generation_as_not_measured(tmp_path: Path) -> None:
    pool = {t: [Candidate(t, str(i), "x = 1") for i in range(2)] for t in LABELS}
    text, summary = _report(tmp_path, "PASS", _run(tmp_path, pool))
    assert summary["full_cost"]["generation"]["completion_tokens"] is None
    assert "output; every selector's, as all pick among them): not measured." in text
    assert "| swiss_2n | not measured | 960 (900/60) | 0.00228 | n/a | n/a |" in text


def test_a_failed_run_shows_no_cost_score(tmp_path: Path) -> None:
    text, summary = _report(tmp_path, "FAIL")
    after = text.split("No score is reported")[1]
    for hidden in ("Full cost", "Selective verification thresholds", "%", "accuracy"):
        assert hidden not in after, hidden
    assert summary["full_cost"]["baseline_cost"] == pytest.approx(16750 / 1e6)  # diagnosis


def test_tiny_cpu_config_reports_split_tokens_and_verification_rate(
    eval_cli: Callable[..., tuple[int, str]],
    repo_root: Path,
    shared_data_dir: Path,
    tiny_model_dir: Path,
    tmp_path: Path,
) -> None:
    """``pairrl eval configs/eval_tiny_cpu.yaml`` with the tiny model built here."""
    code, output = eval_cli(
        [
            str(repo_root / "configs" / "eval_tiny_cpu.yaml"),
            "--no-progress",
            "--set",
            f"candidates.model={tiny_model_dir}",
            "--set",
            f"tasks.path={shared_data_dir / 'mbpp_sanitized.json'}",
            "--set",
            f"out_dir={tmp_path / 'run'}",
        ]
    )
    assert code == 0, output
    assert "## Accuracy by difficulty" in output
    assert "easy at 66.7 % or more, hard at 33.3 % or less, medium between" in output
    assert "| verified % |" in output and "| 100.0 |" in output
    assert "## Full cost" in output and "Generation tokens of the 9 candidates" in output
    assert "## Selective verification thresholds" in output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert sum(summary["difficulty"]["tasks"].values()) == 3
    rows = summary["selectors"]
    assert rows["swiss_2n"]["cost"]["verification_rate"] == 1.0
    assert rows["agreement"]["cost"]["verification_rate"] == 0.0
    assert summary["full_cost"]["selectors"]["swiss_2n"]["judge_cost"] > 0
    assert summary["full_cost"]["generation"]["candidates"] == 9
    generation = summary["full_cost"]["generation"]
    assert generation["completion_tokens"] > 0 and generation["prompt_tokens"] > 0
    assert (tmp_path / "run" / "selective_sweep.png").is_file() or not summary.get(
        "selective_sweep", {}
    ).get("rows")
