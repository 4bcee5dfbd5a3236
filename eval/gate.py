"""The integrity gate: refuse numbers made of failed or missing calls.

The gate replays the run from its config and the cache alone (`run_pipeline(mode=
"replay")`), which re-derives every label, output set and judge comparison the run
needs, and then checks:

1. at least one task was evaluated;
2. no needed entry is missing from the cache;
3. per stage (samples, labels, outputs, each judge selector's calls), the share of failed
   entries is within the stated tolerance;
4. every judge selector made at least one judge call;
5. the selections the run reported (records.jsonl) equal the replayed ones.

Any breach makes the verdict FAIL, with one reason per breach.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pairrl.eval.config import JUDGE_SELECTORS, EvalConfig
from pairrl.eval.pipeline import EvalRun

__all__ = ["GateResult", "check_run", "read_reported_selections"]


@dataclass
class GateResult:
    """The verdict, the reasons for a FAIL, and per-stage counts."""

    verdict: Literal["PASS", "FAIL"]
    reasons: list[str]
    tolerance: float
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True for PASS."""
        return self.verdict == "PASS"

    def to_json(self) -> dict[str, Any]:
        """Plain dict for summary.json."""
        return asdict(self)


def read_reported_selections(records_path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """selector -> task_id -> {chosen, score} from a records.jsonl file."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    with records_path.open() as handle:
        for line in handle:
            row = json.loads(line)
            if row.get("kind") == "selection":
                out.setdefault(row["selector"], {})[row["task_id"]] = {
                    "chosen": row["chosen"],
                    "score": row["score"],
                }
    return out


def check_run(
    replay: EvalRun,
    reported: dict[str, dict[str, dict[str, Any]]] | None,
    tolerance: float,
) -> GateResult:
    """Apply the checks in the module docstring to a replayed run."""
    reasons: list[str] = []
    if not replay.task_ids:
        reasons.append(_nothing_evaluated(replay.config))
    missing = Counter(i.stage for i in replay.issues if i.kind == "missing")
    failed = Counter(i.stage for i in replay.issues if i.kind == "failed")
    examples: dict[str, str] = {}
    for issue in replay.issues:
        examples.setdefault(
            f"{issue.stage}/{issue.kind}", f"task {issue.task_id} {issue.item}: {issue.reason}"
        )
    stages: dict[str, dict[str, Any]] = {}
    for stage in sorted(set(replay.expected) | set(missing) | set(failed)):
        expected = replay.expected.get(stage, 0)
        share = failed[stage] / expected if expected else (1.0 if failed[stage] else 0.0)
        stages[stage] = {
            "expected": expected,
            "missing": missing[stage],
            "failed": failed[stage],
            "failed_share": share,
        }
        if missing[stage]:
            reasons.append(
                f"{stage}: {missing[stage]} of {expected} needed entries missing from the cache "
                f"(e.g. {examples.get(stage + '/missing')})"
            )
        if share > tolerance:
            reasons.append(
                f"{stage}: {failed[stage]} of {expected} failed ({share:.1%} > tolerance "
                f"{tolerance:.1%}; e.g. {examples.get(stage + '/failed')})"
            )
    for name in replay.config.selectors:
        if name not in JUDGE_SELECTORS:
            continue
        calls = sum(s.cost.judge_calls for s in replay.selections.get(name, {}).values())
        if calls == 0 and replay.task_ids:
            reasons.append(f"{name}: no judge call was made for a selector that needs one")
    if reported is not None:
        reasons.extend(_compare(replay, reported))
    return GateResult("FAIL" if reasons else "PASS", reasons, tolerance, stages)


def _compare(replay: EvalRun, reported: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    reasons: list[str] = []
    for name, per_task in replay.selections.items():
        got = reported.get(name)
        if got is None:
            reasons.append(f"{name}: the run reported no selections")
            continue
        bad = [
            t
            for t, sel in per_task.items()
            if t not in got
            or got[t]["chosen"] != sel.chosen
            or abs(got[t]["score"] - sel.score) > 1e-9
        ]
        if bad:
            reasons.append(
                f"{name}: {len(bad)} reported selections differ from the replay (e.g. task {bad[0]})"
            )
        extra = sorted(set(got) - set(per_task))
        if extra:
            reasons.append(
                f"{name}: selections reported for tasks the run does not cover ({extra[:3]})"
            )
    for name in sorted(set(reported) - set(replay.selections)):
        reasons.append(f"{name}: reported but not re-derivable from the config")
    return reasons


def _nothing_evaluated(cfg: EvalConfig) -> str:
    """Why no task was evaluated, in the config's own terms."""
    t, src = cfg.tasks, cfg.candidates
    chosen = f"split {t.split}, limit {t.limit}, shard {cfg.shard}"
    tasks = t.path or ("the recipe's held-out tasks" if cfg.recipe else "the pool's own tests")
    if src.source == "pool":
        return (
            f"no task was evaluated: no candidate of {src.pool} belongs to a task selected "
            f"from {tasks} ({chosen}); candidates are matched to tasks by task_id"
        )
    return f"no task was evaluated: the selection from {tasks} ({chosen}) is empty"
