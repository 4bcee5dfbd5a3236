"""Run outputs: records.jsonl, summary.json, report.md (the verdict before any score).

records.jsonl holds one line per candidate (label), per judge call (comparison or
pointwise score) and per selection; it is what the gate compares its replay against and
what `pairrl eval merge` concatenates.

A run the gate FAILs has no score: its report.md (and what the command prints) holds the
reasons and the failure counts, never an accuracy; its numbers stay in summary.json for
diagnosis, under ``"verdict": "FAIL"`` and a ``verdict_note`` saying they are not results.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pairrl.eval.aggregate import run_breakdowns
from pairrl.eval.config import JUDGE_SELECTORS
from pairrl.eval.gate import GateResult
from pairrl.eval.pipeline import EvalRun
from pairrl.eval.rsa import rsa_report_lines
from pairrl.eval.thinking import thinking_report_lines

__all__ = [
    "FAILED_RUN_NOTE",
    "build_summary",
    "format_cost",
    "format_table",
    "write_records",
    "write_report",
    "write_summary",
]

FAILED_RUN_NOTE = (
    "the integrity gate FAILed: the numbers in this file are kept for diagnosis and are not results"
)
# Read-outs that read log-probabilities, and so are refused below judge.min_rating_mass.
_FLOORED_POINTWISE: tuple[str, ...] = ("pointwise_ab", "pointwise_think")
_SWEEP_COLUMNS = ("c", "skipped: one cluster", "skipped: confident", "to tournament")


def write_records(run: EvalRun, path: Path) -> None:
    """One JSON line per candidate, judge call and selection."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        for tid in run.task_ids:
            for cand, lab in zip(run.candidates[tid], run.labels[tid], strict=True):
                row: dict[str, Any] = {
                    "kind": "candidate",
                    "task_id": tid,
                    "candidate_id": cand.candidate_id,
                    "code": cand.code,
                    "sample_error": cand.error,
                    "label": lab,
                }
                handle.write(json.dumps(row) + "\n")
        for rec in run.judge_records:
            handle.write(json.dumps(rec) + "\n")
        for per_task in run.selections.values():
            for tid in run.task_ids:
                handle.write(json.dumps(per_task[tid].to_json()) + "\n")


def build_summary(run: EvalRun, gate: GateResult) -> dict[str, Any]:
    """The summary.json document: verdict first (with a note when it is FAIL), then the
    numbers."""
    note = {} if gate.passed else {"verdict_note": FAILED_RUN_NOTE}
    return {
        "verdict": gate.verdict,
        **note,
        "gate": gate.to_json(),
        **run.summary,
        **run_breakdowns(run),
        "judge_quality": run.judge_quality,
        "wall_s": {k: round(v, 3) for k, v in run.wall_s.items()},
        "config": run.config.model_dump(),
    }


def write_summary(summary: dict[str, Any], path: Path) -> None:
    """summary.json."""
    path.write_text(json.dumps(summary, indent=2, default=str) + "\n")


def _fmt(entry: dict[str, Any] | None, pct: bool = True) -> str:
    if not entry or entry.get("value") is None:
        return "n/a"
    scale = 100.0 if pct else 1.0
    value = entry["value"] * scale
    lo, hi = entry.get("ci95", [None, None])
    if lo is None or hi is None:
        return f"{value:.1f}"
    return f"{value:.1f} [{lo * scale:.1f}, {hi * scale:.1f}]"


def _percent(entry: dict[str, Any] | None) -> str:
    """A headline figure in %, or n/a."""
    shown = _fmt(entry)
    return shown if shown == "n/a" else f"{shown} %"


def _tokens(cost: dict[str, Any]) -> str:
    text = f"{cost['judge_tokens']:,} ({cost['prompt_tokens']:,}/{cost['completion_tokens']:,})"
    if cost.get("unmeasured_calls"):
        text += f" + {cost['unmeasured_calls']} calls not counted"
    return text


def format_table(summary: dict[str, Any]) -> str:
    """The markdown table of selectors (accuracy in %, 95% bootstrap CIs over tasks)."""
    lines = [
        "| selector | accuracy % [95% CI] | gap closed % [95% CI] | swing acc % [95% CI] "
        "| failed tasks | fallbacks | judge calls | failed calls "
        "| judge tokens (prompt/completion) | tokens per task | verified % |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in summary.get("selectors", {}).items():
        cost = row["cost"]
        lines.append(
            f"| {name} | {_fmt(row['accuracy'])} | {_fmt(row['gap_closed'])} | "
            f"{_fmt(row['swing_accuracy'])} | {row['failed_tasks']} | {row['fallback_tasks']} | "
            f"{cost['judge_calls']} | {cost['failed_calls']} | {_tokens(cost)} | "
            f"{cost['tokens_per_task']:,.0f} | {_share(cost.get('verification_rate'))} |"
        )
    return "\n".join(lines)


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def _fewer(saved: int) -> str:
    return "fewer" if saved >= 0 else "more"


def format_cost(summary: dict[str, Any]) -> list[str]:
    """The report's cost lines: the frontier (cheapest first) and selective savings."""
    cost, rows = summary.get("cost"), summary.get("selectors", {})
    if not cost or not cost["frontier"]:
        return []
    axis = cost["axis"].replace("_", " ")
    steps = [
        f"{n} ({rows[n]['cost'][cost['axis']]:,} {axis}, {_fmt(rows[n]['accuracy'])} %)"
        for n in cost["frontier"]
    ]
    lines = [
        "## Cost",
        "",
        f"Cheapest selector for each accuracy (by {axis}; each more accurate than every "
        f"cheaper one): {' -> '.join(steps)}",
    ]
    if cost["axis"] != "judge_tokens":
        lines.append(
            f"({cost['unmeasured_calls']} judge calls have no token count, so the frontier is "
            "by judge calls)"
        )
    for name, saved in cost["selective_savings"].items():
        tokens, calls = saved["tokens_saved"], saved["calls_saved"]
        share = "" if saved["share_saved"] is None else f" ({abs(saved['share_saved']):.1%})"
        change = saved["accuracy_change"]
        shown = "n/a" if change is None else f"{100 * change:+.1f} points"
        why = "" if tokens >= 0 else " (its pointwise pre-scores cost more than they skipped)"
        lines.append(
            f"- {name}: {abs(tokens):,} judge tokens{share} {_fewer(tokens)} and {abs(calls)} "
            f"calls {_fewer(calls)} than {saved['base']}{why}; accuracy {shown}"
        )
    return ["", *lines]


def _count(value: int | None, unmeasured: int) -> str:
    """A token count, with how many candidates went uncounted; "not measured" when none was."""
    if value is None:
        return "not measured"
    return f"{value:,}" + (f" + {unmeasured} candidates not counted" if unmeasured else "")


def _price(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def _times(value: float | None) -> str:
    return "n/a" if value is None else f"x{value:.2f}"


def _full_cost_lines(summary: dict[str, Any]) -> list[str]:
    """The report's full cost: generation and judge tokens per selector, priced, and the
    cost over the no-verifier baseline (``pairrl.eval.cost``)."""
    full, rows = summary.get("full_cost"), summary.get("selectors", {})
    if not full or not rows:
        return []
    gen, prices = full["generation"], full["prices"]
    generated = (
        f"{_count(gen['prompt_tokens'], gen['unmeasured_prompts'])} / "
        f"{_count(gen['cached_prompt_tokens'], gen['unmeasured_prompts'])} / "
        f"{_count(gen['completion_tokens'], gen['unmeasured_completions'])}"
        if gen["prompt_tokens"] is not None or gen["completion_tokens"] is not None
        else "not measured"
    )
    lines = [
        "",
        "## Full cost",
        "",
        f"Generation tokens of the {gen['candidates']} candidates (prompt / cached prompt / "
        f"output; every selector's, as all pick among them): {generated}. Prices per million "
        f"tokens (config `cost`): input {prices['input_per_mtok']:g}, cached input "
        f"{prices['cached_input_per_mtok']:g}, output {prices['output_per_mtok']:g}. Cached "
        "input is a task's prompt reused by its other k-1 samples; judge prompts are priced "
        "as uncached input (the prefix their calls share is not measured). The no-verifier "
        f"baseline (the candidates, no judge call) costs {_price(full['baseline_cost'])}.",
        "",
        "| selector | generation tokens (prompt/cached/output) "
        "| judge tokens (prompt/completion) | judge cost | cost | cost vs no verifier |",
        "|---|---|---|---|---|---|",
    ]
    for name, priced in full["selectors"].items():
        lines.append(
            f"| {name} | {generated} | {_tokens(rows[name]['cost'])} | "
            f"{_price(priced['judge_cost'])} | {_price(priced['cost'])} | "
            f"{_times(priced['relative_cost'])} |"
        )
    return lines


def _sweep_lines(summary: dict[str, Any]) -> list[str]:
    """The selective-verification thresholds: each ``X+sv`` row's accuracy and cost at
    every swept pointwise confidence."""
    sweep = summary.get("selective_sweep")
    if not sweep or not sweep["rows"]:
        return []
    names, axis = list(sweep["rows"][0]["selectors"]), sweep["axis"]
    lines = [
        "",
        "## Selective verification thresholds",
        "",
        "Each X+sv row replayed from this run's judgements (no new judge call) at pointwise "
        "confidence c: the tournament does not judge a task whose candidates agree, or whose "
        f"every pointwise P(correct) is >= c or <= 1-c (configured: c = {sweep['configured']:g};"
        f" {sweep['tasks']} tasks). Cells: accuracy % @ {axis.replace('_', ' ')} (full cost vs "
        "no verifier).",
        "",
        f"| {' | '.join([*_SWEEP_COLUMNS, *names])} |",
        "|" + "---|" * (len(_SWEEP_COLUMNS) + len(names)),
    ]
    for row in sweep["rows"]:
        mark = " (configured)" if row["threshold"] == sweep["configured"] else ""
        points = [row["selectors"][n] for n in names]
        cells = " | ".join(
            f"{_share(p['accuracy'])} @ {p[axis]:,} ({_times(p['relative_cost'])})" for p in points
        )
        lines.append(
            f"| {row['threshold']:g}{mark} | {row['skipped_one_cluster']} | "
            f"{row['skipped_confident']} | {row['to_tournament']} | {cells} |"
        )
    return lines


def _difficulty_lines(summary: dict[str, Any]) -> list[str]:
    """Each selector's accuracy on easy, medium and hard tasks, with the thresholds."""
    split = summary.get("difficulty")
    if not split or not split["selectors"]:
        return []
    buckets, tasks = ("easy", "medium", "hard"), split["tasks"]
    unknown = tasks["unmeasured"]
    lines = [
        "",
        "## Accuracy by difficulty",
        "",
        "A task's difficulty is its pass rate, the share of its k candidates that pass: easy "
        f"at {100 * split['easy_at']:.1f} % or more, hard at {100 * split['hard_at']:.1f} % "
        "or less, medium between (config `difficulty`)."
        + (f" {unknown} tasks with an unmeasured label are in no bucket." if unknown else ""),
        "",
        "| selector | " + " | ".join(f"{b}: {tasks[b]} tasks, % [95% CI]" for b in buckets) + " |",
        "|---|---|---|---|",
    ]
    for name, row in split["selectors"].items():
        cells = [_fmt(row[b]["accuracy"]) + _failed(row[b]["failed_tasks"]) for b in buckets]
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return lines


def _failed(count: int) -> str:
    return f" ({count} failed)" if count else ""


def write_report(summary: dict[str, Any], path: Path, title: str) -> str:
    """report.md; returns its text. The verdict comes first; a FAIL shows its reasons and
    failure counts and no score."""
    gate = summary["gate"]
    parts = [
        f"# {title}",
        "",
        f"**Integrity gate: {summary['verdict']}** (tolerance {gate['tolerance']:.1%})",
    ]
    parts += [f"- {reason}" for reason in gate["reasons"]]
    parts += _floor_note(summary.get("config"))
    from pairrl.rollout.samplers.call_budget import describe_remote

    remote = describe_remote(summary.get("remote"))  # retries, timeouts, the deadline
    parts += ["", remote] if remote else []
    if summary["verdict"] == "PASS":
        parts += _scores(summary)
    else:
        parts += _failures(summary)
    parts += _gate_stages(gate["stages"])
    text = "\n".join(parts) + "\n"
    path.write_text(text)
    return text


def _floor_note(cfg: dict[str, Any] | None) -> list[str]:
    """A line saying that log-probability read-outs had no floor, when that is so."""
    if not cfg or cfg["judge"]["min_rating_mass"] > 0:
        return []
    floored = cfg["judge"]["readout"] != "sampled" or any(
        s in _FLOORED_POINTWISE for s in cfg["selectors"]
    )
    if not floored or not any(s in JUDGE_SELECTORS for s in cfg["selectors"]):
        return []
    return [
        "",
        "Judge read-out floor off (judge.min_rating_mass = 0): ratings and A/B answers were "
        "read however little probability the judge put on them; the judge quality "
        "says whether they mean anything.",
    ]


def _scores(summary: dict[str, Any]) -> list[str]:
    """The scores of a run that PASSed: headline, table, cost and judge quality."""
    parts: list[str] = []
    if "selectors" in summary:
        parts += [
            "",
            f"Tasks: {summary['num_tasks']}, k = {summary['k']}, candidates: "
            f"{summary['num_candidates']}, swing tasks (mixed labels): {summary['swing_tasks']}",
            "",
            f"- pass@1: {_percent(summary['pass@1'])}  (verdict: {summary['verdict']})",
            f"- oracle pass@k: {_percent(summary['oracle'])}",
            "",
            format_table(summary),
        ]
        sources = summary["selectors"].get("agreement", {}).get("input_sources")
        if sources:
            shown = ", ".join(f"{k}: {v}" for k, v in sorted(sources.items()))
            parts += ["", f"Agreement example inputs, tasks per source: {shown}"]
        parts += format_cost(summary)
        parts += _full_cost_lines(summary)
        parts += _sweep_lines(summary)
        parts += _difficulty_lines(summary)
        parts += rsa_report_lines(summary)
        parts += thinking_report_lines(summary)
    quality = summary.get("judge_quality") or {}
    if quality:
        parts += ["", "## Judge quality", "", "| judge | metric | value |", "|---|---|---|"]
        for judge, metrics in quality.items():
            for key, value in metrics.items():
                shown = f"{value:.3f}" if isinstance(value, float) else str(value)
                parts.append(f"| {judge} | {key} | {shown} |")
    return parts


def _failures(summary: dict[str, Any]) -> list[str]:
    """What a FAILed run shows instead of scores: where tasks and judge calls failed."""
    parts = [
        "",
        "No score is reported: a run the gate FAILs has no result. Its numbers are kept, "
        "marked FAIL, in summary.json for diagnosis.",
    ]
    rows = summary.get("selectors", {})
    if rows:
        parts += [
            "",
            "## Failures by selector",
            "",
            "| selector | failed tasks | judge calls | failed calls | first failure |",
            "|---|---|---|---|---|",
        ]
        for name, row in rows.items():
            example = next(iter(row.get("failure_examples", {}).items()), None)
            shown = f"task {example[0]}: {example[1]}"[:200] if example else ""
            parts.append(
                f"| {name} | {row['failed_tasks']} of {summary['num_tasks']} | "
                f"{row['cost']['judge_calls']} | {row['cost']['failed_calls']} | "
                f"{shown.replace('|', '/')} |"
            )
    return parts


def _gate_stages(stages: dict[str, dict[str, Any]]) -> list[str]:
    """The gate's per-stage counts."""
    if not stages:
        return []
    parts = [
        "",
        "## Gate stages",
        "",
        "| stage | expected | missing | failed |",
        "|---|---|---|---|",
    ]
    for stage, st in stages.items():
        parts.append(f"| {stage} | {st['expected']} | {st['missing']} | {st['failed']} |")
    return parts
