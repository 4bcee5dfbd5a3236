"""The main job after its warm start, one after the other against side by side.

From one finished main job's warm start (``--from RUN``, its ``RUN/warm_start``), runs the
rest of the main job (PairRL, GRPO, the six benchmark runs) twice per repeat, alternating:
once in one process (``recipe.options.side_by_side=false``) and once as two processes
side by side (the default), and prints each wall time, the ratio, and whether both gave
the same numbers (``summary.json`` ``models``)::

    .venv/bin/python benchmarks/side_by_side.py --from runs/toy --out runs/side_by_side

The warm start is copied, never retrained (the main job reuses an existing one), so both
arms do the same work on the same machine in the same hour. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARMS = {"one after the other": ["recipe.options.side_by_side=false"], "side by side": []}


def run_arm(
    source: Path, out: Path, config: Path, extra: list[str], env: dict[str, str] | None = None
) -> tuple[float, dict]:
    """The main job in ``out`` from a copy of ``source``'s warm start, with ``env`` added to
    this environment: (wall s, models)."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    shutil.copytree(source / "warm_start", out / "warm_start")
    pairrl = str(Path(sys.executable).with_name("pairrl"))
    cmd = [pairrl, "experiment", str(config), "--out", str(out), *[f"--set={o}" for o in extra]]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    return wall, json.loads((out / "summary.json").read_text())["models"]


def arms_parser(description: str, default_out: str) -> argparse.ArgumentParser:
    """The options of a benchmark of two arms from one main job's warm start: ``--from``,
    ``--out``, ``--config``, ``--repeats``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        required=True,
        help="a finished main job whose warm_start both arms start from",
    )
    parser.add_argument("--out", type=Path, default=Path(default_out))
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "toy_cpu.yaml")
    parser.add_argument("--repeats", type=int, default=1, help="pairs of runs, alternating")
    return parser


def parse_arms_args(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``parser``'s arguments, refused when ``--from`` holds no warm start."""
    args = parser.parse_args(argv)
    if not (args.source / "warm_start").is_dir():
        raise SystemExit(f"{args.source}/warm_start not found: run the main job there first")
    return args


def main(argv: list[str] | None = None) -> int:
    parser = arms_parser(__doc__.split("\n\n")[0], "runs/side_by_side")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        help="extra KEY=VALUE override for both arms (repeatable)",
    )
    args = parse_arms_args(parser, argv)
    walls: dict[str, list[float]] = {arm: [] for arm in ARMS}
    models: dict[str, dict] = {}
    for repeat in range(args.repeats):
        for index, (arm, extra) in enumerate(ARMS.items()):
            out = args.out / f"{index}-{repeat}"
            wall, models[arm] = run_arm(args.source, out, args.config, extra + args.overrides)
            walls[arm].append(wall)
            print(f"{arm:>20}: {wall:6.1f} s  ({out})", flush=True)
    base, side = (statistics.median(walls[arm]) for arm in ARMS)
    same = models["one after the other"] == models["side by side"]
    print(f"median wall: one after the other {base:.1f} s, side by side {side:.1f} s, "
          f"ratio {base / side:.2f}x; same numbers: {same}")  # fmt: skip
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
