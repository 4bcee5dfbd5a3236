"""Sample k candidates per task from a model folder or an OpenAI-compatible endpoint.

Each task's k completions are one cache entry keyed by (generator identity, prompt
messages, sampling parameters, seed, k), so a rerun or a resumed run reuses them. A
completion that failed (transport error, timeout, backend error) becomes a candidate with
`error` set: never executed, counted by the gate. In compute mode, cached entries holding
failures are sampled again; in replay mode an absent entry is reported as missing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pairrl.eval.cache import StageCache, content_key
from pairrl.eval.candidates import Candidate
from pairrl.eval.config import CandidatesConfig, EvalConfig
from pairrl.eval.run_state import Issue
from pairrl.rewards import extract_code, is_answer_task

__all__ = ["check_model_path", "sample_candidates"]


def check_model_path(field: str, path: str | None) -> None:
    """Raise ``InputError`` when ``path`` names a local model folder that is not there (or
    holds no ``config.json``), or a ``.gguf`` file that cannot be converted (converting it
    on first use, ``pairrl.model_source``); hub ids pass."""
    from pairrl.errors import InputError
    from pairrl.model_source import ModelSourceError, resolve_model_path

    if not path:
        return
    try:
        path = resolve_model_path(path)
    except ModelSourceError as err:
        raise InputError(f"{field}: {err}") from None
    local = Path(path).expanduser()
    expected = "expected a model folder saved with save_pretrained, or a hub id"
    if local.is_dir() and not (local / "config.json").is_file():
        raise InputError(f"{field} {path}: the folder holds no config.json; {expected}")
    if not local.is_dir() and (
        local.exists() or path.startswith(("/", ".", "~")) or path.count("/") > 1
    ):
        raise InputError(f"{field} {path}: no model folder there; {expected}")


def sample_candidates(
    cfg: EvalConfig,
    tasks: Sequence[Any],
    cache_dir: Path,
    mode: str,
    progress: Callable[[str, int], Callable[[int], None]],
) -> tuple[list[Candidate], list[Issue]]:
    """k candidates per task (in task order) and the issues found."""
    from pairrl.eval.kit import benchmark_kit
    from pairrl.eval.models import model_identity

    src = cfg.candidates
    identity = model_identity(src.model, _endpoint(src), src.served_model, engine=src.engine)
    cache = StageCache(cache_dir, "samples")
    kit = benchmark_kit(cfg, tasks)
    prompts = {str(t.task_id): kit.generation(t) for t in tasks}
    keys = {
        tid: content_key("sample", identity, prompt, src.sampling.model_dump(), src.k)
        for tid, prompt in prompts.items()
    }
    # one sampling per key: tasks with the same prompt share their samples, whatever the
    # batches (a repeat within one call would be a fresh draw written over the first)
    first: dict[str, str] = {}
    for tid, key in keys.items():
        first.setdefault(key, tid)
    todo = [tid for key, tid in first.items() if _needs_sampling(cache.get(key), mode)]
    if todo and mode == "compute":
        _sample_into_cache(src, {t: prompts[t] for t in todo}, keys, cache, progress)
    answers = {str(t.task_id) for t in tasks if is_answer_task(t)}
    return _from_cache(cache, keys, src.k, answers)


def _endpoint(src: CandidatesConfig) -> str | None:
    """The endpoint candidates are sampled from; None when they come from a model folder."""
    return src.endpoint if src.source == "endpoint" else None


def _sample_into_cache(
    src: CandidatesConfig,
    prompts: dict[str, Any],
    keys: dict[str, str],
    cache: StageCache,
    progress: Callable[[str, int], Callable[[int], None]],
) -> None:
    """Sample ``src.k`` completions for each task of ``prompts`` (task id -> prompt), in
    batches of ``src.batch_size``, and cache each task's under its key as its batch ends."""
    from pairrl.eval.models import make_sampler
    from pairrl.rollout.samplers import SamplingParams

    params = SamplingParams(
        temperature=src.sampling.temperature,
        top_p=src.sampling.top_p,
        max_tokens=src.sampling.max_tokens,
        seed=src.sampling.seed,
    )
    if src.source == "model":
        check_model_path("candidates.model", src.model)
    sampler = make_sampler(
        src.model, _endpoint(src), src.served_model, src.http, src.batch_size, engine=src.engine
    )
    todo = list(prompts)
    advance = progress("sample", len(todo))
    try:
        for start in range(0, len(todo), src.batch_size):
            chunk = todo[start : start + src.batch_size]
            rows = sampler.generate([prompts[t] for t in chunk], src.k, params)
            cache.put_many(
                (keys[t], {"completions": [_completion_entry(c) for c in row]})
                for t, row in zip(chunk, rows, strict=True)
            )
            advance(len(chunk))
    finally:
        close = getattr(sampler, "close", None)
        if callable(close):
            close()


def _from_cache(
    cache: StageCache, keys: dict[str, str], k: int, answer_tasks: set[str]
) -> tuple[list[Candidate], list[Issue]]:
    """Candidates from the cached samples; failed or absent samples are issues (a failed
    one is a candidate with ``error`` set: never executed, counted by the gate). A math
    task's candidate has no code: its text is what is labelled and judged."""
    candidates: list[Candidate] = []
    issues: list[Issue] = []
    for tid, key in keys.items():
        entry = cache.get(key)
        if entry is None:
            issues.append(Issue("samples", tid, "all", "missing", "no cached samples"))
            candidates += [Candidate(tid, str(j), "", error="missing from cache") for j in range(k)]
            continue
        for j, comp in enumerate(entry["completions"]):
            if comp["error"] is not None:
                issues.append(Issue("samples", tid, str(j), "failed", comp["error"]))
                candidates.append(Candidate(tid, str(j), "", text="", error=comp["error"]))
                continue
            code = "" if tid in answer_tasks else extract_code(comp["text"]) or ""
            meta = {"finish_reason": comp["finish_reason"]}
            candidates.append(Candidate(tid, str(j), code, text=comp["text"], meta=meta))
    return candidates, issues


def _needs_sampling(entry: dict[str, Any] | None, mode: str) -> bool:
    if mode != "compute":
        return False
    return entry is None or any(c["error"] is not None for c in entry["completions"])


def _completion_entry(comp: Any) -> dict[str, Any]:
    return {
        "text": comp.text,
        "finish_reason": comp.finish_reason,
        "error": None if comp.error is None else str(comp.error),
        "completion_tokens": len(comp.token_ids),
    }
