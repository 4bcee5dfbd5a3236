"""Ablation of the main job over seeds: PointRL, GRPO-4, GRPO-8 and PairRL from one warm start.

Each seed is one main job (``pairrl experiment configs/toy_cpu.yaml``) with PointRL and GRPO
with 4 solutions added to its baselines, so every mode of a seed trains from the same warm
start with the same seed and steps, and the selection benchmark evaluates them all on the
same held-out problems and the same shared pool:

    .venv/bin/python benchmarks/toy_ablation.py --out runs/toy_ablation --seeds 0 1 2

prints one table (mean and spread over seeds, in points) and writes ``ablation.json`` and
``ablation.md`` to ``--out``. A seed whose folder already holds ``summary.json`` is read,
not rerun (resume). ``--jobs 2`` runs two seeds side by side (one core each on a 2-core
machine, about twice the wall time each: each seed gets ``cores // jobs`` threads unless
``OMP_NUM_THREADS`` is set). Extra ``--set`` overrides apply to every run.

``--evaluate-from DIR`` trains nothing: it evaluates the models an earlier ablation in DIR
trained (``DIR/seedS``, with that run's own config) again with this checkout's benchmark,
into ``--out``, and keeps DIR's training curves and wall times. For re-measuring after a
change to the benchmark, on the same weights:

    .venv/bin/python benchmarks/toy_ablation.py --evaluate-from runs/toy_ablation \
        --out runs/toy_ablation_eval --jobs 2
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pairrl.recipes.comparison.report import ROWS

CONFIG = "configs/toy_cpu.yaml"
MODELS = ("warm_start", "pointrl", "grpo@4", "grpo", "pairrl")
BASELINES = "recipe.options.baselines=[pointrl,grpo@4,grpo]"
# the main job's own table rows, and random pick on the shared pool (the floor Swiss must beat)
METRICS = (
    *ROWS,
    ("random on the shared pool", lambda m: m["shared_pool"]["random"]),
)
LABELS = {"warm_start": "warm start", "pointrl": "PointRL", "grpo@4": "GRPO-4"}
LABELS |= {"grpo": "GRPO-8", "pairrl": "PairRL"}


def _pairrl_executable() -> str:
    exe = shutil.which("pairrl") or str(Path(sys.executable).with_name("pairrl"))
    if not Path(exe).exists():
        raise SystemExit("the `pairrl` console script is not installed: pip install -e .")
    return exe


def child_env(jobs: int, environ: dict[str, str], cpus: int) -> dict[str, str]:
    """The seeds' environment: with ``jobs`` side by side, ``cpus // jobs`` threads each
    (torch takes every core per process otherwise, and N oversubscribed processes run many
    times slower than N x 1/N), unless ``OMP_NUM_THREADS`` is already set.

    >>> child_env(2, {}, 2)["OMP_NUM_THREADS"], child_env(3, {}, 2)["OMP_NUM_THREADS"]
    ('1', '1')
    >>> child_env(2, {"OMP_NUM_THREADS": "4"}, 2)["OMP_NUM_THREADS"], child_env(1, {}, 2)
    ('4', {})
    """
    env = dict(environ)
    if jobs > 1 and "OMP_NUM_THREADS" not in env:
        env["OMP_NUM_THREADS"] = str(max(1, cpus // jobs))
    return env


def run_seed(
    exe: str, config: str, out: Path, seed: int, overrides: list[str], env: dict[str, str]
) -> dict:
    """One main job with every ablation mode; its summary (read back when already there)."""
    run_dir = out / f"seed{seed}"
    if (run_dir / "summary.json").is_file():
        print(f"reusing {run_dir}/summary.json", flush=True)
        return json.loads((run_dir / "summary.json").read_text())
    model = out / f"model-seed{seed}"  # each seed's own initial model (built from its seed)
    cmd = [exe, "experiment", config, "--out", str(run_dir), f"--set=seed={seed}", f"--set={BASELINES}",
           f"--set=model.path={model}"]  # fmt: skip
    cmd += [f"--set={o}" for o in overrides]
    print("$ " + " ".join(cmd) + "\n", end="", flush=True)  # one write: seeds print from threads
    log = out / f"seed{seed}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with log.open("w") as handle:
        code = subprocess.run(cmd, stdout=handle, stderr=subprocess.STDOUT, env=env).returncode
    if code != 0:
        raise SystemExit(f"seed {seed} failed (exit {code}); see {log}")
    print(f"seed {seed} done in {time.perf_counter() - started:.0f} s", flush=True)
    return json.loads((run_dir / "summary.json").read_text())


def evaluate_seed(source: Path, out: Path, seed: int) -> dict:
    """Seed ``seed``'s models from ``source`` evaluated again into ``out/seedS``: the
    source's summary with its ``models`` and ``verification_gain`` measured anew."""
    from pairrl.recipes.comparison.experiment import (
        all_model_metrics,
        evaluate_models,
        swiss_selector,
        trained_models,
    )
    from pairrl.recipes.comparison.report import measured_gain
    from pairrl.train.config import TrainConfig
    from pairrl.train.run import quiet_libraries
    from pairrl.train.task_family import resolve_recipe

    trained, run_dir = source / f"seed{seed}", out / f"seed{seed}"
    if (run_dir / "summary.json").is_file():
        print(f"reusing {run_dir}/summary.json", flush=True)
        return json.loads((run_dir / "summary.json").read_text())
    quiet_libraries()
    cfg = TrainConfig.model_validate(json.loads((trained / "config.json").read_text()))
    options = resolve_recipe(cfg.recipe).options
    models = trained_models(cfg, options, trained)
    missing = [str(path) for path in models.values() if not (path / "config.json").is_file()]
    if missing:
        raise SystemExit(f"seed {seed}: no trained model in {', '.join(missing)}")
    started = time.perf_counter()
    evals = evaluate_models(cfg, options, run_dir, models)
    metrics = all_model_metrics(evals, models, options)
    summary = json.loads((trained / "summary.json").read_text())
    summary |= {
        "models": metrics,
        "verification_gain": measured_gain(
            metrics, cfg.rollout.mode, run_dir / "eval", swiss_selector(options)
        ),
        "evaluated_from": str(trained),
        "eval_runs": {name: str(run_dir / "eval" / name) for name in evals},
    }
    summary["wall_s"] = {**summary.get("wall_s", {}), "eval": time.perf_counter() - started}
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    print(f"seed {seed} evaluated in {time.perf_counter() - started:.0f} s", flush=True)
    return summary


def evaluate_seeds(
    source: Path, out: Path, seeds: list[int], jobs: int, env: dict[str, str]
) -> dict[int, dict]:
    """:func:`evaluate_seed` for every seed, ``jobs`` seeds side by side (one process each,
    with ``env``'s thread count)."""
    if jobs == 1:
        return {seed: evaluate_seed(source, out, seed) for seed in seeds}
    # the children evaluate only: this process writes the tables, once, from their summaries
    cmd = [
        sys.executable,
        __file__,
        "--evaluate-from",
        str(source),
        "--out",
        str(out),
        "--no-report",
    ]
    with ThreadPoolExecutor(jobs) as pool:
        for code in pool.map(
            lambda seed: subprocess.run([*cmd, "--seeds", str(seed)], env=env).returncode, seeds
        ):
            if code != 0:
                raise SystemExit(f"evaluating a seed failed (exit {code})")
    return {seed: evaluate_seed(source, out, seed) for seed in seeds}  # read back


def aggregate(summaries: dict[int, dict]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per model and metric: every seed's value, the mean and the sample spread (points).

    >>> m = {"solution_pass_rate": 0.5, "judge_balanced_accuracy": 0.6,
    ...      "best_of_k": {"random": 0.5, "majority": 0.5, "swiss": 0.7, "oracle": 1.0},
    ...      "shared_pool": {"swiss": 0.7, "random": 0.5}}
    >>> n = {**m, "solution_pass_rate": 0.7}
    >>> a = aggregate({0: {"models": {"pairrl": m}}, 1: {"models": {"pairrl": n}}})
    >>> a["pairrl"]["solution pass rate"]
    {'seeds': [50.0, 70.0], 'mean': 60.0, 'sd': 14.1}
    """
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for name in MODELS:
        runs = [s["models"][name] for s in summaries.values() if name in s["models"]]
        if not runs:
            continue
        table[name] = {}
        for metric, read in METRICS:
            values = [None if read(r) is None else round(100 * read(r), 1) for r in runs]
            known = [v for v in values if v is not None]
            table[name][metric] = {
                "seeds": values,
                "mean": round(statistics.fmean(known), 1) if known else None,
                "sd": round(statistics.stdev(known), 1) if len(known) > 1 else None,
            }
    return table


def format_table(table: dict[str, dict[str, dict[str, Any]]], seeds: list[int]) -> str:
    """Markdown: one row per metric, one column per model, mean (and spread) in points."""

    def cell(entry: dict[str, Any]) -> str:
        if entry["mean"] is None:
            return "n/a"
        return f"{entry['mean']:.1f}" + (f" ± {entry['sd']:.1f}" if entry["sd"] is not None else "")

    names = list(table)
    lines = [
        f"held-out, {len(seeds)} seed(s) ({', '.join(map(str, seeds))}): mean ± sd in points",
        "",
        "| metric | " + " | ".join(LABELS.get(n, n) for n in names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for metric, _ in METRICS:
        lines.append(f"| {metric} | " + " | ".join(cell(table[n][metric]) for n in names) + " |")
    return "\n".join(lines)


def format_gains(gains: dict[int, dict[str, Any]]) -> str:
    """Per seed, PairRL's gains over GRPO-8 on the shared pool with their paired 95% CIs.

    >>> g = {"judge_balanced_accuracy_vs_grpo": 7.8, "shared_pool_swiss_vs_grpo": 7.5,
    ...      "ci95": {"judge_balanced_accuracy_vs_grpo": [2.8, 12.2]}}
    >>> print(format_gains({0: g}))
    | seed | judge balanced accuracy vs GRPO-8 | Swiss on the shared pool vs GRPO-8 |
    |---|---:|---:|
    | 0 | +7.8 [+2.8, +12.2] | +7.5 |
    """
    keys = ("judge_balanced_accuracy_vs_grpo", "shared_pool_swiss_vs_grpo")

    def cell(gain: dict[str, Any], key: str) -> str:
        value, ci = gain.get(key), gain.get("ci95", {}).get(key)
        text = "n/a" if value is None else f"{value:+.1f}"
        return text if ci is None else f"{text} [{ci[0]:+.1f}, {ci[1]:+.1f}]"

    lines = [
        "| seed | judge balanced accuracy vs GRPO-8 | Swiss on the shared pool vs GRPO-8 |",
        "|---|---:|---:|",
    ]
    lines += [f"| {s} | " + " | ".join(cell(g, k) for k in keys) + " |" for s, g in gains.items()]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", default=CONFIG, help="the main job's config")
    parser.add_argument("--out", default="runs/toy_ablation", help="one folder per seed here")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds to run")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="k=v")
    parser.add_argument("--jobs", type=int, default=1, help="seeds run side by side")
    parser.add_argument(
        "--evaluate-from",
        type=Path,
        help="train nothing: evaluate the models of the ablation in this folder again",
    )
    parser.add_argument("--no-report", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    exe, out = _pairrl_executable(), Path(args.out)
    env = child_env(args.jobs, dict(os.environ), os.cpu_count() or 1)
    if args.evaluate_from is not None and args.evaluate_from.resolve() == out.resolve():
        parser.error("--evaluate-from and --out must be different folders")
    if args.no_report and args.evaluate_from is None:
        parser.error("--no-report is for the children of --evaluate-from --jobs N")
    if args.evaluate_from is not None and (args.overrides or args.config != CONFIG):
        parser.error("--evaluate-from evaluates with each seed's own config: no --set, --config")
    if args.evaluate_from is not None:
        summaries = evaluate_seeds(args.evaluate_from, out, args.seeds, args.jobs, env)
        if args.no_report:
            return 0
    else:
        with ThreadPoolExecutor(args.jobs) as pool:
            done = pool.map(
                lambda s: run_seed(exe, args.config, out, s, args.overrides, env), args.seeds
            )
            summaries = dict(zip(args.seeds, done, strict=True))
    table = aggregate(summaries)
    text = format_table(table, args.seeds)
    stage = "eval" if args.evaluate_from is not None else "total"
    walls = {s: round(v.get("wall_s", {}).get(stage) or 0.0) for s, v in summaries.items()}
    text += f"\n\n{'evaluation ' if stage == 'eval' else ''}wall time per seed (s): {walls}"
    gains = {s: v.get("verification_gain", {}) for s, v in summaries.items()}
    text += "\n\n" + format_gains(gains)
    print("\n" + text)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ablation.md").write_text(text + "\n")
    (out / "ablation.json").write_text(json.dumps({"seeds": args.seeds, "table": table}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
