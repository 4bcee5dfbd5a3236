"""The pairrl source one training step runs: files and lines, from `pairrl train` to the
first optimiser step, split into the setup (until TRL's first ``training_step``) and the
step itself (rollout, score, advantage, loss, backward).

Runs the CLI in this process under a line tracer (slow: a tracer sees every line), stops
at the first optimiser step and prints, per part, the pairrl files that ran, their
length and how many of their lines ran; ``--out`` writes the per-file table as JSON.

    .venv/bin/python benchmarks/step_path.py --out runs/step_path.json -- train \
        configs/tiny_cpu.yaml --out runs/step_path --set warm_start.steps=0 \
        --set batch.max_steps=1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

PARTS = ("setup", "step")


def tally(hits: Mapping[str, set[int]], root: Path) -> dict[str, dict[str, int]]:
    """Per source file under ``root`` (relative path): its length in lines and how many of
    its lines ran (``hits``: file name -> line numbers that ran)."""
    table = {}
    for name, lines in hits.items():
        path = Path(name)
        if path.suffix != ".py" or not path.is_relative_to(root):
            continue
        length = len(path.read_text().splitlines())
        table[str(path.relative_to(root))] = {"lines": length, "run": len(lines)}
    return dict(sorted(table.items()))


def totals(table: Mapping[str, Mapping[str, int]]) -> str:
    """One line: files, their lines, the lines that ran."""
    lines = sum(f["lines"] for f in table.values())
    run = sum(f["run"] for f in table.values())
    return f"{len(table)} files, {lines} lines, {run} lines run"


class LineTracer:
    """Records the lines run in files under ``root`` (not its tests, benchmarks or virtual
    env), per part; ``part`` says which part the lines go to."""

    def __init__(self, root: Path) -> None:
        self.root = str(root) + os.sep
        self.hits: dict[str, dict[str, set[int]]] = {p: {} for p in PARTS}
        self.part = PARTS[0]

    def _ours(self, name: str) -> bool:
        return name.startswith(self.root) and not any(
            f"{os.sep}{skip}{os.sep}" in name for skip in (".venv", "tests", "benchmarks")
        )

    def _line(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            self.hits[self.part].setdefault(frame.f_code.co_filename, set()).add(frame.f_lineno)
        return self._line

    def __call__(self, frame: Any, event: str, arg: Any) -> Any:
        if not self._ours(frame.f_code.co_filename):
            return None
        self.hits[self.part].setdefault(frame.f_code.co_filename, set()).add(frame.f_lineno)
        return self._line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the per-file table here (JSON)")
    parser.add_argument("pairrl_args", nargs=argparse.REMAINDER, help="-- then pairrl's")
    args = parser.parse_args()
    command = args.pairrl_args
    command = command[1:] if command[:1] == ["--"] else command
    if not command or command[0] != "train":
        parser.error("give the pairrl train command after --")

    import torch.optim.optimizer as optimizer
    import trl

    import pairrl

    tracer = LineTracer(Path(pairrl.__file__).resolve().parents[1])

    def report(*_: Any, **__: Any) -> None:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
        tables = {p: tally(tracer.hits[p], Path(tracer.root)) for p in PARTS}
        for part in PARTS:
            print(f"{part}: {totals(tables[part])}", flush=True)
        if args.out is not None:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(tables, indent=1) + "\n")
        os._exit(0)  # the step's path is measured: the run need not go on

    parent = trl.GRPOTrainer.training_step

    def training_step(self: Any, *a: Any, **k: Any) -> Any:
        tracer.part = "step"
        return parent(self, *a, **k)

    trl.GRPOTrainer.training_step = training_step
    optimizer.register_optimizer_step_pre_hook(report)
    threading.settrace(tracer)
    sys.settrace(tracer)
    from pairrl.cli import main as pairrl_main

    sys.argv = ["pairrl", *command]
    pairrl_main()
    print("the run ended before an optimiser step", file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
    main()
