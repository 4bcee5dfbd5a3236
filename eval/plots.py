"""PNG charts: selectors' accuracy (95% CIs, pass@1 and oracle lines), accuracy against
judge cost (one point per selector, the cheapest-for-each-accuracy frontier drawn), the
selective-verification threshold sweep (accuracy against judge cost) and judge quality.

matplotlib is imported here only, with the Agg backend (no display needed).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

__all__ = ["plot_cost", "plot_judge_quality", "plot_selective_sweep", "plot_selectors"]


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


def plot_cost(summary: dict[str, Any], path: Path, title: str) -> Path | None:
    """Accuracy (%) against judge tokens (judge calls where some went uncounted), one point
    per selector (selectors at the same point share a label), the frontier as a step line;
    None (no file) when there is no frontier."""
    cost = summary.get("cost") or {}
    if not cost.get("frontier"):
        return None
    plt = _pyplot()
    axis, rows, front = cost["axis"], summary["selectors"], cost["frontier"]
    points: dict[tuple[float, float], list[str]] = {}
    for n, row in rows.items():
        if n != "oracle" and row["accuracy"]["value"] is not None:
            xy = (float(row["cost"][axis]), 100 * row["accuracy"]["value"])
            points.setdefault(xy, []).append(n)
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for (x, y), names in points.items():
        on = any(n in front for n in names)
        ax.scatter(x, y, s=40, color="#C44E52" if on else "#4C72B0", zorder=4 if on else 3)
    for x, y, names in _label_groups(points):
        label = textwrap.fill(", ".join(names), 36)
        ax.annotate(
            label, (x, y), textcoords="offset points", xytext=(6, 0), fontsize=7, va="center"
        )
    where = {n: xy for xy, names in points.items() for n in names}
    right = max(x for x, _ in points) or 1.0
    xs = [where[n][0] for n in front] + [right]
    ys = [where[n][1] for n in front] + [where[front[-1]][1]]
    ax.step(xs, ys, where="post", color="#C44E52", linewidth=1, label="cheapest for its accuracy")
    for key, style in (("pass@1", "--"), ("oracle", ":")):
        value = summary[key]["value"]
        if value is not None:
            ax.axhline(100 * value, linestyle=style, color="black", linewidth=0.8, label=key)
    positive = [x for x, _ in points if x > 0]
    if positive:
        ax.set_xscale("symlog", linthresh=min(positive))
    ax.set_xlim(-0.05 * right if not positive else -0.3 * min(positive), right * 2.5)
    ax.set_xlabel(f"{axis.replace('_', ' ')} over all tasks")
    ax.set_ylabel("selected accuracy (%)")
    ax.set_ylim(0, 105)
    ax.set_title(f"{textwrap.fill(title, 70)}\nintegrity gate: {summary['verdict']}", fontsize=9)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.17), ncol=3, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_selective_sweep(summary: dict[str, Any], path: Path, title: str) -> Path | None:
    """Accuracy (%) against judge tokens (judge calls where some went uncounted) of each
    ``X+sv`` row at every swept pointwise confidence, one line per row (the first row's
    points labelled with their confidence, the configured one ringed), and its tournament
    ``X`` judging every task as a cross; None (no file) when there is no sweep."""
    sweep = summary.get("selective_sweep") or {}
    if not sweep.get("rows"):
        return None
    plt = _pyplot()
    axis, rows = sweep["axis"], sweep["rows"]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    xs_all: list[float] = []
    for index, name in enumerate(rows[0]["selectors"]):
        colour = f"C{index % 10}"
        points = [
            (row["threshold"], float(p[axis]), 100 * p["accuracy"])
            for row in rows
            if (p := row["selectors"][name])["accuracy"] is not None
        ]
        ax.plot(
            [x for _, x, _ in points], [y for _, _, y in points], "o-", color=colour, label=name
        )
        for c, x, y in points:
            if c == sweep["configured"]:
                ax.scatter(x, y, s=140, facecolors="none", edgecolors=colour, zorder=5)
        if index == 0:
            for (x, y), label in _threshold_labels(points).items():
                ax.annotate(label, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
        base = summary["selectors"].get(name.removesuffix("+sv"))
        if base and base["accuracy"]["value"] is not None:
            xs_all.append(float(base["cost"][axis]))
            ax.scatter(xs_all[-1], 100 * base["accuracy"]["value"], marker="x", color=colour)
        xs_all += [x for _, x, _ in points]
    positive = [x for x in xs_all if x > 0]
    if positive:
        ax.set_xscale("symlog", linthresh=min(positive))
    ax.set_xlabel(f"{axis.replace('_', ' ')} over all tasks (x: the tournament on every task)")
    ax.set_ylabel("selected accuracy (%)")
    ax.set_ylim(0, 105)
    ax.set_title(f"{textwrap.fill(title, 70)}\nintegrity gate: {summary['verdict']}", fontsize=9)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.17), ncol=3, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _threshold_labels(
    points: list[tuple[float, float, float]],
) -> dict[tuple[float, float], str]:
    """One label per point of a sweep line: the confidences that landed on it (their
    labels would overlap), the first and last when there are more than three."""
    at: dict[tuple[float, float], list[float]] = {}
    for c, x, y in points:
        at.setdefault((x, y), []).append(c)
    return {
        xy: "c = "
        + (", ".join(f"{c:g}" for c in cs) if len(cs) <= 3 else f"{cs[0]:g} to {cs[-1]:g}")
        for xy, cs in at.items()
    }


def _label_groups(
    points: dict[tuple[float, float], list[str]],
) -> list[tuple[float, float, list[str]]]:
    """One label per run of points at the same accuracy within a factor 2 of judge cost
    (their labels would overlap), placed at the run's cheapest point."""
    groups: list[tuple[float, float, list[str]]] = []
    last_x = 0.0
    for (x, y), names in sorted(points.items(), key=lambda item: (item[0][1], item[0][0])):
        if groups and groups[-1][1] == y and x <= 2 * max(last_x, 1.0):
            groups[-1][2].extend(names)
        else:
            groups.append((x, y, list(names)))
        last_x = x
    return groups


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
