"""Training curves of several runs of a comparison job, one row per seed, in one PNG.

Reads each ``RUN/summary.json`` (the main job's or the real-model job's) and draws, per
run, PairRL's and the baselines' training pass rate, PairRL's verification reward and its
training judge's balanced accuracy over the steps, with the held-out judge balanced
accuracy of every model in the title.

    .venv/bin/python benchmarks/seed_curves.py runs/sm0 runs/sm1 --out docs/smollm2_curves.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders with summary.json")
    parser.add_argument("--out", type=Path, required=True, help="PNG to write")
    args = parser.parse_args()
    fig, axes = plt.subplots(len(args.runs), 2, figsize=(11, 3.2 * len(args.runs)), squeeze=False)
    for row, run in zip(axes, args.runs, strict=True):
        summary = json.loads((run / "summary.json").read_text())
        for name, curve in summary["curves"].items():
            row[0].plot(curve["step"], curve["solution_pass_rate"], label=f"{name} pass rate")
        pairrl = summary["curves"].get("pairrl", {})
        if pairrl:
            row[1].plot(pairrl["step"], pairrl["verification_reward"], label="verification reward")
            points = [(s, v) for s, v in zip(pairrl["step"], pairrl["judge_balanced_accuracy"],
                                                strict=True) if v is not None]  # fmt: skip
            row[1].plot(*zip(*points, strict=True), "o-", label="judge BA (training batch)")
        held = ", ".join(
            f"{m} {v['judge_balanced_accuracy']:.3f}" for m, v in summary["models"].items()
        )
        row[0].set_title(f"{run.name}: seed {summary['seed']}, training pass rate", fontsize=9)
        row[1].set_title(f"held-out judge BA: {held}", fontsize=9)
        for ax in row:
            ax.set_xlabel("step")
            ax.set_ylim(0, 1.05)
            ax.legend(fontsize=7)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(args.out)


if __name__ == "__main__":
    main()
