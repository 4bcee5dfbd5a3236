"""The main job's warm start with and without padding buckets, side by side.

Runs ``pairrl.train.warm_start.warm_start`` on the toy recipe's own warm-start
conversations (``configs/toy_cpu.yaml``'s options, its tiny model built fresh) for
``--steps`` SFT steps, alternating the two arms ``--repeats`` times, and prints each run's
wall time, the median per arm, the ratio, and each arm's final loss (the same loss up to
float rounding: the last digits may differ, the first four must not)::

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/warm_start_padding.py --steps 200 --repeats 2

Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
ARMS = {"one padded batch": False, "padding buckets": True}


def _conversations(config: dict) -> list:
    from pairrl.recipes.toy_addition import RECIPE
    from pairrl.train.config import TrainConfig

    options = RECIPE.options_model(**config["recipe"]["options"])
    cfg = TrainConfig.model_validate(config)
    return RECIPE.warm_start_conversations(cfg, options, config["seed"], [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "toy_cpu.yaml")
    parser.add_argument("--steps", type=int, default=200, help="SFT steps per run")
    parser.add_argument("--repeats", type=int, default=2, help="runs per arm, alternating")
    args = parser.parse_args(argv)

    from pairrl.tiny_model import build_tiny_model
    from pairrl.train.warm_start import warm_start

    config = yaml.safe_load(args.config.read_text())
    conversations = _conversations(config)
    walls: dict[str, list[float]] = {arm: [] for arm in ARMS}
    losses: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp) / "model"
        build_tiny_model(model_dir, seed=config["seed"], **config["model"]["tiny"])
        for repeat in range(args.repeats):
            for arm, bucket_padding in ARMS.items():
                report = warm_start(
                    model_dir,
                    conversations,
                    Path(tmp) / f"{arm}-{repeat}",
                    steps=args.steps,
                    lr=config["warm_start"]["lr"],
                    batch_size=config["warm_start"]["batch_size"],
                    bucket_padding=bucket_padding,
                    seed=config["seed"],
                )
                walls[arm].append(report["wall_s"])
                losses[arm] = report["last_loss"]
                print(f"{arm:>18}  run {repeat + 1}: {report['wall_s']:7.1f} s", flush=True)
    base, new = (statistics.median(walls[arm]) for arm in ARMS)
    for arm in ARMS:
        print(f"{arm:>18}: median {statistics.median(walls[arm]):7.1f} s, last loss {losses[arm]}")
    print(f"padding buckets / one padded batch: {new / base:.3f} ({base / new:.2f}x faster)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
