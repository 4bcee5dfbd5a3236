"""Ablation of the toy CPU demo: GRPO (no judge samples) vs PointRL vs PairRL.

Runs ``pairrl train configs/toy_cpu.yaml`` once per mode and seed, from one shared warm
start per seed (copied into each run folder, so every mode starts from the same weights),
then prints the held-out numbers each run's ``summary.json`` holds:

    .venv/bin/python benchmarks/toy_ablation.py --out runs/toy_ablation --seeds 0 1 --jobs 2

A run folder that already holds ``summary.json`` is reused, not rerun (resume).
``--jobs 2`` runs the seeds side by side (one core each on a 2-core machine).
``--warm-start 'runs/toy_seed{seed}/warm_start'`` reuses the warm starts of earlier demo
runs instead of training new ones (``{seed}`` is replaced by each seed).

GRPO spends all G = 8 samples on solutions; PointRL and PairRL split them 4 + 4, so every
mode draws the same number of samples per problem. Extra ``--set`` overrides apply to all
runs (e.g. ``--set batch.max_steps=10`` for a quick look).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

MODES = {
    "grpo": ["rollout.mode=grpo"],
    "pointrl": ["rollout.mode=pointrl"],
    "pairrl": ["rollout.mode=pairrl"],
}
COLUMNS = ("solution_pass_rate", "judge_balanced_accuracy", "random", "swiss", "majority", "oracle")


def _pairrl_executable() -> str:
    exe = shutil.which("pairrl") or str(Path(sys.executable).with_name("pairrl"))
    if not Path(exe).exists():
        raise SystemExit("the `pairrl` console script is not installed: pip install -e .")
    return exe


def _row(metrics: dict) -> list[float | None]:
    bok = metrics["best_of_k"]
    return [
        metrics["solution_pass_rate"],
        metrics["judge_balanced_accuracy"],
        *(bok[k] for k in ("random", "swiss", "majority", "oracle")),
    ]


def _fmt(values: list[float | None]) -> str:
    return "  ".join("   n/a" if v is None else f"{v:6.3f}" for v in values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/toy_cpu.yaml")
    parser.add_argument("--out", default="runs/toy_ablation")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--jobs", type=int, default=1, help="seeds run side by side")
    parser.add_argument(
        "--warm-start", default=None, help="reuse this warm start; {seed} is replaced by the seed"
    )
    args = parser.parse_args()
    exe = _pairrl_executable()
    out = Path(args.out)

    def run_seed(seed: int) -> dict[tuple[str, int], dict]:
        """Every mode for one seed, in order, sharing one warm start."""
        done: dict[tuple[str, int], dict] = {}
        shared_warm = Path(args.warm_start.format(seed=seed)) if args.warm_start else None
        if shared_warm is not None and not (shared_warm / "config.json").is_file():
            raise SystemExit(f"--warm-start: no model at {shared_warm}")
        for mode in args.modes:
            run_dir = out / f"{mode}_seed{seed}"
            if (run_dir / "summary.json").is_file():  # finished earlier: reuse (resume)
                print(f"reusing {run_dir}/summary.json", flush=True)
                done[(mode, seed)] = json.loads((run_dir / "summary.json").read_text())
                # the run's own recorded phases (warm start, training, evaluation)
                recorded = done[(mode, seed)].get("wall_s", {})
                done[(mode, seed)]["ablation_wall_s"] = sum(recorded.values())
                shared_warm = shared_warm or run_dir / "warm_start"
                continue
            if shared_warm is not None and not (run_dir / "warm_start").exists():
                shutil.copytree(shared_warm, run_dir / "warm_start")
            cmd = [exe, "train", args.config, "--out", str(run_dir), f"--set=seed={seed}"]
            cmd += [f"--set={o}" for o in MODES[mode] + args.overrides]
            print("$", " ".join(cmd), flush=True)
            started = time.perf_counter()
            log = run_dir.with_suffix(".log")
            log.parent.mkdir(parents=True, exist_ok=True)
            with log.open("w") as handle:
                code = subprocess.run(cmd, stdout=handle, stderr=subprocess.STDOUT).returncode
            if code != 0:
                raise SystemExit(f"{mode} seed {seed} failed (exit {code}); see {log}")
            wall = time.perf_counter() - started
            summary = json.loads((run_dir / "summary.json").read_text())
            summary["ablation_wall_s"] = wall
            done[(mode, seed)] = summary
            shared_warm = shared_warm or run_dir / "warm_start"
        return done

    results: dict[tuple[str, int], dict] = {}
    with ThreadPoolExecutor(args.jobs) as pool:
        for done in pool.map(run_seed, args.seeds):
            results.update(done)
    header = "  ".join(f"{c[:6]:>6}" for c in COLUMNS)
    print(
        f"\nheld-out, final model (warm start in brackets on the first line per seed)\n{'mode':<8} seed  {header}   wall_s"
    )
    for (mode, seed), summary in results.items():
        print(
            f"{mode:<8} {seed:>4}  {_fmt(_row(summary['final']))}   {summary['ablation_wall_s']:.0f}"
        )
        if mode == args.modes[0]:
            print(f"{'(warm)':<8} {seed:>4}  {_fmt(_row(summary['warm_start']))}")
    (out / "ablation.json").write_text(
        json.dumps(
            {
                f"{m}_seed{s}": {
                    "warm_start": v["warm_start"],
                    "final": v["final"],
                    "goal": v["goal"],
                }
                for (m, s), v in results.items()
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
