"""Sample k candidates per task from a model folder or an OpenAI-compatible endpoint.

Each task's k completions are one cache entry keyed by (generator identity, prompt
messages, sampling parameters, seed, k), so a rerun or a resumed run reuses them. A
completion that failed (transport error, timeout, backend error) becomes a candidate with
`error` set: never executed, counted by the gate. In compute mode, cached entries holding
failures are sampled again; in replay mode an absent entry is reported as missing.

With a thinking budget (``think_tokens``, the thinking stage: ``pairrl.eval.thinking``) each
completion thinks for at most that many tokens, ``</think>`` is forced, and the answer
follows; the budget is part of the cache key, the issues are the stage ``thinking
samples``, and a candidate's program is read from its answer (the text after
``</think>``), never from its thinking.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pairrl.eval.cache import StageCache, content_key
from pairrl.eval.candidates import Candidate
from pairrl.eval.config import CandidatesConfig, EvalConfig
from pairrl.eval.run_state import Issue
from pairrl.model_paths import check_model_path
from pairrl.rewards import answer_part, extract_code, is_answer_task
from pairrl.rollout.prompts import THINK_CLOSE

__all__ = ["check_model_sources", "sample_candidates"]


def check_model_sources(cfg: EvalConfig) -> None:
    """Check, before anything runs, every local model the run will load: the candidates'
    (``source: model``) and the judge's (when a judge selector runs); see
    ``check_model_path``."""
    from pairrl.eval.config import JUDGE_SELECTORS

    if cfg.candidates.source == "model":
        check_model_path("candidates.model", cfg.candidates.model)
    if any(name in JUDGE_SELECTORS for name in cfg.selectors):
        check_model_path("judge.model", cfg.judge.model)


def sample_candidates(
    cfg: EvalConfig,
    tasks: Sequence[Any],
    cache_dir: Path,
    mode: str,
    progress: Callable[[str, int], Callable[[int], None]],
    think_tokens: int | None = None,
) -> tuple[list[Candidate], list[Issue]]:
    """k candidates per task (in task order) and the issues found; with ``think_tokens``,
    each sampled with that thinking budget (see the module docstring)."""
    from pairrl.eval.kit import benchmark_kit
    from pairrl.eval.models import model_identity

    src = cfg.candidates
    identity = model_identity(
        src.model, _endpoint(src), src.served_model, engine=src.engine, dtype=src.dtype
    )
    cache = StageCache(cache_dir, "samples")
    kit = benchmark_kit(cfg, tasks)
    prompts = {str(t.task_id): kit.generation(t) for t in tasks}
    # without a budget the key is the one every earlier run cached its samples under
    budget = () if think_tokens is None else ("thinking budget", think_tokens)
    keys = {
        tid: content_key("sample", identity, prompt, src.sampling_key(), src.k, *budget)
        for tid, prompt in prompts.items()
    }
    # one sampling per key: tasks with the same prompt share their samples, whatever the
    # batches (a repeat within one call would be a fresh draw written over the first)
    first: dict[str, str] = {}
    for tid, key in keys.items():
        first.setdefault(key, tid)
    todo = [tid for key, tid in first.items() if _needs_sampling(cache.get(key), mode)]
    thinking = think_tokens is not None
    if todo and mode == "compute":
        bar = progress("thinking samples" if thinking else "sample", len(todo))
        _sample_into_cache(src, {t: prompts[t] for t in todo}, keys, cache, bar, think_tokens)
    answers = {str(t.task_id) for t in tasks if is_answer_task(t)}
    stage = "thinking samples" if thinking else "samples"
    return _from_cache(cache, keys, src.k, answers, stage, thinking)


def _endpoint(src: CandidatesConfig) -> str | None:
    """The endpoint candidates are sampled from; None when they come from a model folder."""
    return src.endpoint if src.source == "endpoint" else None


def _sample_into_cache(
    src: CandidatesConfig,
    prompts: dict[str, Any],
    keys: dict[str, str],
    cache: StageCache,
    advance: Callable[[int], None],
    think_tokens: int | None = None,
) -> None:
    """Sample ``src.k`` completions for each task of ``prompts`` (task id -> prompt), in
    batches of ``src.batch_size``, and cache each task's under its key as its batch ends;
    with ``think_tokens``, through the thinking budget."""
    from pairrl.eval.models import make_sampler
    from pairrl.rollout.prompts import generate_with_thinking_budget
    from pairrl.rollout.samplers import SamplingParams

    params = SamplingParams(
        temperature=src.sampling.temperature,
        top_p=src.sampling.top_p,
        max_tokens=src.sampling.max_tokens,
        seed=src.seed,
    )
    if src.source == "model":
        check_model_path("candidates.model", src.model)
    sampler = make_sampler(
        src.model,
        _endpoint(src),
        src.served_model,
        src.http,
        src.batch_size,
        engine=src.engine,
        dtype=src.dtype,
    )
    encode = getattr(sampler, "encode", None)  # an in-process sampler's own prompt tokens
    todo = list(prompts)
    try:
        for start in range(0, len(todo), src.batch_size):
            chunk = todo[start : start + src.batch_size]
            asked = [prompts[t] for t in chunk]
            if think_tokens is None:
                rows = sampler.generate(asked, src.k, params)
            else:
                rows = generate_with_thinking_budget(sampler, asked, src.k, params, think_tokens)
            entries = [
                [_completion_entry(c, _prompt_tokens(encode, prompts[t])) for c in row]
                for t, row in zip(chunk, rows, strict=True)
            ]
            cache.put_many(
                (keys[t], {"completions": done}) for t, done in zip(chunk, entries, strict=True)
            )
            advance(len(chunk))
    finally:
        close = getattr(sampler, "close", None)
        if callable(close):
            close()


def _from_cache(
    cache: StageCache,
    keys: dict[str, str],
    k: int,
    answer_tasks: set[str],
    stage: str = "samples",
    thinking: bool = False,
) -> tuple[list[Candidate], list[Issue]]:
    """Candidates from the cached samples; failed or absent samples are issues of
    ``stage`` (a failed one is a candidate with ``error`` set: never executed, counted by
    the gate). A math task's candidate has no code: its text is what is labelled and
    judged. A thinking candidate's text is its answer, the text after ``</think>``."""
    candidates: list[Candidate] = []
    issues: list[Issue] = []
    for tid, key in keys.items():
        entry = cache.get(key)
        if entry is None:
            issues.append(Issue(stage, tid, "all", "missing", "no cached samples"))
            candidates += [Candidate(tid, str(j), "", error="missing from cache") for j in range(k)]
            continue
        for j, comp in enumerate(entry["completions"]):
            if comp["error"] is not None:
                issues.append(Issue(stage, tid, str(j), "failed", comp["error"]))
                candidates.append(Candidate(tid, str(j), "", text="", error=comp["error"]))
                continue
            text = answer_part(comp["text"]) if thinking else comp["text"]
            code = "" if tid in answer_tasks else extract_code(text) or ""
            meta = {
                "finish_reason": comp["finish_reason"],
                "prompt_tokens": comp.get("prompt_tokens"),
                "completion_tokens": comp.get("completion_tokens"),
            }
            if thinking:  # it thought: closed thinking (at the budget or itself), then answered
                meta["thought"] = THINK_CLOSE in comp["text"]
            candidates.append(Candidate(tid, str(j), code, text=text, meta=meta))
    return candidates, issues


def _prompt_tokens(encode: Any, prompt: Any) -> int | None:
    return len(encode(prompt)) if callable(encode) else None


def _needs_sampling(entry: dict[str, Any] | None, mode: str) -> bool:
    if mode != "compute":
        return False
    return entry is None or any(c["error"] is not None for c in entry["completions"])


def _completion_entry(comp: Any, prompt_tokens: int | None = None) -> dict[str, Any]:
    """A sample as cached: its text, how it ended, and its tokens as the engine counted
    them (its ``usage``), else as sampled (token ids; the prompt as the sampler encodes
    it); None where neither is known (a server that returned text without token ids)."""
    usage = comp.usage
    counted = bool(comp.token_ids) or not comp.text
    return {
        "text": comp.text,
        "finish_reason": comp.finish_reason,
        "error": None if comp.error is None else str(comp.error),
        "completion_tokens": usage.completion_tokens
        if usage
        else (len(comp.token_ids) if counted else None),
        "prompt_tokens": usage.prompt_tokens if usage else prompt_tokens,
    }
