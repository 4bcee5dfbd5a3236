"""Run the benchmark end to end: pipeline -> records -> gate -> summary, report, plots.

`run_eval` is what `pairrl eval` calls; `regate` re-checks a finished run from its
folder (after a crash, a merge or an edit of the cache) and rewrites its verdict.
A run the gate FAILs gets no plot and no score in its report or in W&B; its numbers stay
in summary.json, marked FAIL (``pairrl.eval.report``).

Before the pipeline spends its budget, `preflight` makes a few real calls through the
same cache (``preflight`` in the config): the first task's samples, and a few judge calls
of each read-out the selectors use. When every call of one of these checks fails, the run
stops there, FAILed with the reasons and what to change, having spent nothing else. All
remote calls of a run (preflight included) share one deadline, ``remote.deadline_s``
(``pairrl.rollout.samplers.call_budget``); what they cost, retries and time lost to
failures included, is summary.json's ``remote`` and one line of the report.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pairrl.eval.candidates import write_candidates
from pairrl.eval.config import JUDGE_SELECTORS, EvalConfig
from pairrl.eval.gate import GateResult, check_run, read_reported_selections
from pairrl.eval.pipeline import EvalRun, run_pipeline
from pairrl.eval.report import build_summary, write_records, write_report, write_summary

__all__ = [
    "PLOTS",
    "EvalOutcome",
    "PreflightCheck",
    "finish",
    "judge_change",
    "load_run_config",
    "preflight",
    "regate",
    "run_eval",
]

PLOTS: tuple[str, ...] = ("selectors.png", "cost.png", "selective_sweep.png", "judge_quality.png")


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
    """Check the models it names, run the preflight, compute (resuming from the cache),
    write records, gate, and write every report."""
    from pairrl.eval.sampling import check_model_sources
    from pairrl.memory import return_freed_memory
    from pairrl.rollout.samplers.call_budget import remote_call_budget

    check_model_sources(cfg)  # a model that is not there is an error before anything runs
    out_dir = Path(cfg.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(cfg.model_dump_json(indent=2) + "\n")
    with (
        remote_call_budget(cfg.remote.deadline_s) as budget,
        rich_progress(show_progress, f"{out_dir.name}: ") as reporter,
    ):
        checks = preflight(cfg, reporter) if cfg.preflight.enabled else []
        stopped = any(check.failed_all for check in checks)
        run = None if stopped else run_pipeline(cfg, "compute", reporter)
    return_freed_memory()  # the run's models and batches are gone: their pages go back now
    if run is None:
        return _stopped_by_preflight(cfg, checks, budget.summary())
    run.remote = budget.summary()
    run.preflight = _preflight_json(cfg, checks)
    write_records(run, out_dir / "records.jsonl")
    # The candidates in the executor's schema, so `pairrl execute` can re-label them.
    write_candidates(
        out_dir / "candidates.jsonl", [c for t in run.task_ids for c in run.candidates[t]]
    )
    return regate(cfg, computed=run)


def regate(
    cfg: EvalConfig, computed: EvalRun | None = None, remote: dict[str, Any] | None = None
) -> EvalOutcome:
    """Replay from the cache, compare with records.jsonl, and (re)write the reports.

    The numbers reported are the computed run's when given (the gate has checked that the
    replay reproduces them), else the replay's own. A replay makes no remote call: it
    reports ``remote`` (the merged shards' figures) when given, else the figures of the
    run that wrote OUT_DIR.
    """
    out_dir = Path(cfg.out_dir)
    replay = run_pipeline(cfg, "replay")
    if computed is None:  # a replay makes no call: the run's own figures stay
        replay.remote = remote if remote is not None else _earlier(out_dir, "remote")
        replay.preflight = _earlier(out_dir, "preflight")
    records = out_dir / "records.jsonl"
    reported = read_reported_selections(records) if records.is_file() else None
    gate = check_run(replay, reported, cfg.gate.tolerance)
    if reported is None:
        gate.reasons.append(f"{records} is missing: nothing reported to check")
        gate.verdict = "FAIL"
    return finish(computed or replay, gate, out_dir)


def finish(run: EvalRun, gate: GateResult, out_dir: Path) -> EvalOutcome:
    """Write summary.json, report.md and, for a PASS, the PNGs (selectors, cost, judge
    quality); log to W&B when enabled (a FAIL: the verdict and its reasons only)."""
    summary = build_summary(run, gate)
    summary.update(remote=run.remote, preflight=run.preflight)
    write_summary(summary, out_dir / "summary.json")
    title = _title(run.config)
    text = write_report(summary, out_dir / "report.md", title)
    if gate.passed and "selectors" in summary:
        from pairrl.eval.plots import (
            plot_cost,
            plot_judge_quality,
            plot_selective_sweep,
            plot_selectors,
        )

        plot_selectors(summary, out_dir / "selectors.png", title)
        plot_cost(summary, out_dir / "cost.png", f"{title}: accuracy against judge cost")
        sweep_title = f"{title}: selective verification thresholds"
        plot_selective_sweep(summary, out_dir / "selective_sweep.png", sweep_title)
        plot_judge_quality(
            run.judge_quality, out_dir / "judge_quality.png", f"{title}: judge quality"
        )
    elif not gate.passed:
        for name in PLOTS:  # an earlier verdict's charts would show scores this run lacks
            (out_dir / name).unlink(missing_ok=True)
    if run.config.wandb.enabled:
        from pairrl.eval.wandb_log import log_to_wandb

        logged = summary if gate.passed else {k: summary[k] for k in ("verdict", "gate")}
        log_to_wandb(run.config, logged, out_dir)
    return EvalOutcome(summary, gate, out_dir, text)


def _title(cfg: EvalConfig) -> str:
    src = cfg.candidates
    where = {"pool": src.pool, "model": src.model, "endpoint": src.endpoint}[src.source]
    name = Path(str(where)).name if src.source != "endpoint" else str(where)
    if cfg.tasks.path:
        tasks = Path(cfg.tasks.path).name
    elif src.source == "pool":  # its own tests (a recipe then gives only its prompts)
        tasks = "the pool's tasks"
    else:
        tasks = f"the held-out tasks of {cfg.recipe.name if cfg.recipe else 'the recipe'}"
    return f"best-of-{src.k} on {tasks} ({name})"


def _earlier(out_dir: Path, key: str) -> dict[str, Any]:
    """``key`` of the summary.json a run already wrote in ``out_dir`` (empty if none)."""
    try:
        found = json.loads((out_dir / "summary.json").read_text()).get(key)
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


# ---- preflight: a few real calls before the budget ---------------------------------------

Reporter = Callable[[str, int], Callable[[int], None]]


@dataclass
class PreflightCheck:
    """One preflight check (the samples, or one judge read-out): its calls, how many
    failed, the first failure and what to change."""

    name: str
    calls: int
    failed: int
    reason: str | None = None
    change: str | None = None
    unit: str = "calls"

    @property
    def failed_all(self) -> bool:
        """Every call failed: the run would spend its budget on failures."""
        return self.calls > 0 and self.failed == self.calls

    def describe(self) -> str:
        """One line: what failed, why, and what to change."""
        return (
            f"preflight {self.name}: {self.failed} of {self.calls} {self.unit} failed "
            f"({self.reason}); change: {self.change}"
        )


def preflight(cfg: EvalConfig, progress: Reporter) -> list[PreflightCheck]:
    """The checks of ``PreflightConfig``: the samples of the first task that still needs
    them (source model or endpoint), then ``preflight.judge_calls`` calls of each judge
    read-out the selectors use, on that task's candidates; all through the run's cache."""
    from pairrl.eval.sampling import sample_candidates
    from pairrl.eval.sources import load_candidates_and_tasks

    judged = [s for s in cfg.selectors if s in JUDGE_SELECTORS]
    if cfg.rsa.enabled and cfg.rsa.selector not in judged:  # RSA + V1 judges too
        judged.append(cfg.rsa.selector)
    if cfg.candidates.source == "pool" and not judged:
        return []  # nothing remote to check
    cache_dir = Path(cfg.cache_dir) if cfg.cache_dir else Path(cfg.out_dir) / "cache"
    # replay reads the cache and calls nothing: the tasks, and which still need sampling
    tasks, cands, issues = load_candidates_and_tasks(cfg, cache_dir, "replay", _no_bars)
    unsampled = [i.task_id for i in issues if i.stage == "samples"]
    have = {c.task_id for c in cands}
    with_cands = [t for t in tasks if t in have]
    first = (unsampled or list(tasks)) if cfg.candidates.source != "pool" else with_cands
    if not first:
        return []  # no task: the gate says so
    task_id, checks = first[0], []
    if cfg.candidates.source == "pool":
        own = [c for c in cands if c.task_id == task_id]
    else:
        bars = _prefixed(progress, "preflight ")
        own, _ = sample_candidates(cfg, [tasks[task_id]], cache_dir, "compute", bars)
        checks.append(_sample_check(cfg, task_id, own))
    usable = [c for c in own if c.error is None]
    if judged and usable:
        checks += _judge_checks(cfg, cache_dir, tasks, task_id, usable, judged)
    return checks


def _no_bars(_stage: str, _total: int) -> Callable[[int], None]:
    return lambda _n: None


def _prefixed(progress: Reporter, prefix: str) -> Reporter:
    """``progress`` with its bars named ``prefix + stage``."""
    return lambda stage, total: progress(prefix + stage, total)


def _sample_check(cfg: EvalConfig, task_id: str, own: list[Any]) -> PreflightCheck:
    errors = [c.error for c in own if c.error is not None]
    check = PreflightCheck(f"samples (task {task_id})", len(own), len(errors), unit="samples")
    if errors:
        src = cfg.candidates
        check.reason = errors[0]
        if errors[0].startswith("deadline"):
            check.change = "raise remote.deadline_s"
        elif src.source == "endpoint":
            check.change = (
                f"check that {src.endpoint} is up and serves candidates.served_model="
                f"{src.served_model!r}; candidates.http sets its timeouts and retries"
            )
        else:
            check.change = f"check candidates.model ({src.model}) and candidates.engine"
    return check


def _judge_checks(
    cfg: EvalConfig,
    cache_dir: Path,
    tasks: dict[str, Any],
    task_id: str,
    usable: list[Any],
    judged: list[str],
) -> list[PreflightCheck]:
    """``preflight.judge_calls`` judge calls per read-out, through the judge's cache."""
    from pairrl.eval.judge_controls import POINTWISE_SELECTORS
    from pairrl.eval.judge_selectors import build_judge, judge_solution

    judge = build_judge(cfg, cache_dir, "compute", list(tasks.values()))
    task, n = tasks[task_id], cfg.preflight.judge_calls
    sols = [judge_solution(c, task) for c in usable]
    readout = f"judge.readout={cfg.judge.readout}"
    checks = []
    try:
        if any(s not in POINTWISE_SELECTORS for s in judged) and len(sols) > 1:
            # (0, 1) then its swap, and so on: the pairs all_pairs, fixed_pairs and the
            # swap control ask first, so the run finds them in the cache
            pairs = [p for a in range(0, len(sols) - 1, 2) for p in ((a, a + 1), (a + 1, a))]
            verdicts = judge.pairwise([(task, sols[a], sols[b]) for a, b in pairs[:n]])
            checks.append(_judge_check(cfg, f"pairwise ({readout})", verdicts, judge.identity))
        for name in [s for s in judged if s in POINTWISE_SELECTORS]:
            mode = POINTWISE_SELECTORS[name]
            verdicts = judge.pointwise(mode, [(task, s) for s in sols[:n]])
            shown = f"{name} ({readout})" if mode == "rating" else name
            checks.append(_judge_check(cfg, shown, verdicts, judge.identity))
    finally:
        close = getattr(judge.sampler, "close", None)
        if callable(close):
            close()
    return checks


def _judge_check(cfg: EvalConfig, name: str, verdicts: list[Any], where: str) -> PreflightCheck:
    failures = [v.failure or "missing" for v in verdicts if not v.ok]
    check = PreflightCheck(name, len(verdicts), len(failures))
    if failures:
        check.reason, check.change = failures[0], judge_change(cfg, failures[0], where)
    return check


def judge_change(cfg: EvalConfig, reason: str, where: str) -> str:
    """What to change for a judge call that failed with ``reason`` (judge ``where``)."""
    from pairrl.eval.judge_cache import is_infra_failure

    j = cfg.judge
    if "deadline" in reason:
        return "raise remote.deadline_s"
    if is_infra_failure(reason):
        return (
            f"check that the judge ({where}) is up and answers; judge.http sets its "
            "timeouts and retries"
        )
    if reason.startswith("truncated"):
        return (
            f"raise judge.max_tokens (now {j.max_tokens}): every reply stopped there before "
            "its verdict"
        )
    if " tag" in reason:
        return (
            "use a judge that ends with the rating tags the prompt asks for, or read the "
            "rating without reasoning (judge.readout=forced)"
        )
    if "floor" in reason or "no probability" in reason or "neither A nor B" in reason:
        return (
            "use a judge that answers the prompt: it puts too little probability on the "
            f"answer tokens (the floor is judge.min_rating_mass={j.min_rating_mass:g})"
        )
    return "see the reason; the judge's replies are in the cache (OUT/cache)"


def _preflight_json(cfg: EvalConfig, checks: list[PreflightCheck]) -> dict[str, Any]:
    """summary.json's ``preflight``."""
    return {"enabled": cfg.preflight.enabled, "checks": [asdict(c) for c in checks]}


def _stopped_by_preflight(
    cfg: EvalConfig, checks: list[PreflightCheck], remote: dict[str, Any]
) -> EvalOutcome:
    """The outcome of a run its preflight stopped: FAIL, the reasons and what to change,
    per-check counts, no score."""
    failed = [c for c in checks if c.failed_all]
    reasons = [
        f"preflight: stopped before spending the run's budget: every call of "
        f"{', '.join(c.name for c in failed)} failed, and nothing else was sampled or "
        "judged; change what is said below and rerun (the cache keeps what was done), or "
        "set preflight.enabled=false to run anyway",
        *(c.describe() for c in failed),
    ]
    stages = {
        f"preflight {c.name}": {
            "expected": c.calls,
            "missing": 0,
            "failed": c.failed,
            "failed_share": c.failed / c.calls,
        }
        for c in checks
        if c.calls
    }
    run = EvalRun(cfg, "compute", [], {}, {}, {}, remote=remote)
    run.preflight = _preflight_json(cfg, checks)
    return finish(run, GateResult("FAIL", reasons, cfg.gate.tolerance, stages), Path(cfg.out_dir))
