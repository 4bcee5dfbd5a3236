"""The RSA stage of the pipeline (``pairrl.eval.rsa``): sample each round through the
cache, label it, and select on the last round (a random pick, and the configured
tournament with the run's judge).

Each task's round is one entry of the samples cache (so merging shards' caches takes it
too), keyed by the generator's identity, the round's N prompts (which hold the subsets
shown), the sampling parameters and the round's seed: a rerun reuses it and the gate
replays it. A failed completion is
a candidate with ``error`` set, never executed; a task whose previous round has no
candidate left gets none. Failures and absent entries are issues of the stages
``rsa samples``, ``rsa labels`` and the tournament row, counted by the gate as the run's
own samples, labels and judge calls are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairrl.eval.cache import StageCache, content_key
from pairrl.eval.candidates import Candidate
from pairrl.eval.config import EvalConfig
from pairrl.eval.labels import label_candidates, unmeasured_issues, unmeasured_reasons
from pairrl.eval.rsa import round_metrics, rsa_random_selection, rsa_rows, subset_for
from pairrl.eval.run_state import EvalRun, Issue, StageOutcome
from pairrl.eval.selectors import Selection

__all__ = ["RsaOutcome", "population_metrics", "run_rsa", "select_on_last"]

Reporter = Callable[[str, int], Callable[[int], None]]
Labels = dict[str, list[dict[str, Any] | None]]


@dataclass
class RsaOutcome(StageOutcome):
    """What RSA added to a run: its rows' selections, its records (candidates and judge
    calls), issues, expected entries per stage and summary.json's ``rsa``."""

    selections: dict[str, dict[str, Selection]] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


def run_rsa(
    run: EvalRun,
    tasks: dict[str, Any],
    executor: Any,
    cache_dir: Path,
    limit_key: Any,
    progress: Reporter,
) -> tuple[RsaOutcome, dict[str, list[Candidate]], Labels]:
    """Every round of every task (round 0 is ``run``'s candidates and labels); returns the
    outcome so far and the last round's candidates and labels (for ``select_on_last``)."""
    cfg, out = run.config, RsaOutcome()
    pop, labels = run.candidates, run.labels
    per_round = [population_metrics(0, tasks, pop, labels)]
    sampler = _LazySampler(cfg)
    try:
        for round_ in range(1, cfg.rsa.rounds + 1):
            bar = progress(f"rsa round {round_} samples", len(pop))
            pop = _sample_round(cfg, tasks, pop, round_, cache_dir, run.mode, sampler, out, bar)
            flat = [c for t in run.task_ids for c in pop[t]]
            found = label_candidates(
                tasks,
                flat,
                executor,
                StageCache(cache_dir, "labels"),
                limit_key,
                cfg.label_chunk,
                progress(f"rsa round {round_} labels", len(flat)),
            )
            labels = {t: [found[(t, c.candidate_id)] for c in pop[t]] for t in run.task_ids}
            out.expected["rsa labels"] = out.expected.get("rsa labels", 0) + len(flat)
            out.issues += unmeasured_issues("rsa labels", pop, labels)
            out.records += _candidate_records(round_, pop, labels)
            per_round.append(population_metrics(round_, tasks, pop, labels))
    finally:
        sampler.close()
    rows = rsa_rows(cfg.rsa)
    out.summary = {
        "population": cfg.candidates.k,
        "subset_size": cfg.rsa.subset_size,
        "rounds": cfg.rsa.rounds,
        "rows": list(rows),
        "per_round": per_round,
    }
    return out, pop, labels


def select_on_last(
    run: EvalRun,
    tasks: dict[str, Any],
    last: tuple[dict[str, list[Candidate]], Labels],
    cache_dir: Path,
    out: RsaOutcome,
    progress: Reporter,
) -> None:
    """The ``rsa`` row and the tournament row on the last round, into ``out``."""
    from pairrl.eval.judge_selectors import build_judge, judge_solution
    from pairrl.eval.tournament_selectors import TaskLedger, run_tournaments

    cfg, (pop, labels) = run.config, last
    random_row, tour_row = rsa_rows(cfg.rsa)
    reasons = {t: unmeasured_reasons(labels[t]) for t in run.task_ids}
    shadow = EvalRun(cfg, run.mode, run.task_ids, pop, labels, {})
    bools = shadow.bool_labels()
    out.selections[random_row] = {
        t: rsa_random_selection(t, bools[t], reasons[t]) for t in run.task_ids
    }
    judge = build_judge(cfg, cache_dir, run.mode, [tasks[t] for t in run.task_ids])
    sols = {t: [judge_solution(c, tasks[t]) for c in pop[t]] for t in run.task_ids}
    ledgers = {t: TaskLedger(t) for t in run.task_ids}
    advance = progress(tour_row, len(run.task_ids))
    try:
        picks = run_tournaments(cfg, cfg.rsa.selector, judge, tasks, shadow, sols, ledgers, advance)
    finally:
        close = getattr(judge.sampler, "close", None)
        if callable(close):
            close()
    out.selections[tour_row] = {t: _renamed(sel, tour_row, reasons[t]) for t, sel in picks.items()}
    for ledger in ledgers.values():
        out.expected[tour_row] = out.expected.get(tour_row, 0) + sum(ledger.expected.values())
        out.issues += [dataclasses.replace(i, stage=tour_row) for i in ledger.issues]
        out.records += [{**r, "selector": tour_row} for r in ledger.records]


def _renamed(sel: Selection, row: str, reasons: list[str | None]) -> Selection:
    """The tournament's pick as row ``row``; failed when the chosen label is unmeasured."""
    sel = dataclasses.replace(sel, selector=row)
    if sel.failure is None and sel.chosen is not None and reasons[sel.chosen] is not None:
        sel.failure = f"the chosen candidate {sel.chosen} has no label ({reasons[sel.chosen]})"
    return sel


def _sample_round(
    cfg: EvalConfig,
    tasks: dict[str, Any],
    prev: dict[str, list[Candidate]],
    round_: int,
    cache_dir: Path,
    mode: str,
    sampler: _LazySampler,
    out: RsaOutcome,
    advance: Callable[[int], None],
) -> dict[str, list[Candidate]]:
    """Round ``round_``'s N candidates per task, sampled into the cache where absent or
    failed (compute mode), read from it."""
    from pairrl.eval.kit import benchmark_kit

    kit = benchmark_kit(cfg, list(tasks.values()))
    cache, n = StageCache(cache_dir, "samples"), cfg.candidates.k
    seed = int(content_key("rsa round", cfg.candidates.seed, cfg.rsa.seed, round_)[:8], 16)
    prompts: dict[str, list[Any]] = {}
    for tid, cands in prev.items():
        usable = [i for i, c in enumerate(cands) if c.error is None]
        if usable:
            subsets = [
                subset_for(tid, cfg.rsa.seed, round_, s, usable, cfg.rsa.subset_size)
                for s in range(n)
            ]
            shown = [[cands[i].completion for i in subset] for subset in subsets]
            prompts[tid] = [kit.aggregation(tasks[tid], texts) for texts in shown]
    sampling = cfg.candidates.sampling_key()
    keys = {t: content_key("rsa", sampler.identity, p, sampling, seed) for t, p in prompts.items()}
    todo = [t for t in prompts if mode == "compute" and _needs_sampling(cache.get(keys[t]))]
    if todo:
        sampler.sample_into(cache, {t: prompts[t] for t in todo}, keys, seed, advance)
    out.expected["rsa samples"] = out.expected.get("rsa samples", 0) + n * len(prev)
    return {t: _round_candidates(t, round_, n, cache, keys.get(t), tasks[t], out) for t in prev}


def _round_candidates(
    tid: str, round_: int, n: int, cache: StageCache, key: str | None, task: Any, out: RsaOutcome
) -> list[Candidate]:
    """A task's round from the cache; an absent or failed completion is an issue."""
    from pairrl.rewards import extract_code, is_answer_task

    entry = None if key is None else cache.get(key)
    ids = [f"rsa{round_}.{j}" for j in range(n)]
    if entry is None:
        why = "no candidate of the previous round" if key is None else "missing from cache"
        kind = "failed" if key is None else "missing"
        out.issues += [Issue("rsa samples", tid, i, kind, why) for i in ids]
        return [Candidate(tid, i, "", error=why) for i in ids]
    cands = []
    for cid, comp in zip(ids, entry["completions"], strict=True):
        if comp["error"] is not None:
            out.issues.append(Issue("rsa samples", tid, cid, "failed", comp["error"]))
            cands.append(Candidate(tid, cid, "", error=comp["error"]))
            continue
        code = "" if is_answer_task(task) else extract_code(comp["text"]) or ""
        meta = {k: comp.get(k) for k in ("finish_reason", "prompt_tokens", "completion_tokens")}
        cands.append(Candidate(tid, cid, code, text=comp["text"], meta=meta))
    return cands


def _needs_sampling(entry: dict[str, Any] | None) -> bool:
    return entry is None or any(c["error"] is not None for c in entry["completions"])


class _LazySampler:
    """The generator, started on first use so a fully cached (resumed) run starts none."""

    def __init__(self, cfg: EvalConfig) -> None:
        from pairrl.eval.models import model_identity

        src = self._src = cfg.candidates
        self._endpoint = src.endpoint if src.source == "endpoint" else None
        self.identity = model_identity(
            src.model, self._endpoint, src.served_model, engine=src.engine, dtype=src.dtype
        )
        self._sampler: Any = None

    def sample_into(
        self,
        cache: StageCache,
        prompts: dict[str, list[Any]],
        keys: dict[str, str],
        seed: int,
        advance: Callable[[int], None],
    ) -> None:
        """One completion per prompt; each task's round cached as its batch ends."""
        from pairrl.eval.models import make_sampler
        from pairrl.eval.sampling import _completion_entry as entry_of
        from pairrl.rollout.samplers import SamplingParams

        src = self._src
        if self._sampler is None:
            self._sampler = make_sampler(
                src.model,
                self._endpoint,
                src.served_model,
                src.http,
                src.batch_size,
                engine=src.engine,
                dtype=src.dtype,
            )
        s = src.sampling
        params = SamplingParams(
            temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens, seed=seed
        )
        todo, per_call = list(prompts), max(1, src.batch_size // src.k)
        for start in range(0, len(todo), per_call):
            chunk = todo[start : start + per_call]
            asked = [p for t in chunk for p in prompts[t]]
            rows = self._sampler.generate(asked, 1, params)
            done = [
                entry_of(row[0], self._prompt_tokens(p)) for p, row in zip(asked, rows, strict=True)
            ]
            cache.put_many(
                (keys[t], {"completions": done[i * src.k : (i + 1) * src.k]})
                for i, t in enumerate(chunk)
            )
            advance(len(chunk))

    def _prompt_tokens(self, prompt: Any) -> int | None:
        """The prompt's tokens as an in-process sampler encodes it (None over HTTP)."""
        encode = getattr(self._sampler, "encode", None)
        return len(encode(prompt)) if callable(encode) else None

    def close(self) -> None:
        """Close the generator if it was started."""
        close = getattr(self._sampler, "close", None)
        if callable(close):
            close()


def population_metrics(
    round_: int, tasks: dict[str, Any], pop: dict[str, list[Candidate]], labels: Labels
) -> dict[str, Any]:
    """A population's metrics (pass@1, pass@k, distinct programs, unmeasured labels,
    generation tokens; ``round_`` names it); its programs are what is labelled (a math
    candidate's text)."""
    from pairrl.rewards import is_answer_task

    programs = {
        t: [c.completion if is_answer_task(tasks[t]) else c.code for c in cands]
        for t, cands in pop.items()
    }
    unmeasured = {t: [r is not None for r in unmeasured_reasons(labels[t])] for t in labels}
    row = round_metrics(round_, labels, programs, unmeasured)
    return {**row, "generation_tokens": _tokens([c for cands in pop.values() for c in cands])}


def _tokens(cands: list[Candidate]) -> dict[str, int | None]:
    """A round's generation tokens, prompt and output, as the engine counted them (None
    when no candidate's were counted); ``uncounted``: sampled candidates without a count."""
    sampled = [c for c in cands if c.error is None]
    sums: dict[str, int | None] = {}
    for field_name, meta_key in (("prompt", "prompt_tokens"), ("output", "completion_tokens")):
        counted = [c.meta[meta_key] for c in sampled if c.meta.get(meta_key) is not None]
        sums[field_name] = sum(counted) if counted else None
    sums["uncounted"] = sum(1 for c in sampled if c.meta.get("completion_tokens") is None)
    return sums


def _candidate_records(
    round_: int, pop: dict[str, list[Candidate]], labels: Labels
) -> list[dict[str, Any]]:
    return [
        {
            "kind": "rsa_candidate",
            "round": round_,
            "task_id": tid,
            "candidate_id": cand.candidate_id,
            "code": cand.code,
            "sample_error": cand.error,
            "label": lab,
        }
        for tid, cands in pop.items()
        for cand, lab in zip(cands, labels[tid], strict=True)
    ]
