"""The main job's outputs: ``summary.json``, ``demo.png`` and the table a user reads.

``finish`` evaluates the run's own model and collects the baselines and the other benchmark
runs (``beside``, ``experiment``), then writes:

* ``summary.json``: under ``models``, one entry per model (``warm_start``, each baseline,
  the run's own mode) with ``solution_pass_rate``, ``judge_balanced_accuracy`` (the fixed
  pairs of the shared pool: the same items for every judge), ``best_of_k`` (random,
  majority, swiss, oracle on the model's own candidates) and ``shared_pool`` (random,
  swiss, oracle with the model judging the warm start's candidates); ``verification_gain``
  (what pairwise verification added over GRPO, in points); the training curves; ``wall_s``
  per stage and in total (``side_by_side``: whether two processes shared them;
  ``threads``: the torch threads of training and of the work beside it, fixed before the
  run); the benchmark runs' folders; ``libraries``, the versions the numbers were measured with.
* ``demo.png``: both runs' training curves, the held-out bars, and the gains over GRPO
  with their paired 95% intervals;
* ``heldout_judge.png`` (with ``heldout_probe``): every trained model's judge on the same
  held-out pairs over its steps (``heldout_curves``), also in ``summary.json``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pairrl.recipes.comparison.options import ComparisonOptions
from pairrl.train.config import TrainConfig
from pairrl.train.run import FinishedRun

__all__ = [
    "TaskDescription",
    "curves_from_log_history",
    "finish",
    "format_table",
    "label",
    "plot_demo",
    "verification_gain",
]

CURVE_KEYS = {
    "solution_pass_rate": "pairrl/solution_pass_rate",
    "judge_balanced_accuracy": "judge/balanced_accuracy",
    "verification_reward": "pairrl/verification_reward",
    "parse_failure_rate": "pairrl/parse_failure_rate",
}
LABELS = {"warm_start": "warm start", "grpo": "GRPO", "pointrl": "PointRL", "pairrl": "PairRL"}


def label(name: str) -> str:
    """A model's column name: ``grpo@4`` is "GRPO-4" (its group size).

    >>> label("grpo@4"), label("pairrl")
    ('GRPO-4', 'PairRL')
    """
    mode, _, group = name.partition("@")
    return LABELS.get(mode, mode) + (f"-{group}" if group else "")


def curves_from_log_history(log_history: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
    """Per-step training curves; a metric missing at a step is None there (not 0).

    >>> curves_from_log_history([{"step": 1, "pairrl/solution_pass_rate": 0.5}, {"step": 2}])
    ... # doctest: +NORMALIZE_WHITESPACE
    {'step': [1], 'solution_pass_rate': [0.5], 'judge_balanced_accuracy': [None],
     'verification_reward': [None], 'parse_failure_rate': [None]}
    """
    rows = [e for e in log_history if any(k in e for k in CURVE_KEYS.values())]
    out: dict[str, list[Any]] = {"step": [int(e["step"]) for e in rows]}
    for name, key in CURVE_KEYS.items():
        out[name] = [float(e[key]) if key in e else None for e in rows]
    return out


def verification_gain(models: dict[str, dict[str, Any]], mode: str) -> dict[str, Any]:
    """What the run's mode added over GRPO (and the warm start), in points (x 100).

    >>> m = {"warm_start": {"solution_pass_rate": 0.8, "judge_balanced_accuracy": 0.7,
    ...                     "shared_pool": {"swiss": 0.8, "random": 0.8}},
    ...      "grpo": {"solution_pass_rate": 0.99, "judge_balanced_accuracy": 0.71,
    ...               "shared_pool": {"swiss": 0.82, "random": 0.8}},
    ...      "pairrl": {"solution_pass_rate": 0.98, "judge_balanced_accuracy": 0.95,
    ...                 "shared_pool": {"swiss": 0.97, "random": 0.8}}}
    >>> g = verification_gain(m, "pairrl")
    >>> (g["judge_balanced_accuracy_vs_grpo"], g["shared_pool_swiss_vs_grpo"], g["pass_rate_vs_grpo"])
    (24.0, 15.0, -1.0)
    """

    def points(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else round(100 * (a - b), 1)

    own, grpo, warm = models[mode], models.get("grpo"), models["warm_start"]
    gain = {
        "judge_balanced_accuracy_vs_warm_start": points(
            own["judge_balanced_accuracy"], warm["judge_balanced_accuracy"]
        ),
        "pass_rate_vs_warm_start": points(own["solution_pass_rate"], warm["solution_pass_rate"]),
        "shared_pool_swiss_vs_random": points(
            own["shared_pool"]["swiss"], own["shared_pool"]["random"]
        ),
    }
    if grpo is not None and mode != "grpo":
        gain["judge_balanced_accuracy_vs_grpo"] = points(
            own["judge_balanced_accuracy"], grpo["judge_balanced_accuracy"]
        )
        gain["shared_pool_swiss_vs_grpo"] = points(
            own["shared_pool"]["swiss"], grpo["shared_pool"]["swiss"]
        )
        gain["pass_rate_vs_grpo"] = points(own["solution_pass_rate"], grpo["solution_pass_rate"])
    return gain


def measured_gain(
    models: dict[str, dict[str, Any]], mode: str, eval_dir: Path, swiss: str
) -> dict[str, Any]:
    """:func:`verification_gain`, with paired 95% intervals (``ci95``) of the gains over
    GRPO on the shared pool when there is a GRPO to compare with."""
    from pairrl.recipes.comparison.intervals import run_gain_intervals

    gain = verification_gain(models, mode)
    if "judge_balanced_accuracy_vs_grpo" in gain:
        gain["ci95"] = run_gain_intervals(eval_dir, mode, swiss)
    return gain


ROWS = (
    ("solution pass rate", lambda m: m["solution_pass_rate"]),
    ("judge balanced accuracy", lambda m: m["judge_balanced_accuracy"]),
    ("judge failure rate", lambda m: m.get("judge_failure_rate")),
    ("best-of-k random", lambda m: m["best_of_k"]["random"]),
    ("best-of-k majority", lambda m: m["best_of_k"]["majority"]),
    ("best-of-k Swiss (own judge)", lambda m: m["best_of_k"]["swiss"]),
    ("best-of-k oracle", lambda m: m["best_of_k"]["oracle"]),
    ("Swiss on the shared pool", lambda m: m["shared_pool"]["swiss"]),
)


def format_table(summary: dict[str, Any]) -> str:
    """The held-out numbers, one column per model, and one line of what verification added."""
    models = summary["models"]
    names = list(models)
    k = summary["heldout"]["k"]
    width = 28
    lines = [" " * width + "".join(f"{label(n):>12}" for n in names)]
    for row_name, get in ROWS:
        cells = []
        for name in names:
            value = get(models[name])
            cells.append(f"{'n/a' if value is None else f'{value:.3f}':>12}")
        lines.append(f"{row_name.replace('-k', f'-{k}'):<{width}}" + "".join(cells))
    gain = summary["verification_gain"]
    if "judge_balanced_accuracy_vs_grpo" in gain:
        ci95 = gain.get("ci95", {})

        def pts(key: str) -> str:
            value, ci = gain[key], ci95.get(key)
            text = "n/a" if value is None else f"{value:+} points"
            return text if ci is None else f"{text} (95% CI {ci[0]:+} to {ci[1]:+})"

        lines.append(
            f"Pairwise verification added over GRPO: judge balanced accuracy "
            f"{pts('judge_balanced_accuracy_vs_grpo')}, Swiss on the shared pool "
            f"{pts('shared_pool_swiss_vs_grpo')}; solution pass rate {pts('pass_rate_vs_grpo')}."
        )
    gates = {f"{n}/{run}": v for n, m in models.items() for run, v in m["verdicts"].items()}
    failing = sorted(k for k, v in gates.items() if v != "PASS")
    lines.append(
        "benchmark gate: PASS on every run"
        if not failing
        else f"benchmark gate: FAIL on {', '.join(failing)} (failed calls beyond the tolerance; "
        "see RUN/eval/*/report.md)"
    )
    return "\n".join(lines)


def _clean(value: Any) -> Any:
    """JSON-safe copy: NaN/inf become None, paths strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


@dataclass(frozen=True)
class TaskDescription:
    """How the summary names a recipe's task family: a short ``title`` (in the demo's
    title) and a one-line ``summary`` of the task and how the judge can check it."""

    title: str
    summary: str


def finish(
    cfg: TrainConfig, options: ComparisonOptions, run: FinishedRun, task: TaskDescription
) -> dict[str, Any]:
    """Baselines, benchmark runs, summary.json, demo.png, the table (see module docstring)."""
    from pairrl.recipes.comparison.beside import Beside
    from pairrl.recipes.comparison.experiment import (
        all_model_metrics,
        baseline_folder,
        swiss_selector,
    )
    from pairrl.recipes.comparison.heldout_curves import heldout_curves, plot_heldout_curves
    from pairrl.versions import library_versions

    mode = cfg.rollout.mode
    beside = run.beside or Beside(cfg, options, run.run_dir, run.warm_start_dir)
    started = time.perf_counter()
    evals = dict(beside.warm_start_evals())  # the pool the final model judges
    evals.update(beside.final_evals(mode, run.final_dir))
    baselines, baseline_evals = beside.baselines()
    evals.update(baseline_evals)
    beside.close()
    eval_wall = time.perf_counter() - started
    models = {"warm_start": run.warm_start_dir, **{m: b["final_dir"] for m, b in baselines.items()}}
    models[mode] = run.final_dir
    metrics = all_model_metrics(evals, models, options)
    curves = {mode: curves_from_log_history(run.log_history)}
    curves.update({m: curves_from_log_history(b["log_history"]) for m, b in baselines.items()})
    probed = {mode: run.run_dir, **{m: baseline_folder(run.run_dir, m) for m in baselines}}
    probe_curves = heldout_curves(probed)
    wall = {
        "warm_start": run.wall_s.get("warm_start"),
        f"train_{mode}": run.wall_s.get("train"),
        **{f"train_{m}": b["wall_s"] for m, b in baselines.items()},
        # after training: the benchmark runs of this process and the wait for the other's
        "eval": eval_wall,
        "total": time.time() - run.started_at if run.started_at else None,
    }
    summary: dict[str, Any] = {
        "title": f"PairRL vs {', '.join(label(m) for m in baselines)} on {task.title}, "
        f"seed {cfg.seed}",
        "seed": cfg.seed,
        "mode": mode,
        "task": task.summary,
        "heldout": {
            "problems": evals["warm_start"]["num_tasks"],
            "k": options.eval_k,
            "split_seed": options.split_seed,
            "shared_pool": "the warm start's own held-out candidates",
            "judge_pairs": "fixed pairs (0,1),(2,3),.. of the shared pool",
        },
        "models": metrics,
        "verification_gain": measured_gain(
            metrics, mode, run.run_dir / "eval", swiss_selector(options)
        ),
        "curves": curves,
        "heldout_judge_curves": probe_curves,  # {} without heldout_probe
        "wall_s": wall,
        "side_by_side": beside.side_by_side,
        "threads": beside.threads,
        "eval_runs": {name: str(run.run_dir / "eval" / name) for name in evals},
        "libraries": library_versions(),  # another release of any can redraw the numbers
    }
    (run.run_dir / "summary.json").write_text(json.dumps(_clean(summary), indent=2) + "\n")
    plot_demo(run.run_dir / "demo.png", summary)
    if probe_curves:
        names = {name: label(name) for name in probe_curves}
        title = f"the judge on held-out pairs, seed {cfg.seed}"
        plot_heldout_curves(run.run_dir / "heldout_judge.png", probe_curves, names, title)
    table = format_table(summary)
    (run.run_dir / "table.txt").write_text(table + "\n")
    print(table)
    return summary


def plot_demo(path: str | Path, summary: dict[str, Any]) -> Path:
    """Pass rate and judge balanced accuracy over RL steps for every run; held-out bars;
    the gains over GRPO with their paired 95% intervals."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - matplotlib is a core dependency
        raise RuntimeError("plotting needs matplotlib: pip install matplotlib") from err
    fig, axes = plt.subplots(1, 4, figsize=(20, 4), width_ratios=[1, 1, 1.2, 0.8])
    _plot_curves(axes[:2], summary)
    _plot_heldout(axes[2], summary)
    _plot_gains(axes[3], summary)
    fig.suptitle(summary.get("title", "PairRL against its baselines"))
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _plot_curves(axes: Any, summary: dict[str, Any]) -> None:
    models, curves = summary["models"], summary["curves"]
    for ax, key, title in (
        (axes[0], "solution_pass_rate", "solution pass rate (training batch)"),
        (axes[1], "judge_balanced_accuracy", "judge balanced accuracy (training batch)"),
    ):
        for run_name, curve in curves.items():
            points = [
                (s, v) for s, v in zip(curve["step"], curve[key], strict=True) if v is not None
            ]
            if points:
                ax.plot(*zip(*points, strict=True), label=label(run_name))
        ax.axhline(
            models["warm_start"][key] or 0, color="grey", ls=":", label="warm start (held-out)"
        )
        ax.set_title(title)
        ax.set_xlabel("RL step")
        ax.set_ylim(0, 1.02)
        ax.legend(loc="lower right")


def _plot_heldout(ax: Any, summary: dict[str, Any]) -> None:
    models = summary["models"]
    bars = [
        ("pass rate", lambda m: m["solution_pass_rate"]),
        ("judge BA", lambda m: m["judge_balanced_accuracy"]),
        ("Swiss,\nshared pool", lambda m: m["shared_pool"]["swiss"]),
        ("Swiss,\nown pool", lambda m: m["best_of_k"]["swiss"]),
    ]
    width = 0.8 / len(models)
    for j, (name, m) in enumerate(models.items()):
        xs = [i + (j - (len(models) - 1) / 2) * width for i in range(len(bars))]
        values = [get(m) for _, get in bars]
        drawn = ax.bar(xs, [v or 0 for v in values], width, label=label(name))
        for bar, value in zip(drawn, values, strict=True):
            if value is None:  # measured on no task: a label, not a zero-high bar
                ax.text(bar.get_x() + bar.get_width() / 2, 0.02, "n/a", ha="center", fontsize=7)
    ax.set_xticks(range(len(bars)), [b for b, _ in bars])
    ax.set_ylim(0, 1.18)
    ax.set_title(
        f"held-out ({summary['heldout']['problems']} problems, k = {summary['heldout']['k']})"
    )
    ax.legend(loc="upper center", ncol=3, fontsize=8)


GAIN_BARS = (
    ("judge BA", "judge_balanced_accuracy_vs_grpo"),
    ("Swiss,\nshared pool", "shared_pool_swiss_vs_grpo"),
    ("pass rate\n(no interval)", "pass_rate_vs_grpo"),
)


def gain_bars(summary: dict[str, Any]) -> list[tuple[str, float, list[float] | None]]:
    """(bar, gain, its paired 95% interval or None) in points, for each gain over GRPO in
    the summary (the pass rate has no interval).

    >>> g = {"judge_balanced_accuracy_vs_grpo": 7.8, "pass_rate_vs_grpo": -0.6,
    ...      "ci95": {"judge_balanced_accuracy_vs_grpo": [2.9, 12.6]}}
    >>> [(b.split("\\n")[0], v, ci) for b, v, ci in gain_bars({"verification_gain": g})]
    [('judge BA', 7.8, [2.9, 12.6]), ('pass rate', -0.6, None)]
    """
    gain = summary.get("verification_gain", {})
    ci95 = gain.get("ci95", {})
    return [
        (name, gain[key], ci95.get(key)) for name, key in GAIN_BARS if gain.get(key) is not None
    ]


def _plot_gains(ax: Any, summary: dict[str, Any]) -> None:
    """Bars of the gains, each interval a line from its own ends (a gain need not lie
    inside its bootstrap interval)."""
    bars = gain_bars(summary)
    if not bars:
        ax.set_axis_off()
        ax.set_title("no GRPO run to compare with")
        return
    for x, (_, value, ci) in enumerate(bars):
        ax.bar(x, value, color="tab:green" if value >= 0 else "tab:red", alpha=0.8)
        if ci is not None:
            ax.plot([x, x], ci, color="black", lw=1.5)
            ax.plot([x - 0.12, x + 0.12], [ci[0]] * 2, [x - 0.12, x + 0.12], [ci[1]] * 2,
                    color="black", lw=1.5)  # fmt: skip
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(range(len(bars)), [name for name, _, _ in bars])
    ax.set_ylabel("points")
    ax.set_title("added over GRPO (paired 95% intervals)")
