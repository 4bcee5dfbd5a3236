"""The demo's outputs: ``summary.json`` and a PNG of its curves and best-of-k bars.

Training curves come from the trainer's logged history (TRL ``log_history`` entries with
``pairrl/solution_pass_rate`` and ``judge/balanced_accuracy``, measured on each step's own
training batch); the held-out points come from ``pairrl.recipes.toy_addition.evaluate`` for the warm start
and the final model.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["GOAL_POINTS", "curves_from_log_history", "goal_checks", "plot_demo", "write_summary"]

GOAL_POINTS = 0.05  # the demo's bar: both held-out metrics rise by at least 5 points

CURVE_KEYS = {
    "solution_pass_rate": "pairrl/solution_pass_rate",
    "judge_balanced_accuracy": "judge/balanced_accuracy",
    "verification_reward": "pairrl/verification_reward",
    "parse_failure_rate": "pairrl/parse_failure_rate",
}


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


def goal_checks(warm: dict[str, Any], final: dict[str, Any]) -> dict[str, Any]:
    """The demo's three criteria, computed from the held-out metrics (never tuned here).

    >>> goal_checks({"solution_pass_rate": 0.5, "judge_balanced_accuracy": 0.6},
    ...             {"solution_pass_rate": 0.6, "judge_balanced_accuracy": 0.62,
    ...              "best_of_k": {"swiss": 0.8, "random": 0.6}})["met"]
    False
    """
    d_sol = final["solution_pass_rate"] - warm["solution_pass_rate"]
    wj, fj = warm.get("judge_balanced_accuracy"), final.get("judge_balanced_accuracy")
    d_judge = fj - wj if wj is not None and fj is not None else None
    bok = final.get("best_of_k", {})
    swiss_gain = bok["swiss"] - bok["random"] if "swiss" in bok and "random" in bok else None
    checks = {
        "solution_pass_rate_gain": d_sol,
        "judge_balanced_accuracy_gain": d_judge,
        "swiss_minus_random": swiss_gain,
        "solution_rises_5_points": d_sol >= GOAL_POINTS,
        "judge_rises_5_points": d_judge is not None and d_judge >= GOAL_POINTS,
        "swiss_beats_random": swiss_gain is not None and swiss_gain > 0,
    }
    checks["met"] = bool(
        checks["solution_rises_5_points"]
        and checks["judge_rises_5_points"]
        and checks["swiss_beats_random"]
    )
    return checks


def _clean(value: Any) -> Any:
    """JSON-safe copy: NaN/inf become None (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def write_summary(path: str | Path, summary: dict[str, Any]) -> Path:
    """Write ``summary`` as indented JSON; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_clean(summary), indent=2, sort_keys=False) + "\n")
    return path


def plot_demo(path: str | Path, summary: dict[str, Any]) -> Path:
    """Three panels: pass rate and judge balanced accuracy over steps, best-of-k bars."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - matplotlib is a core dependency
        raise RuntimeError("plotting needs matplotlib: pip install matplotlib") from err
    curves = summary.get("curves", {})
    warm, final = summary["warm_start"], summary["final"]
    last_step = max(curves.get("step") or [0])
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for ax, key, title in (
        (axes[0], "solution_pass_rate", "solution pass rate"),
        (axes[1], "judge_balanced_accuracy", "judge balanced accuracy"),
    ):
        steps = [
            s
            for s, v in zip(curves.get("step", []), curves.get(key, []), strict=True)
            if v is not None
        ]
        values = [v for v in curves.get(key, []) if v is not None]
        if steps:
            ax.plot(steps, values, color="tab:blue", alpha=0.6, label="training batch")
        ax.plot([0, last_step], [warm[key], final[key]], "o--", color="tab:red", label="held-out")
        ax.set_title(title)
        ax.set_xlabel("RL step")
        ax.set_ylim(0, 1)
        ax.legend(loc="lower right")
    names = ["random", "swiss", "majority", "oracle"]
    xs = range(len(names))
    width = 0.38
    axes[2].bar(
        [x - width / 2 for x in xs],
        [warm["best_of_k"][n] for n in names],
        width,
        label="warm start",
    )
    axes[2].bar(
        [x + width / 2 for x in xs], [final["best_of_k"][n] for n in names], width, label="final"
    )
    axes[2].set_xticks(list(xs), names)
    axes[2].set_ylim(0, 1)
    axes[2].set_title(f"held-out best-of-{final.get('k', '?')}")
    axes[2].legend(loc="lower right")
    fig.suptitle(summary.get("title", "PairRL toy demo"))
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
