"""Where a real-model PairRL step's time goes, per stage, and a variant against the shipped
config side by side.

Each arm is a plain training run (``pairrl train``) of the config's training sections
(default ``configs/smollm2_cpu.yaml``: SmolLM2-135M on the simple-functions recipe) for
``--steps`` steps, no checkpoints, W&B off; the first step is left out as warm-up. The
arms run in turn, ``--repeats`` times interleaved (shipped, variant 1, ..., shipped, ...).
Per arm, from each step's ``train_log.jsonl`` row, the medians of:

* generate: the solutions' sampling (tokens/s over the solutions' completion tokens);
* execute: the sandbox labelling them (solutions/s);
* judge: the judgements' sampling (tokens/s over the judgements' completion tokens);
* score: TRL's batch beyond the rollout: old and reference log-probs, rewards, padding;
* forward+backward: the loss's forward and backward (tokens/s over all completion tokens);
* optimiser: the optimiser's step;

and, over the whole step, the judgement samples per hour (those generated: a problem
whose solutions all fail has no pair to judge, so this follows the model's pass rate) and
the judgement slots per hour (the step's capacity: its problems times their judgements),
with each variant's ratio to the shipped config's. The CPU's name and flags are printed with the figures.

    .venv/bin/python benchmarks/real_model_step.py --steps 3 \
        --variant vllm "--set engine.kind=vllm_colocate" [--warm-start RUN/warm_start]

``--warm-start`` trains from a warm-started folder (what the job's RL stage starts from;
its samples are the lengths the job sees); without it, from the base model.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PAIRRL = str(Path(sys.executable).with_name("pairrl"))
# every arm: a plain training run that measures steps and nothing else
BENCH_SETTINGS = (
    "warm_start.steps=0",
    "checkpoint.every_steps=100000",
    "logging.wandb=disabled",
)
STAGES = (
    # (name, seconds key, work key or None, unit)
    ("generate", "time/generate_s", "tokens/solution", "tok/s"),
    ("execute", "time/execute_s", "solutions", "sol/s"),
    ("judge", "time/judge_s", "tokens/judgement", "tok/s"),
    ("score", "time/score_s", None, ""),
    ("forward+backward", "time/forward_backward_s", "tokens/all", "tok/s"),
    ("optimiser", "time/optimizer_s", None, ""),
    ("whole step", "time/step_s", "judgements", "judgements/h"),
    ("step capacity", "time/step_s", "judgement_slots", "slots/h"),
)


def step_figures(
    row: Mapping[str, Any], judgements_per_step: float, solutions: float
) -> dict[str, float]:
    """One logged step's seconds and work per stage (``STAGES``' keys), derived where the
    log holds the parts: forward+backward is the update minus TRL's scoring and the
    optimiser; judgements are the step's judgement slots minus its empty ones."""
    update = row["time/update_s"] - row.get("time/score_s", 0.0) - row.get("time/optimizer_s", 0.0)
    return {
        **{k: float(v) for k, v in row.items() if isinstance(v, (int, float))},
        "time/forward_backward_s": max(0.0, update),
        "tokens/all": row.get("tokens/solution", 0.0) + row.get("tokens/judgement", 0.0),
        "solutions": solutions,
        "judgements": judgements_per_step - row.get("pairrl/no_pair_rows", 0.0),
        "judgement_slots": judgements_per_step,
    }


def stage_table(steps: Sequence[Mapping[str, float]]) -> dict[str, dict[str, float | None]]:
    """Per stage: the median seconds a step and the median rate (work per second; per
    hour for the whole step's judgements), None where the log has no figure."""
    table: dict[str, dict[str, float | None]] = {}
    for name, seconds_key, work_key, _ in STAGES:
        seconds = [s[seconds_key] for s in steps if seconds_key in s]
        rates = [
            s[work_key] / s[seconds_key] * (3600.0 if seconds_key == "time/step_s" else 1.0)
            for s in steps
            if work_key and seconds_key in s and s[seconds_key] > 0 and work_key in s
        ]
        table[name] = {
            "seconds": statistics.median(seconds) if seconds else None,
            "rate": statistics.median(rates) if rates else None,
        }
    return table


def format_tables(tables: Mapping[str, Mapping[str, Mapping[str, float | None]]]) -> str:
    """The arms side by side: seconds and rate per stage, each variant's rate over the
    first arm's (the shipped config)."""
    arms = list(tables)
    base = arms[0]
    lines = [f"{'stage':18s}" + "".join(f"{arm:>34s}" for arm in arms)]
    for name, _, _, unit in STAGES:
        cells = []
        for arm in arms:
            cell = tables[arm][name]
            text = "-" if cell["seconds"] is None else f"{cell['seconds']:.2f} s"
            if cell["rate"] is not None:
                text += f" {cell['rate']:.1f} {unit}"
                base_rate = tables[base][name]["rate"]
                if arm != base and base_rate:
                    text += f" x{cell['rate'] / base_rate:.2f}"
            cells.append(f"{text:>34s}")
        lines.append(f"{name:18s}" + "".join(cells))
    return "\n".join(lines)


def cpu_line() -> str:
    from pairrl.cpu_dtype import read_cpu, torch_kernels

    cpu = read_cpu()
    return f"CPU: {cpu.describe()}; flags {cpu.shown_flags()}; torch kernels {torch_kernels()}"


def _arm_config(config: Path, workdir: Path) -> Path:
    """The config's training sections as a plain training config (``kind: train``)."""
    import yaml

    data = yaml.safe_load(config.read_text())
    data["kind"] = "train"
    path = workdir / f"{config.stem}_train.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _slots(config: Path, overrides: list[str]) -> tuple[float, float]:
    """(judgement slots, solutions) of one step under ``overrides``."""
    from pairrl.config import load_config
    from pairrl.train.config import TrainConfig

    cfg = load_config(config, TrainConfig, overrides)
    problems = cfg.batch.problems_per_step
    return (
        float(problems * cfg.rollout.judgements_per_problem),
        float(problems * cfg.rollout.solutions_per_problem),
    )


def run_arm(
    config: Path, overrides: list[str], out: Path, log: Path
) -> tuple[list[dict[str, float]], float] | None:
    """Train one arm; its steps' figures (the first left out when there are more) and
    the run's wall seconds; None when the run failed (said on stderr, its log kept)."""
    cmd = [PAIRRL, "train", str(config), "--out", str(out)]
    cmd += [f"--set={o}" for o in overrides]
    started = time.perf_counter()
    with log.open("w") as fh:
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO, check=False)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        print(f"{' '.join(cmd)} failed (exit {proc.returncode}); see {log}", file=sys.stderr)
        return None
    rows = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    rows = [r for r in rows if "time/step_s" in r]
    rows = rows[1:] if len(rows) > 1 else rows
    judgements, solutions = _slots(config, overrides)
    return [step_figures(r, judgements, solutions) for r in rows], wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "smollm2_cpu.yaml")
    parser.add_argument("--steps", type=int, default=3, help="steps per arm (first: warm-up)")
    parser.add_argument("--repeats", type=int, default=1, help="interleaved runs of each arm")
    parser.add_argument(
        "--variant", nargs=2, action="append", default=[], metavar=("NAME", "SETS"),
        help='a variant: its name and its overrides, e.g. vllm "--set engine.kind=vllm_colocate"',
    )  # fmt: skip
    parser.add_argument("--warm-start", type=Path, help="train from this model folder")
    parser.add_argument("--out", type=Path, help="keep the runs and their logs here")
    args = parser.parse_args()
    if args.steps < 1 or args.repeats < 1:
        parser.error("--steps and --repeats must be at least 1")

    workdir = args.out or Path(tempfile.mkdtemp(prefix="real_model_step-"))
    workdir.mkdir(parents=True, exist_ok=True)
    config = _arm_config(args.config.resolve(), workdir)
    common = [*BENCH_SETTINGS, f"batch.max_steps={args.steps}"]
    if args.warm_start is not None:
        common.append(f"model.path={args.warm_start.resolve()}")
    arms = {"shipped": common}
    for name, sets in args.variant:
        words = [w.removeprefix("--set=") for w in shlex.split(sets) if w != "--set"]
        arms[name] = common + words
    print(cpu_line(), flush=True)
    steps: dict[str, list[dict[str, float]]] = {name: [] for name in arms}
    for repeat in range(args.repeats):
        for name, overrides in arms.items():
            run = workdir / f"{name}-{repeat}"
            result = run_arm(config, overrides, run, workdir / f"{name}-{repeat}.log")
            if result is None:
                continue
            steps[name] += result[0]
            print(f"{name} (repeat {repeat}): {len(result[0])} steps measured, run "
                  f"{result[1]:.0f} s", flush=True)  # fmt: skip
    if not steps["shipped"]:
        raise SystemExit("the shipped config's run failed: no baseline to compare with")
    tables = {name: stage_table(s) for name, s in steps.items() if s}
    print(format_tables(tables))
    (workdir / "real_model_step.json").write_text(json.dumps(tables, indent=1) + "\n")
    print(f"runs, logs and the table (real_model_step.json) in {workdir}")


if __name__ == "__main__":
    main()
