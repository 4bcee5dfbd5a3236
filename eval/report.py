"""Run outputs: records.jsonl, summary.json, report.md (the verdict beside the scores).

records.jsonl holds one line per candidate (label), per judge call (comparison or
pointwise score) and per selection; it is what the gate compares its replay against and
what `pairrl eval merge` concatenates.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pairrl.eval.gate import GateResult
from pairrl.eval.pipeline import EvalRun

__all__ = ["format_cost", "format_table", "write_records", "write_report", "write_summary"]


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
    """The summary.json document: verdict first, then the numbers."""
    return {
        "verdict": gate.verdict,
        "gate": gate.to_json(),
        **run.summary,
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
        "| judge tokens (prompt/completion) | tokens per task |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in summary.get("selectors", {}).items():
        cost = row["cost"]
        lines.append(
            f"| {name} | {_fmt(row['accuracy'])} | {_fmt(row['gap_closed'])} | "
            f"{_fmt(row['swing_accuracy'])} | {row['failed_tasks']} | {row['fallback_tasks']} | "
            f"{cost['judge_calls']} | {cost['failed_calls']} | {_tokens(cost)} | "
            f"{cost['tokens_per_task']:,.0f} |"
        )
    return "\n".join(lines)


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


def write_report(summary: dict[str, Any], path: Path, title: str) -> str:
    """report.md; returns its text. The verdict is printed before any score."""
    gate = summary["gate"]
    parts = [
        f"# {title}",
        "",
        f"**Integrity gate: {summary['verdict']}** (tolerance {gate['tolerance']:.1%})",
    ]
    parts += [f"- {reason}" for reason in gate["reasons"]]
    if "selectors" in summary:
        parts += [
            "",
            f"Tasks: {summary['num_tasks']}, k = {summary['k']}, candidates: "
            f"{summary['num_candidates']}, swing tasks (mixed labels): {summary['swing_tasks']}",
            "",
            f"- pass@1: {_fmt(summary['pass@1'])} %  (verdict: {summary['verdict']})",
            f"- oracle pass@k: {_fmt(summary['oracle'])} %",
            "",
            format_table(summary),
        ]
        sources = summary["selectors"].get("agreement", {}).get("input_sources")
        if sources:
            shown = ", ".join(f"{k}: {v}" for k, v in sorted(sources.items()))
            parts += ["", f"Agreement example inputs, tasks per source: {shown}"]
        parts += format_cost(summary)
    quality = summary.get("judge_quality") or {}
    if quality:
        parts += ["", "## Judge quality", "", "| judge | metric | value |", "|---|---|---|"]
        for judge, metrics in quality.items():
            for key, value in metrics.items():
                shown = f"{value:.3f}" if isinstance(value, float) else str(value)
                parts.append(f"| {judge} | {key} | {shown} |")
    if gate["stages"]:
        parts += [
            "",
            "## Gate stages",
            "",
            "| stage | expected | missing | failed |",
            "|---|---|---|---|",
        ]
        for stage, st in gate["stages"].items():
            parts.append(f"| {stage} | {st['expected']} | {st['missing']} | {st['failed']} |")
    text = "\n".join(parts) + "\n"
    path.write_text(text)
    return text
