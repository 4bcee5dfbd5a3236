"""Held-out evaluation of one checkpoint on the demo's toy problems.

For each held-out problem the model samples ``k`` solutions, which the sandboxed executor
labels by running the hidden test (``pairrl.rewards.Executor``). Reported:

* ``solution_pass_rate``: the share of sampled solutions that pass.
* ``judge_balanced_accuracy``: the model as pairwise judge on a *fixed* pool of pairs
  (``reference_pool``, drawn once from the warm-start model's own held-out samples), so
  the warm start and the trained model are scored on the same items. Judge quality is
  ``pairrl.rollout.judge_quality``'s (the benchmark's and the trainer's): unparseable
  judgements are counted in ``judge_parse_failure_rate``, not scored.
  ``judge_on_policy`` repeats this on the model's own current samples.
* ``best_of_k``: random (its exact expectation, the mean correct share), swiss (the
  project's Swiss tournament with the model as judge, all problems in lock-step so that
  each round is one batch), majority (execution agreement on ``f()``'s return value,
  ``pairrl.eval.agreement``) and oracle (``pairrl.eval.selectors``).
* ``best_of_k_warm_pool``: the same pickers on the warm start's own candidates (the
  ``reference_pool``), judged by this checkpoint. Once the solver is near perfect, its own
  pool leaves a judge little to choose; on the warm start's pool the trained judge and the
  warm-start judge pick among the same candidates.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pairrl.eval.agreement import choose_by_agreement, output_signature
from pairrl.eval.selectors import select_oracle, select_random
from pairrl.recipes.toy_addition.prompts import generation_messages, pairwise_messages
from pairrl.recipes.toy_addition.tasks import AdditionProblem
from pairrl.rewards import extract_code, normalise_rating, parse_pair_ratings
from pairrl.rewards.results import ExecJob
from pairrl.rollout.judge_quality import item_quality
from pairrl.rollout.lockstep import run_lockstep_swiss

__all__ = ["CandidatePool", "evaluate_checkpoint", "judge_quality", "majority_pick", "sample_pool"]


@dataclass
class CandidatePool:
    """k sampled solutions per problem with their execution labels and return values."""

    problems: list[AdditionProblem]
    texts: list[list[str]]
    labels: list[list[bool]]
    statuses: list[list[str]]
    values: list[list[Any]]  # f()'s return value, None when the program gave none

    def to_json(self) -> dict[str, Any]:
        return {
            "problems": [[p.a, p.b] for p in self.problems],
            "texts": self.texts,
            "labels": self.labels,
            "statuses": self.statuses,
        }


def _shown(text: str) -> str:
    """What a judge sees of a candidate: the trainer's rendering (``pairrl.rollout.prompts``)."""
    from pairrl.rollout.prompts import solution_for_judge

    return solution_for_judge(text)


def sample_pool(
    sampler: Any,
    executor: Any,
    problems: Sequence[AdditionProblem],
    k: int,
    sampling: Any,
) -> CandidatePool:
    """Sample ``k`` solutions per problem and label them by execution."""
    prompts = [generation_messages(p.to_task()) for p in problems]
    rows = sampler.generate(prompts, k, sampling)
    texts = [[c.text if c.ok else "" for c in row] for row in rows]
    jobs = [
        ExecJob(task=p.to_task(), code=extract_code(t), candidate_id=f"{i}-{j}")
        for i, (p, row) in enumerate(zip(problems, texts, strict=True))
        for j, t in enumerate(row)
    ]
    results = executor.run(jobs)
    labels = [[r.passed for r in results[i * k : (i + 1) * k]] for i in range(len(problems))]
    statuses = [[r.status for r in results[i * k : (i + 1) * k]] for i in range(len(problems))]
    values = _return_values(executor, texts)
    return CandidatePool(list(problems), texts, labels, statuses, values)


def _return_values(executor: Any, texts: list[list[str]]) -> list[list[Any]]:
    """``f()`` of every candidate, run in the sandbox once per distinct program.

    Programs run concurrently, one per executor worker (``call_outputs`` takes a free one).
    """
    from concurrent.futures import ThreadPoolExecutor

    codes = sorted({c for row in texts for t in row if (c := extract_code(t)) is not None})

    def value_of(code: str) -> Any:
        (out,) = executor.call_outputs(code, "f", [()])
        return out.value if out.ok else None

    with ThreadPoolExecutor(max(1, getattr(executor, "workers", 1))) as pool:
        seen = dict(zip(codes, pool.map(value_of, codes), strict=True))
    return [[seen.get(extract_code(t) or "\0") for t in row] for row in texts]


def fixed_pairs(k: int) -> list[tuple[int, int]]:
    """Disjoint pairs (0, 1), (2, 3), ... judged for judge quality on every problem."""
    return [(i, i + 1) for i in range(0, k - 1, 2)]


def judge_texts(
    sampler: Any, requests: Sequence[tuple[AdditionProblem, str, str]], sampling: Any
) -> list[str]:
    """One pairwise judgement per ``(problem, solution_a_text, solution_b_text)``."""
    prompts = [pairwise_messages(p.to_task(), _shown(a), _shown(b)) for p, a, b in requests]
    rows = sampler.generate(prompts, 1, sampling) if prompts else []
    return [row[0].text if row[0].ok else "" for row in rows]


def judge_quality(
    verdicts: Sequence[tuple[int, int] | None], item_labels: Sequence[tuple[bool, bool]]
) -> dict[str, float | None]:
    """Balanced accuracy over the judged items of ``verdicts`` (None: a failed judgement,
    counted in ``parse_failure_rate``), per ``pairrl.rollout.judge_quality``.

    Below, the parsed pair is right on both items; the failed one is counted, not scored:

    >>> q = judge_quality([(9, 1), None], [(True, False), (True, False)])
    >>> (q["balanced_accuracy"], q["parse_failure_rate"])
    (1.0, 0.5)
    """
    scores: list[float | None] = []
    labels: list[bool] = []
    for verdict, pair_labels in zip(verdicts, item_labels, strict=True):
        for n, label in enumerate(pair_labels):
            scores.append(None if verdict is None else normalise_rating(verdict[n]))
            labels.append(label)
    quality = item_quality(scores, labels)
    failures = sum(v is None for v in verdicts)
    return {
        "balanced_accuracy": quality["balanced_accuracy"],
        "true_positive_rate": quality["true_positive_rate"],
        "true_negative_rate": quality["true_negative_rate"],
        "parse_failure_rate": failures / len(verdicts) if verdicts else None,
        "pairs": float(len(verdicts)),
    }


def majority_pick(values: Sequence[Any]) -> int | None:
    """Execution agreement on ``f()``'s value: the first candidate of the largest cluster of
    equal return values (``pairrl.eval.agreement``); None when no candidate returned one.

    >>> majority_pick([105, 115, 115, None, 105, 115])
    1
    >>> majority_pick([None, None]) is None
    True
    """
    if not values:
        return None
    choice = choose_by_agreement([None if v is None else output_signature([v]) for v in values])
    return None if choice.fallback else choice.chosen


def _verdict(text: str) -> tuple[int, int] | None:
    parsed = parse_pair_ratings(text)
    return parsed if isinstance(parsed, tuple) else None


def judge_pool(sampler: Any, pool: CandidatePool, sampling: Any) -> dict[str, float | None]:
    """The model's judge quality on ``pool``'s fixed pairs."""
    k = len(pool.texts[0]) if pool.texts else 0
    requests, labels = [], []
    for p, texts, row_labels in zip(pool.problems, pool.texts, pool.labels, strict=True):
        for a, b in fixed_pairs(k):
            requests.append((p, texts[a], texts[b]))
            labels.append((row_labels[a], row_labels[b]))
    verdicts = [_verdict(t) for t in judge_texts(sampler, requests, sampling)]
    return judge_quality(verdicts, labels)


def best_of_k(
    sampler: Any, pool: CandidatePool, sampling: Any, seed: int, budget_per_candidate: int = 2
) -> dict[str, Any]:
    """Accuracy of each picker on ``pool`` (see module docstring)."""
    n = len(pool.problems)

    def judge_batch(requests: list[tuple[int, tuple[int, int]]]) -> list[tuple[int, int] | None]:
        jobs = [(pool.problems[p], pool.texts[p][a], pool.texts[p][b]) for p, (a, b) in requests]
        return [_verdict(t) for t in judge_texts(sampler, jobs, sampling)]

    swiss = run_lockstep_swiss(
        [len(t) for t in pool.texts],
        judge_batch,
        budget_per_candidate=budget_per_candidate,
        seed=seed,
    )
    swiss_hits = [r.winner is not None and pool.labels[i][r.winner] for i, r in enumerate(swiss)]
    majority = [majority_pick(v) for v in pool.values]
    comparisons = sum(r.num_comparisons for r in swiss)
    failed = sum(r.num_failed for r in swiss)
    return {
        "random": sum(select_random(str(i), row).score for i, row in enumerate(pool.labels)) / n,
        "swiss": sum(swiss_hits) / n,
        "majority": sum(m is not None and pool.labels[i][m] for i, m in enumerate(majority)) / n,
        "oracle": sum(select_oracle(str(i), row).score for i, row in enumerate(pool.labels)) / n,
        "swiss_comparisons": comparisons,
        "swiss_failed_comparisons": failed,
        "swiss_no_winner": sum(r.winner is None for r in swiss),
    }


def evaluate_checkpoint(
    model_dir: str,
    problems: Sequence[AdditionProblem],
    *,
    executor: Any,
    k: int,
    solution_sampling: Any,
    judge_sampling: Any,
    reference_pool: CandidatePool | None = None,
    seed: int = 0,
    batch_size: int = 256,
    swiss_budget_per_candidate: int = 2,
) -> tuple[dict[str, Any], CandidatePool]:
    """Evaluate one checkpoint; returns the metrics and its own candidate pool.

    With ``reference_pool`` None (the warm start), the checkpoint's own pool is the
    reference for judge quality.
    """
    from pairrl.rollout.samplers import HFSampler

    started = time.perf_counter()
    sampler = HFSampler.from_pretrained(
        model_dir, device="cpu", dtype="float32", batch_size=batch_size
    )
    pool = sample_pool(sampler, executor, problems, k, solution_sampling)
    reference = reference_pool if reference_pool is not None else pool
    fixed = judge_pool(sampler, reference, judge_sampling)
    on_policy = fixed if reference is pool else judge_pool(sampler, pool, judge_sampling)
    selection = best_of_k(sampler, pool, judge_sampling, seed, swiss_budget_per_candidate)
    on_reference = (
        selection
        if reference is pool
        else best_of_k(sampler, reference, judge_sampling, seed, swiss_budget_per_candidate)
    )
    statuses: dict[str, int] = {}
    for row in pool.statuses:
        for s in row:
            statuses[s] = statuses.get(s, 0) + 1
    metrics = {
        "solution_pass_rate": sum(map(sum, pool.labels)) / (len(problems) * k),
        "judge_balanced_accuracy": fixed["balanced_accuracy"],
        "judge_parse_failure_rate": fixed["parse_failure_rate"],
        "judge_true_positive_rate": fixed["true_positive_rate"],
        "judge_true_negative_rate": fixed["true_negative_rate"],
        "judge_on_policy": on_policy,
        "best_of_k": selection,
        "best_of_k_warm_pool": on_reference,
        "exec_statuses": statuses,
        "num_problems": len(problems),
        "k": k,
        "wall_s": time.perf_counter() - started,
    }
    return metrics, pool
