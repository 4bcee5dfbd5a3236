"""The selection benchmark on the HF engine and on the in-process vLLM engine, side by side.

Runs one finished benchmark config (``RUN/eval/<model>/config.json`` as the main job
writes it, or any ``kind: eval`` file whose candidates come from a local model) twice per
repeat, each time with a fresh output and cache folder so nothing is reused:
``candidates.engine=hf`` and ``candidates.engine=vllm`` (the judge follows the
candidates' engine). Prints wall seconds per engine, the ratio hf/vllm, and each run's
headline numbers (the engines draw different random streams, so the numbers differ by
sampling noise only). Each run is its own ``pairrl eval run`` process, so the vLLM row
includes the engine's start-up.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/eval_engines.py \\
        runs/toy/eval/pairrl/config.json --out /tmp/engines
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ENGINES = ("hf", "vllm")


def run_once(config: Path, out: Path, engine: str) -> tuple[float, dict]:
    """One benchmark run on ``engine`` into a fresh ``out``; (wall seconds, summary)."""
    shutil.rmtree(out, ignore_errors=True)
    pairrl = Path(sys.executable).with_name("pairrl")
    command = [str(pairrl), "eval", "run", str(config), "--out", str(out / "run"),
               "--set", f"cache_dir={out / 'cache'}", "--set", f"candidates.engine={engine}",
               "--no-progress"]  # fmt: skip
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{engine} run failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return wall, json.loads((out / "run" / "summary.json").read_text())


def headline(summary: dict) -> str:
    """pass@1 and each selector's accuracy, on one line."""
    parts = [f"pass@1 {summary['pass@1']['value']:.3f}"]
    for name, sel in summary["selectors"].items():
        parts.append(f"{name} {sel['accuracy']['value']:.3f}")
    return ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", type=Path, help="a kind: eval config with a local model")
    parser.add_argument("--out", type=Path, required=True, help="scratch folder")
    parser.add_argument("--repeats", type=int, default=1, help="runs per engine")
    args = parser.parse_args()
    walls: dict[str, list[float]] = {e: [] for e in ENGINES}
    for repeat in range(args.repeats):
        for engine in ENGINES:  # interleaved: a load change hits both engines alike
            wall, summary = run_once(args.config, args.out / f"{engine}{repeat}", engine)
            walls[engine].append(wall)
            print(f"{engine:5s} run {repeat}: {wall:7.1f} s  {headline(summary)}", flush=True)
    hf, vllm = (statistics.median(walls[e]) for e in ENGINES)
    print(f"median wall: hf {hf:.1f} s, vllm {vllm:.1f} s; hf/vllm = {hf / vllm:.2f}")


if __name__ == "__main__":
    main()
