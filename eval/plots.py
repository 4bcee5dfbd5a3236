"""PNG charts: selectors' accuracy (95% CIs, pass@1 and oracle lines) and judge quality.

matplotlib is imported here only, with the Agg backend (no display needed).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

__all__ = ["plot_judge_quality", "plot_selectors"]


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - matplotlib is a core dependency
        raise ImportError("plots need matplotlib: pip install matplotlib") from err
    return plt


def plot_selectors(summary: dict[str, Any], path: Path, title: str) -> Path:
    """Bar per selector (accuracy %, CI whiskers), dashed pass@1 and oracle lines."""
    plt = _pyplot()
    names = list(summary["selectors"])
    values = [100 * (summary["selectors"][n]["accuracy"]["value"] or 0.0) for n in names]
    lows, highs = [], []
    for n, v in zip(names, values, strict=True):
        lo, hi = summary["selectors"][n]["accuracy"]["ci95"]
        lows.append(v - 100 * lo if lo is not None else 0.0)
        highs.append(100 * hi - v if hi is not None else 0.0)
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(names) + 2), 4))
    ax.bar(names, values, yerr=[lows, highs], capsize=4, color="#4C72B0")
    for key, style, label in (("pass@1", "--", "pass@1"), ("oracle", ":", "oracle pass@k")):
        value = summary[key]["value"]
        if value is not None:
            ax.axhline(
                100 * value, linestyle=style, color="black", label=f"{label} {100 * value:.1f}%"
            )
    ax.set_ylabel("selected accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"{textwrap.fill(title, 60)}\nintegrity gate: {summary['verdict']}", fontsize=9)
    ax.legend(loc="upper left", fontsize=8)
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_judge_quality(quality: dict[str, dict[str, Any]], path: Path, title: str) -> Path | None:
    """Grouped bars per judge: balanced accuracy, AUROC, yes-rate, true correct rate,
    foreign reject rate, swap consistency. None (no file) when no judge was run."""
    if not quality:
        return None
    plt = _pyplot()
    metrics = [
        "balanced_accuracy",
        "auroc",
        "yes_rate",
        "true_correct_rate",
        "foreign_reject_rate",
        "swap_consistency",
    ]
    judges = list(quality)
    width = 0.8 / len(metrics)
    fig, ax = plt.subplots(figsize=(max(6.0, 2.2 * len(judges) + 2), 4))
    for m_index, metric in enumerate(metrics):
        xs = [j + m_index * width for j in range(len(judges))]
        ys = [quality[j].get(metric) for j in judges]
        ax.bar(xs, [y if isinstance(y, float) else 0.0 for y in ys], width, label=metric)
        for x, y in zip(xs, ys, strict=True):
            if not isinstance(y, float):  # undefined (e.g. one class only), not zero
                ax.text(x, 0.01, "n/a", rotation=90, ha="center", va="bottom", fontsize=6)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(judges))], judges)
    ax.set_ylim(0, 1.05)
    ax.axhline(0.5, color="grey", linewidth=0.8, linestyle="--")
    ax.set_title(textwrap.fill(title, 90), fontsize=9)
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.12))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
