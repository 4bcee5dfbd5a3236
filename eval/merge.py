"""`pairrl eval merge OUT_DIR`: join `--shard i/n` runs into one result.

Each shard run lives in OUT_DIR/shards/<i>of<n>/ with its own cache (no two processes
append to one file). Merging checks that all n shards are present with the same config
(apart from the shard), writes the union of their caches to OUT_DIR/cache, concatenates
their records, and then runs the gate over the *unsharded* config: the replay re-derives
every label and comparison of every task from the merged cache, and its selections must
equal the shards' records. Bootstrap intervals are recomputed over all tasks; the shards'
remote-call figures (requests, retries, timeouts, time spent on failures) are summed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pairrl.errors import InputError
from pairrl.eval.cache import StageCache
from pairrl.eval.config import EvalConfig
from pairrl.eval.runner import EvalOutcome, load_run_config, regate
from pairrl.rollout.samplers.call_budget import merged_remote

__all__ = ["merge_shards"]

STAGES: tuple[str, ...] = ("samples", "labels", "outputs", "pointwise", "pairwise")


def merge_shards(out_dir: Path) -> EvalOutcome:
    """Merge the shards under `out_dir/shards`, gate the whole, write the reports."""
    shard_dirs = sorted((out_dir / "shards").glob("*of*"))
    if not shard_dirs:
        raise InputError(
            f"{out_dir / 'shards'}: no shard folders (<i>of<n>/); expected the output of "
            f"`pairrl eval CONFIG --shard i/n --set out_dir={out_dir}` for every i"
        )
    configs = [load_run_config(d) for d in shard_dirs]
    counts = {c.shard.split("/")[1] for c in configs if c.shard}
    if len(counts) != 1 or any(c.shard is None for c in configs):
        raise InputError(f"shards disagree on n or lack --shard: {[c.shard for c in configs]}")
    n = int(counts.pop())
    present = sorted(int(c.shard.split("/")[0]) for c in configs if c.shard)
    if present != list(range(n)):
        raise InputError(f"{out_dir / 'shards'}: need shards 0..{n - 1}, found {present}")
    base = _unsharded(configs[0], out_dir)
    for cfg in configs[1:]:
        if _unsharded(cfg, out_dir).model_dump() != base.model_dump():
            raise InputError(
                f"shard {cfg.shard} was run with a different config than shard {configs[0].shard}"
            )
    cache_dir = out_dir / "cache"
    for stage in STAGES:
        merged = StageCache(cache_dir, stage)
        for d, cfg in zip(shard_dirs, configs, strict=True):
            shard_cache = StageCache(Path(cfg.cache_dir or d / "cache"), stage)
            merged.put_many((k, v) for k, v in shard_cache.items() if k not in merged)
    with (out_dir / "records.jsonl").open("w") as handle:
        for d in shard_dirs:
            handle.write((d / "records.jsonl").read_text())
    (out_dir / "config.json").write_text(base.model_dump_json(indent=2) + "\n")
    (out_dir / "merged_from.json").write_text(
        json.dumps([str(d) for d in shard_dirs], indent=2) + "\n"
    )
    return regate(base, remote=merged_remote([_shard_remote(d) for d in shard_dirs]))


def _shard_remote(shard_dir: Path) -> dict[str, Any]:
    """A shard's remote-call figures (summary.json ``remote``; empty when it has none)."""
    try:
        found = json.loads((shard_dir / "summary.json").read_text()).get("remote")
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _unsharded(cfg: EvalConfig, out_dir: Path) -> EvalConfig:
    data = cfg.model_dump()
    data.update(shard=None, out_dir=str(out_dir), cache_dir=str(out_dir / "cache"))
    return EvalConfig.model_validate(data)
