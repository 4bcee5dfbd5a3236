"""Label agreement with EvalPlus's own harness on real candidate pools (HumanEval+, MBPP+).

Step 1 writes the samples in EvalPlus's format (one full program per line) and the MBPP+
task file EvalPlus needs (JSONL, only the tasks the pool covers), and prints the
``evalplus.evaluate`` commands; step 2 runs them (EvalPlus installs from PyPI and reads the
local files through its override variables, offline); step 3 labels the same programs with
``pairrl``'s executor and compares each with EvalPlus's plus label (base and plus both
"pass"):

    python benchmarks/evalplus_agreement.py write --out runs/evalplus
    # run the printed evalplus.evaluate commands (in a venv with evalplus==0.3.1)
    python benchmarks/evalplus_agreement.py compare --out runs/evalplus [--time-limit fixed]

A CPU k times slower is emulated by dividing the 1 s floor of the time limits by k in both
harnesses (EvalPlus's ``--min_time_limit``, ``--limit-floor`` here; docs/time_limits.md).

EvalPlus's limits are wall-clock, so its own labels can change between runs on a loaded
machine; keep each run's results (rename an earlier one to ``..._eval_results.2.json``)
and the comparison reports every run, counting as false passes only the samples that
EvalPlus refused in every run.

Programs are built as ../shared/data/README.md says (HumanEval: the prompt and the
truncated completion; MBPP: the prompt's last function and the truncated completion, plus
an alias line where MBPP+ renamed the function). The report gives the agreement, every
false pass (pairrl passes what EvalPlus fails) and false fail, and the same figures
without the 13 MBPP+ tasks whose signature MBPP+ changed (their programs cannot pass).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
STOPS = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")
# MBPP+ dropped a length or count argument of these tasks: the pool's programs take one more.
SIGNATURE_CHANGED = {57, 61, 70, 101, 119, 125, 145, 166, 245, 270, 296, 468, 471}


def truncate(text: str) -> str:
    cut = min([len(text)] + [i for s in STOPS if (i := text.find(s)) != -1])
    return text[:cut]


def last_function(prompt: str) -> str:
    lines = prompt.split("\n")
    start = max(i for i, line in enumerate(lines) if line.startswith("def "))
    tail = "\n".join(lines[start:])
    return tail[:-1] if tail.endswith("\n") else tail


def humaneval_samples() -> list[dict]:
    rows = [
        json.loads(x)
        for x in (DATA / "pools/humaneval_codegeex13b_adapt_n15.jsonl").read_text().splitlines()
    ]
    return [
        {"task_id": r["task_id"], "solution": r["prompt"] + truncate(r["completion"])} for r in rows
    ]


def mbpp_tasks_and_samples() -> tuple[list[dict], list[dict]]:
    plus = {
        int(t["task_id"].split("/")[1]): t for t in json.loads((DATA / "mbppplus.json").read_text())
    }
    pool = [
        json.loads(x)
        for x in (DATA / "pools/mbpp_codegeex13b_fewshot_n20.jsonl").read_text().splitlines()
    ]
    shared = sorted({int(r["task_id"]) for r in pool} & set(plus))
    samples = []
    for row in pool:
        number = int(row["task_id"])
        if number not in plus:
            continue
        entry = plus[number]["entry_point"]
        head = last_function(row["prompt"])
        name = head.split("(")[0][4:].strip()
        for completion in row["completion"]:
            program = head + truncate(completion)
            if name != entry:
                program += f"\n\n{entry} = {name}\n"
            samples.append({"task_id": f"Mbpp/{number}", "solution": program})
    return [plus[n] for n in shared], samples


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    he = humaneval_samples()
    tasks, mbpp = mbpp_tasks_and_samples()
    with gzip.open(DATA / "HumanEvalPlus.jsonl.gz") as packed:
        (out / "HumanEvalPlus.jsonl").write_bytes(packed.read())
    (out / "MbppPlus-shared.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    for name, rows in (("humaneval_samples.jsonl", he), ("mbpp_samples.jsonl", mbpp)):
        (out / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"wrote {len(he)} HumanEval+ and {len(mbpp)} MBPP+ samples ({len(tasks)} tasks) to {out}")
    print("run EvalPlus 0.3.1 on them (pip install evalplus==0.3.1), offline:")
    print(f"  HUMANEVAL_OVERRIDE_PATH={out}/HumanEvalPlus.jsonl evalplus.evaluate "
          f"--dataset humaneval --samples {out}/humaneval_samples.jsonl --parallel 2")  # fmt: skip
    print(f"  MBPP_OVERRIDE_PATH={out}/MbppPlus-shared.jsonl evalplus.evaluate "
          f"--dataset mbpp --samples {out}/mbpp_samples.jsonl --parallel 2")  # fmt: skip


def evalplus_labels(results: Path, samples: list[dict]) -> list[bool]:
    """EvalPlus's plus label per sample, in the samples' order (results keep that order)."""
    by_task = json.loads(results.read_text())["eval"]
    seen: dict[str, int] = {}
    labels = []
    for sample in samples:
        k = seen.get(sample["task_id"], 0)
        seen[sample["task_id"]] = k + 1
        row = by_task[sample["task_id"]][k]
        if row["solution"] != sample["solution"]:
            raise SystemExit(f"{results}: {sample['task_id']} #{k} is not the program written here")
        labels.append(row["base_status"] == row["plus_status"] == "pass")
    return labels


def evalplus_runs(out: Path, stem: str) -> list[Path]:
    """Every EvalPlus run's results for one sample file, in name order: EvalPlus writes
    ``<stem>_samples_eval_results.json``; earlier runs kept beside it
    (``..._eval_results.2.json``) count as further runs."""
    return sorted(out.glob(f"{stem}_samples_eval_results*.json"))


def compare_pool(
    name: str, task_file: Path, samples: list[dict], results: list[Path], args: argparse.Namespace
) -> None:
    """pairrl's labels against each EvalPlus run's (EvalPlus's own labels can differ between
    runs on a loaded machine: its limits are wall-clock); a false pass is one EvalPlus
    refused in every run."""
    from pairrl.rewards import ExecJob, Executor, load_tasks

    tasks = {t.task_id: t for t in load_tasks(str(task_file))}
    runs = [evalplus_labels(path, samples) for path in results]
    jobs = [ExecJob(tasks[s["task_id"]], s["solution"], str(i)) for i, s in enumerate(samples)]
    t0 = time.perf_counter()
    with Executor(
        timeout_s=args.timeout, time_limit=args.time_limit, limit_floor_s=args.limit_floor
    ) as executor:
        ours = [r.passed for r in executor.run(jobs)]
    wall = time.perf_counter() - t0
    for scope, keep in (("all", lambda s: True), ("without changed signatures", _unchanged)):
        idx = [i for i, s in enumerate(samples) if keep(s)]
        for path, theirs in zip(results, runs, strict=True):
            agree = sum(ours[i] == theirs[i] for i in idx)
            print(f"{name} ({scope}) vs {path.name}: {len(idx)} samples, "
                  f"agreement {100 * agree / len(idx):.2f}%, "
                  f"pairrl passes EvalPlus fails {sum(ours[i] and not theirs[i] for i in idx)}, "
                  f"EvalPlus passes pairrl fails {sum(theirs[i] and not ours[i] for i in idx)}")  # fmt: skip
        false_pass = [i for i in idx if ours[i] and not any(run[i] for run in runs)]
        false_fail = [i for i in idx if not ours[i] and all(run[i] for run in runs)]
        print(f"  against every run: false passes {len(false_pass)}, false fails {len(false_fail)}")
        if scope == "all":
            for i in false_pass + false_fail:
                kind = "false pass" if i in false_pass else "false fail"
                print(f"    {kind}: {samples[i]['task_id']} sample {i}")
    print(f"  pairrl pass rate {sum(ours) / len(ours):.4f}, EvalPlus {sum(runs[0]) / len(ours):.4f};"
          f" executor wall {wall:.0f} s (time limit: {args.time_limit})")  # fmt: skip


def _unchanged(sample: dict) -> bool:
    tid = sample["task_id"]
    return not (tid.startswith("Mbpp/") and int(tid.split("/")[1]) in SIGNATURE_CHANGED)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("write", "compare"))
    parser.add_argument("--out", type=Path, required=True, help="folder for samples and results")
    parser.add_argument("--timeout", type=float, default=3.0, help="fixed limit, seconds")
    parser.add_argument("--time-limit", choices=("fixed", "reference"), default="reference")
    parser.add_argument(
        "--limit-floor",
        type=float,
        default=1.0,
        help="floor of the reference rule, seconds (EvalPlus's --min_time_limit; 0.5 here "
        "and in EvalPlus stands for a CPU twice as slow)",
    )
    args = parser.parse_args(argv)
    if not (DATA / "README.md").is_file():
        print(f"shared data not found at {DATA}", file=sys.stderr)
        return 2
    if args.step == "write":
        write(args.out)
        return 0
    _, mbpp = mbpp_tasks_and_samples()
    pools = (
        ("HumanEval+", args.out / "HumanEvalPlus.jsonl", humaneval_samples(), "humaneval"),
        ("MBPP+", args.out / "MbppPlus-shared.jsonl", mbpp, "mbpp"),
    )
    for name, task_file, samples, stem in pools:
        results = evalplus_runs(args.out, stem)
        if not results:
            print(
                f"{name}: no {stem}_samples_eval_results*.json in {args.out}: "
                "run step 'write' and EvalPlus first",
                file=sys.stderr,
            )
            return 2
        compare_pool(name, task_file, samples, results, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
