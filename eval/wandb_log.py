"""W&B logging of a finished run (tables and images); wandb is imported here only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pairrl.eval.config import EvalConfig

__all__ = ["log_to_wandb"]


def log_to_wandb(cfg: EvalConfig, summary: dict[str, Any], out_dir: Path) -> None:
    """One W&B run: headline scalars, the selectors table, the PNGs, the verdict."""
    try:
        import wandb
    except ImportError as err:
        raise ImportError("W&B logging needs wandb: pip install wandb") from err
    run = wandb.init(
        project=cfg.wandb.project,
        name=cfg.wandb.name,
        mode=cfg.wandb.mode,
        dir=str(out_dir),
        config=cfg.model_dump(),
        job_type="eval",
    )
    try:
        scalars: dict[str, Any] = {"gate/pass": float(summary["verdict"] == "PASS")}
        if "selectors" in summary:
            scalars["pass@1"] = summary["pass@1"]["value"]
            scalars["oracle"] = summary["oracle"]["value"]
            columns = [
                "selector",
                "accuracy",
                "ci_low",
                "ci_high",
                "gap_closed",
                "judge_calls",
                "failed_calls",
                "judge_tokens",
            ]
            table = wandb.Table(columns=columns)
            for name, row in summary["selectors"].items():
                acc = row["accuracy"]
                scalars[f"accuracy/{name}"] = acc["value"]
                table.add_data(
                    name,
                    acc["value"],
                    acc["ci95"][0],
                    acc["ci95"][1],
                    row["gap_closed"]["value"],
                    row["cost"]["judge_calls"],
                    row["cost"]["failed_calls"],
                    row["cost"]["judge_tokens"],
                )
            scalars["selectors"] = table
        for png in ("selectors.png", "judge_quality.png", "cost.png"):
            if (out_dir / png).is_file():
                scalars[png.removesuffix(".png")] = wandb.Image(str(out_dir / png))
        run.summary["verdict"] = summary["verdict"]
        run.summary["gate_reasons"] = "\n".join(summary["gate"]["reasons"])
        wandb.log(scalars)
    finally:
        run.finish()
