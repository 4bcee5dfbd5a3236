"""The held-out judge probe's learning curves of an experiment's trained models, in one
figure (``RUN/heldout_judge.png``) and in ``summary.json`` (``heldout_judge_curves``).

Every model of the experiment is probed on the same pairs (the main run's
``heldout_pairs.jsonl``, ``pairrl.train.heldout_probe``), from the same warm start, so the
curves start at one point and differ only by what each training did to the judge.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pairrl.train.heldout_probe import PROBE_LOG, read_probe_log

__all__ = ["CURVE_PANELS", "heldout_curves", "plot_heldout_curves"]

CURVE_PANELS = (
    ("judge_balanced_accuracy", "balanced accuracy, every item"),
    ("mixed_balanced_accuracy", "balanced accuracy, mixed pairs"),
    ("same_label_balanced_accuracy", "balanced accuracy, same-label pairs"),
    ("mixed_order_accuracy", "mixed pairs: passing one rated above"),
    ("judge_yes_rate", "yes-rate"),
    ("mean_score", "mean score (rating - 1) / 9"),
)


def heldout_curves(run_dirs: Mapping[str, Path]) -> dict[str, dict[str, list[Any]]]:
    """{model: {"step": [...], metric: [...]}} from each run folder's probe log; models
    without one are left out ({} when no run was probed)."""
    curves: dict[str, dict[str, list[Any]]] = {}
    for name, folder in run_dirs.items():
        rows = read_probe_log(Path(folder) / PROBE_LOG)
        if rows:
            keys = ["step", "seconds"] + [key for key, _ in CURVE_PANELS]
            curves[name] = {key: [row.get(key) for row in rows] for key in keys}
    return curves


def plot_heldout_curves(
    path: Path, curves: Mapping[str, Mapping[str, list[Any]]], labels: Mapping[str, str], title: str
) -> Path:
    """One panel per ``CURVE_PANELS`` metric, a line per model (``labels``: its name)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = (len(CURVE_PANELS) + 1) // 2
    fig, axes = plt.subplots(2, columns, figsize=(4.5 * columns, 7), squeeze=False)
    panels = list(axes.flat)
    for ax in panels[len(CURVE_PANELS) :]:
        ax.set_axis_off()
    for ax, (key, panel) in zip(panels[: len(CURVE_PANELS)], CURVE_PANELS, strict=True):
        drawn = 0
        for name, curve in curves.items():
            points = [
                (s, v) for s, v in zip(curve["step"], curve[key], strict=True) if v is not None
            ]
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", ms=3, label=labels.get(name, name))
                drawn += 1
        ax.axhline(0.5, color="grey", ls=":", lw=0.8)
        ax.set_title(panel, fontsize=10)
        ax.set_xlabel("RL step")
        ax.set_ylim(0, 1.02)
        if drawn:
            ax.legend(loc="lower right", fontsize=8)
        else:
            ax.text(0.5, 0.5, "not measured", ha="center", transform=ax.transAxes)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
