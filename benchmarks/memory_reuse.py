"""The main job after its warm start with glibc's memory reuse and with glibc's defaults,
side by side.

From one finished main job's warm start (``--from RUN``), runs the rest of the main job
(PairRL, GRPO beside it, the six benchmark runs) once per arm per repeat, alternating: with
``pairrl.memory.reuse_freed_memory`` (what ``pairrl train`` does) and with
``PAIRRL_MALLOC_DEFAULTS=1`` (glibc's defaults). Prints each run's wall time, page faults
and kernel time (of the job's processes), the median per arm, the ratio, and whether both
gave the same numbers (``summary.json`` ``models``)::

    .venv/bin/python benchmarks/memory_reuse.py --from runs/toy --out runs/memory_reuse

Run it alone on the machine.
"""

from __future__ import annotations

import resource
import statistics

from side_by_side import arms_parser, parse_arms_args, run_arm

ARMS = {"glibc defaults": {"PAIRRL_MALLOC_DEFAULTS": "1"}, "memory reuse": {}}


def main(argv: list[str] | None = None) -> int:
    parser = arms_parser(__doc__.split("\n\n")[0], "runs/memory_reuse")
    args = parse_arms_args(parser, argv)
    walls: dict[str, list[float]] = {arm: [] for arm in ARMS}
    models: dict[str, dict] = {}
    for repeat in range(args.repeats):
        for index, (arm, env) in enumerate(ARMS.items()):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            out = args.out / f"{index}-{repeat}"
            wall, models[arm] = run_arm(args.source, out, args.config, [], env)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            walls[arm].append(wall)
            faults = after.ru_minflt - before.ru_minflt
            kernel = after.ru_stime - before.ru_stime
            print(f"{arm:>15}: {wall:6.1f} s, {faults / 1e6:5.2f}M page faults, "
                  f"{kernel:5.1f} s kernel  ({out})", flush=True)  # fmt: skip
    base, reuse = (statistics.median(walls[arm]) for arm in ARMS)
    same = models["glibc defaults"] == models["memory reuse"]
    print(f"median wall: glibc defaults {base:.1f} s, memory reuse {reuse:.1f} s, "
          f"ratio {base / reuse:.2f}x; same numbers: {same}")  # fmt: skip
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
