"""Run the benchmark end to end: pipeline -> records -> gate -> summary, report, plots.

`run_eval` is what `pairrl eval` calls; `regate` re-checks a finished run from its
folder (after a crash, a merge or an edit of the cache) and rewrites its verdict.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pairrl.eval.candidates import write_candidates
from pairrl.eval.config import EvalConfig
from pairrl.eval.gate import GateResult, check_run, read_reported_selections
from pairrl.eval.pipeline import EvalRun, run_pipeline
from pairrl.eval.report import build_summary, write_records, write_report, write_summary

__all__ = ["EvalOutcome", "finish", "load_run_config", "regate", "run_eval"]


@dataclass
class EvalOutcome:
    """What a run produced: the summary (with the verdict) and the gate's result."""

    summary: dict[str, Any]
    gate: GateResult
    out_dir: Path
    report_text: str


@contextmanager
def rich_progress(
    enabled: bool = True, prefix: str = ""
) -> Iterator[Callable[[str, int], Callable[[int], None]]]:
    """A progress reporter: `reporter(stage, total)` opens a bar named ``prefix + stage``
    (``pairrl.progress``, with its ETA) and returns its `advance(n)`; one display for all."""
    if not enabled:
        yield lambda _stage, _total: lambda _n: None
        return
    from pairrl.progress import bar, board

    opened = []

    def reporter(stage: str, total: int) -> Callable[[int], None]:
        opened.append(bar(prefix + stage, total))
        return opened[-1].advance

    with board():
        try:
            yield reporter
        finally:
            for stage_bar in opened:
                stage_bar.close()


def load_run_config(out_dir: Path) -> EvalConfig:
    """The resolved config a run saved in its folder."""
    from pairrl.errors import InputError

    path = out_dir / "config.json"
    if not path.is_file():
        raise InputError(f"{path}: file not found; is {out_dir} a pairrl eval output folder?")
    return EvalConfig.model_validate(json.loads(path.read_text()))


def run_eval(cfg: EvalConfig, show_progress: bool = True) -> EvalOutcome:
    """Compute (resuming from the cache), write records, gate, and write every report."""
    out_dir = Path(cfg.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(cfg.model_dump_json(indent=2) + "\n")
    with rich_progress(show_progress, f"{out_dir.name}: ") as reporter:
        run = run_pipeline(cfg, "compute", reporter)
    write_records(run, out_dir / "records.jsonl")
    # The candidates in the executor's schema, so `pairrl execute` can re-label them.
    write_candidates(
        out_dir / "candidates.jsonl", [c for t in run.task_ids for c in run.candidates[t]]
    )
    return regate(cfg, computed=run)


def regate(cfg: EvalConfig, computed: EvalRun | None = None) -> EvalOutcome:
    """Replay from the cache, compare with records.jsonl, and (re)write the reports.

    The numbers reported are the computed run's when given (the gate has checked that the
    replay reproduces them), else the replay's own.
    """
    out_dir = Path(cfg.out_dir)
    replay = run_pipeline(cfg, "replay")
    records = out_dir / "records.jsonl"
    reported = read_reported_selections(records) if records.is_file() else None
    gate = check_run(replay, reported, cfg.gate.tolerance)
    if reported is None:
        gate.reasons.append(f"{records} is missing: nothing reported to check")
        gate.verdict = "FAIL"
    return finish(computed or replay, gate, out_dir)


def finish(run: EvalRun, gate: GateResult, out_dir: Path) -> EvalOutcome:
    """Write summary.json, report.md and the PNGs (selectors, cost, judge quality); log to
    W&B when enabled."""
    summary = build_summary(run, gate)
    write_summary(summary, out_dir / "summary.json")
    title = _title(run.config)
    text = write_report(summary, out_dir / "report.md", title)
    if "selectors" in summary:
        from pairrl.eval.plots import plot_cost, plot_judge_quality, plot_selectors

        plot_selectors(summary, out_dir / "selectors.png", title)
        plot_cost(summary, out_dir / "cost.png", f"{title}: accuracy against judge cost")
        plot_judge_quality(
            run.judge_quality, out_dir / "judge_quality.png", f"{title}: judge quality"
        )
    if run.config.wandb.enabled:
        from pairrl.eval.wandb_log import log_to_wandb

        log_to_wandb(run.config, summary, out_dir)
    return EvalOutcome(summary, gate, out_dir, text)


def _title(cfg: EvalConfig) -> str:
    src = cfg.candidates
    where = {"pool": src.pool, "model": src.model, "endpoint": src.endpoint}[src.source]
    name = Path(str(where)).name if src.source != "endpoint" else str(where)
    return f"best-of-{src.k} on {Path(cfg.tasks.path).name if cfg.tasks.path else 'pool tasks'} ({name})"
