"""The PairRL rollout, plugged into TRL through ``GRPOTrainer(rollout_func=...)``.

TRL calls ``rollout(prompts, trainer)`` with this process's slice of the generation batch:
each problem repeated G times consecutively. For every problem the rollout

1. generates G_gen solutions with the policy through TRL's own generation path
   (transformers ``generate`` or TRL's vLLM colocate/server engine),
2. labels them with ``label`` (the sandboxed executor; math tasks by their final answer,
   through the same contract: ``pairrl.rewards.TaskLabeller``),
3. picks what to judge: on-policy pairs (PairRL, ``pairrl.rollout.pairs``) or single solutions
   (PointRL); GRPO mode stops after step 2,
4. generates the judgements with the same policy and scores them with the paper's
   verification reward,

and returns G rows per problem in TRL's order (``pairrl.rollout.layout``) with an
``env_mask`` that zeroes the loss on ``no_pair`` and ``unlabelled`` rows and, as extra
columns, each row's :class:`RowRecord` (its sample type, reward and what was judged), the
temperature it was sampled at, and the call's statistics. TRL forwards the extra columns to
the reward functions and onto the batch's rows, where the trainer's advantage override and
metrics read them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pairrl.rewards import (
    RatingFailure,
    candidate_job,
    class_balance_weights,
    parse_pair_ratings,
    parse_rating,
    verification_reward,
)
from pairrl.rewards.results import ExecJob, ExecResult
from pairrl.rewards.tasks import Task
from pairrl.rollout.config import RewardConfig, RolloutConfig
from pairrl.rollout.judge_targets import pointwise_targets, step_seed
from pairrl.rollout.layout import (
    JUDGEMENT,
    NO_PAIR,
    RECORD_COLUMN,
    SOLUTION,
    STATS_COLUMN,
    TEMPERATURE_COLUMN,
    UNLABELLED,
    RowRecord,
    group_layout,
)
from pairrl.rollout.pairs import build_training_pairs
from pairrl.rollout.prompt_kit import Messages, PromptKit

__all__ = ["Generator", "PairRLRollout", "RolloutError"]


class RolloutError(RuntimeError):
    """The batch TRL handed over, or what a dependency returned, breaks an invariant."""


class Generator(Protocol):
    """Generates completions for token-id prompts in one phase ('solution' or 'judgement')."""

    def generate(
        self, prompt_ids: list[list[int]], phase: str, num_generations: int
    ) -> tuple[list[list[int]], list[list[float]] | None]: ...


@dataclass
class _Group:
    """One problem's working state during a rollout."""

    index: int  # global index in the batch
    task: Task
    prompt_ids: list[int]
    solution_texts: list[str] = field(default_factory=list)
    solution_ids: list[list[int]] = field(default_factory=list)
    solution_logprobs: list[list[float]] | None = None
    results: list[ExecResult] = field(default_factory=list)
    judged: list[tuple[int, ...]] = field(default_factory=list)
    pair_kinds: list[str | None] = field(default_factory=list)


class PairRLRollout:
    """Callable ``rollout_func`` for ``GRPOTrainer`` (see module docstring).

    ``label`` runs executor jobs and returns one result per job, in order (for math tasks
    a job carries the completion and the verdict is math-verify's).
    ``generator_factory`` builds the phase generator from the trainer (the TRL path in
    production, a scripted one in tests). ``tokenize`` renders chat messages to prompt
    ids (chat template with the generation prompt); ``decode`` turns completion ids to text.
    ``temperatures`` gives each sample type's sampling temperature (``sampling.solution``,
    ``sampling.judgement``; unlabelled and no-pair rows at the solution temperature).
    """

    def __init__(
        self,
        rollout: RolloutConfig,
        reward: RewardConfig,
        tasks_by_prompt: dict[str, Task],
        label: Callable[[list[ExecJob]], list[ExecResult]],
        prompts: PromptKit,
        tokenize: Callable[[Messages], list[int]],
        decode: Callable[[list[int]], str],
        eos_token_id: int,
        generator_factory: Callable[[Any], Generator],
        temperatures: Mapping[str, float],
    ) -> None:
        self.rollout, self.reward = rollout, reward
        self.tasks_by_prompt = tasks_by_prompt
        self.label = label
        self.prompts = prompts
        self.tokenize = tokenize
        self.decode = decode
        self.eos_token_id = eos_token_id
        self.generator_factory = generator_factory
        missing = sorted({SOLUTION, JUDGEMENT, UNLABELLED, NO_PAIR} - set(temperatures))
        if missing:
            raise ValueError(f"no sampling temperature for sample types {missing}")
        self.temperatures = dict(temperatures)
        self.timings: dict[str, float] = {}  # the last call's, per phase (``StepTimer``)
        self.calls = 0
        self.class_weights: tuple[float, float] | None = None  # reward.class_balance

    # -- TRL entry point ------------------------------------------------------------------

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        """This process's rows for TRL, with their records, temperatures and the call's
        statistics as extra columns."""
        g = self.rollout.group_size
        process_index = getattr(getattr(trainer, "accelerator", None), "process_index", 0)
        step = getattr(getattr(trainer, "state", None), "global_step", 0)
        groups = self._groups(prompts, g, process_index)
        generator = self.generator_factory(trainer)
        timings: dict[str, float] = {}

        t0 = time.perf_counter()
        self._generate_solutions(groups, generator)
        timings["generate"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        self._label(groups, step)
        timings["execute"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        judge_rows, fillers = (
            self._judge(groups, generator, step, trainer)
            if self.rollout.judgements_per_problem
            else ({}, 0)
        )
        timings["judge"] = time.perf_counter() - t0

        out = self._assemble(groups, judge_rows)
        # not a list: TRL puts it on every row as it is
        out[STATS_COLUMN] = {"fillers": fillers, "timings": dict(timings)}
        self.timings = timings
        self.calls += 1
        return out

    # -- steps ----------------------------------------------------------------------------

    def _groups(self, prompts: list[Any], g: int, process_index: int) -> list[_Group]:
        if len(prompts) % g:
            raise RolloutError(
                f"got {len(prompts)} prompts, not a multiple of group_size {g}: each process "
                "must hold whole problem groups (see pairrl.train.plan)"
            )
        num_local = len(prompts) // g
        groups = []
        for k in range(num_local):
            block = prompts[k * g : (k + 1) * g]
            key = _prompt_key(block[0])
            if any(_prompt_key(p) != key for p in block):
                raise RolloutError(f"rows {k * g}..{(k + 1) * g - 1} are not one problem repeated")
            task = self.tasks_by_prompt.get(key)
            if task is None:
                raise RolloutError(f"prompt of rows {k * g}.. matches no training task")
            ids = self.tokenize(self.prompts.generation(task))
            groups.append(_Group(index=process_index * num_local + k, task=task, prompt_ids=ids))
        return groups

    def _generate_solutions(self, groups: list[_Group], generator: Generator) -> None:
        n = self.rollout.solutions_per_problem
        prompt_ids = [grp.prompt_ids for grp in groups for _ in range(n)]
        ids, logprobs = generator.generate(prompt_ids, "solution", n)
        if len(ids) != len(prompt_ids):
            raise RolloutError(
                f"generator returned {len(ids)} solutions for {len(prompt_ids)} prompts"
            )
        texts = self._decode(ids)
        for k, grp in enumerate(groups):
            grp.solution_ids = ids[k * n : (k + 1) * n]
            grp.solution_texts = texts[k * n : (k + 1) * n]
            grp.solution_logprobs = None if logprobs is None else logprobs[k * n : (k + 1) * n]

    def _label(self, groups: list[_Group], step: int) -> None:
        jobs = [
            candidate_job(grp.task, text, f"s{step}-p{grp.index}-{i}")
            for grp in groups
            for i, text in enumerate(grp.solution_texts)
        ]
        results = self.label(jobs)
        if len(results) != len(jobs):
            raise RolloutError(f"executor returned {len(results)} results for {len(jobs)} jobs")
        n = self.rollout.solutions_per_problem
        for k, grp in enumerate(groups):
            grp.results = list(results[k * n : (k + 1) * n])
            for job, res in zip(jobs[k * n : (k + 1) * n], grp.results, strict=True):
                if res.candidate_id != job.candidate_id:
                    raise RolloutError(
                        f"executor result {res.candidate_id} for job {job.candidate_id}"
                    )

    def _judge(
        self, groups: list[_Group], generator: Generator, step: int, trainer: Any
    ) -> tuple[dict[tuple[int, int], tuple[list[int], list[int], list[float] | None, str]], int]:
        """Pick what each slot judges, generate the judgements; keyed by (group, slot), and
        the number of filler prompts generated only to keep processes in step."""
        slots: list[tuple[int, int]] = []
        prompt_ids: list[list[int]] = []
        for k, grp in enumerate(groups):
            labels = [None if r.status == "sandbox_error" else r.passed for r in grp.results]
            seed = step_seed(self.rollout.pair_seed, step, grp.index)
            grp.judged, grp.pair_kinds = self._targets(labels, seed)
            for slot, judged in enumerate(grp.judged):
                texts = [self.prompts.for_judge(grp.solution_texts[i]) for i in judged]
                messages = (
                    self.prompts.pairwise(grp.task, texts[0], texts[1])
                    if len(judged) == 2
                    else self.prompts.pointwise(grp.task, texts[0])
                )
                slots.append((k, slot))
                prompt_ids.append(self.tokenize(messages))
        real = len(prompt_ids)
        target = _padded_count(real, trainer)
        if target == 0:
            return {}, 0
        filler = groups[0].prompt_ids
        ids, logprobs = generator.generate(prompt_ids + [filler] * (target - real), "judgement", 1)
        if len(ids) != target:
            raise RolloutError(f"generator returned {len(ids)} judgements for {target} prompts")
        texts = self._decode(ids[:real])
        rows = {
            slot: (prompt_ids[j], ids[j], None if logprobs is None else logprobs[j], texts[j])
            for j, slot in enumerate(slots)
        }
        return rows, target - real

    def _targets(
        self, labels: list[bool | None], seed: int
    ) -> tuple[list[tuple[int, ...]], list[str | None]]:
        """What each verification slot judges. Unlabelled solutions (``None``: a sandbox
        error) are never judged: pairs and pointwise targets come from the labelled ones."""
        n_ver = self.rollout.judgements_per_problem
        usable = [i for i, y in enumerate(labels) if y is not None]
        sub = [bool(labels[i]) for i in usable]
        if self.rollout.mode == "pointrl":
            if not usable:
                return [], []
            return [(usable[i],) for i in pointwise_targets(sub, n_ver, seed)], [None] * n_ver
        plan = build_training_pairs(sub, n_ver, seed, mixed_only=self.rollout.pairs == "mixed_only")
        pairs = [tuple(usable[i] for i in p) for p in plan.pairs]
        kinds = list(plan.kinds)
        if len(pairs) > n_ver or len(kinds) != len(pairs):
            raise RolloutError(
                f"pair plan has {len(pairs)} pairs / {len(kinds)} kinds for {n_ver} slots"
            )
        for (a, b), kind in zip(pairs, kinds, strict=True):
            if not (labels[a] or labels[b]):
                raise RolloutError(f"pair plan holds an incorrect-incorrect pair ({a}, {b})")
            if kind not in ("correct_incorrect", "correct_correct"):
                raise RolloutError(f"unknown pair kind {kind!r}")
        return pairs, kinds

    def _assemble(
        self,
        groups: list[_Group],
        judge_rows: dict[tuple[int, int], tuple[list[int], list[int], list[float] | None, str]],
    ) -> dict[str, Any]:
        """TRL's columns, group by group in ``group_layout`` order, with the extra ones."""
        rows = _Rows(self.temperatures)
        self.class_weights = self._class_weights(groups) if self.reward.class_balance else None
        g_gen, g_ver = (
            self.rollout.solutions_per_problem,
            self.rollout.judgements_per_problem,
        )
        for k, grp in enumerate(groups):
            for i, (ids, res) in enumerate(zip(grp.solution_ids, grp.results, strict=True)):
                lp = grp.solution_logprobs[i] if grp.solution_logprobs is not None else None
                record = self._solution_record(grp, ids, res)
                mask = 0 if record.sample_type == UNLABELLED else 1
                rows.add(record, grp.prompt_ids, ids, lp, mask, f"solution {i}: {res.status}")
            layout = group_layout(g_gen, g_ver, len(grp.judged))
            for slot, kind in enumerate(layout[g_gen:]):
                if kind == NO_PAIR:
                    record = RowRecord(grp.index, NO_PAIR, None, task_id=grp.task.task_id)
                    rows.add(
                        record, grp.prompt_ids, [self.eos_token_id], None, 0, "no eligible pair"
                    )
                    continue
                prompt, ids, lp, text = judge_rows[(k, slot)]
                record = self._judgement_record(grp, slot, ids, text)
                rows.add(record, prompt, ids, lp, 1, _judge_detail(record))
        has_logprobs = all(grp.solution_logprobs is not None for grp in groups)
        return rows.columns(has_logprobs)

    @staticmethod
    def _class_weights(groups: list[_Group]) -> tuple[float, float]:
        """Label weights over every solution judged in this step (each time it is judged)."""
        labels = [bool(grp.results[i].passed) for grp in groups for p in grp.judged for i in p]
        return class_balance_weights(labels)

    def _solution_record(self, grp: _Group, ids: list[int], res: ExecResult) -> RowRecord:
        if res.status == "sandbox_error":  # infrastructure: no label, no reward, no gradient
            return RowRecord(
                group=grp.index,
                sample_type=UNLABELLED,
                reward=None,
                completion_tokens=len(ids),
                task_id=grp.task.task_id,
                exec_status=res.status,
            )
        return RowRecord(
            group=grp.index,
            sample_type=SOLUTION,
            reward=1.0 if res.passed else 0.0,
            completion_tokens=len(ids),
            task_id=grp.task.task_id,
            passed=res.passed,
            exec_status=res.status,
        )

    def _judgement_record(self, grp: _Group, slot: int, ids: list[int], text: str) -> RowRecord:
        """The judgement in ``slot``: its parsed ratings (or why not) and its reward."""
        judged = grp.judged[slot]
        labels = tuple(bool(grp.results[i].passed) for i in judged)
        parsed = parse_pair_ratings(text) if len(judged) == 2 else parse_rating(text)
        if isinstance(parsed, RatingFailure):
            ratings, failure = None, parsed.reason
        else:
            ratings, failure = (parsed if isinstance(parsed, tuple) else (parsed,)), None
        reward = verification_reward(
            ratings if ratings is not None else parsed,
            labels,
            threshold=self.reward.threshold,
            normalisation=self.reward.normalisation,
            class_weights=self.class_weights,
        )
        return RowRecord(
            group=grp.index,
            sample_type=JUDGEMENT,
            reward=reward,
            completion_tokens=len(ids),
            task_id=grp.task.task_id,
            judged=judged,
            labels=labels,
            ratings=ratings,
            parse_failure=failure,
            pair_kind=grp.pair_kinds[slot],
        )

    def _decode(self, ids: list[list[int]]) -> list[str]:
        return [self.decode(x) for x in ids]


class _Rows:
    """TRL's per-row columns as they are built, the record of each row among them."""

    def __init__(self, temperatures: Mapping[str, float]) -> None:
        self.temperatures = temperatures
        self.out: dict[str, list[Any]] = {
            name: []
            for name in (
                "prompt_ids",
                "completion_ids",
                "logprobs",
                "env_mask",
                RECORD_COLUMN,
                TEMPERATURE_COLUMN,
                "pairrl_detail",
            )
        }

    def add(
        self,
        record: RowRecord,
        prompt: list[int],
        completion: list[int],
        logprobs: list[float] | None,
        mask: int,
        detail: str,
    ) -> None:
        """One row; ``mask`` 0 keeps its tokens out of the loss (TRL's ``env_mask``)."""
        record.check()
        out = self.out
        out["prompt_ids"].append(prompt)
        out["completion_ids"].append(completion)
        out["logprobs"].append(logprobs if logprobs is not None else [0.0] * len(completion))
        out["env_mask"].append([mask] * len(completion))
        out[RECORD_COLUMN].append(record)
        out[TEMPERATURE_COLUMN].append(self.temperatures[record.sample_type])
        out["pairrl_detail"].append(detail)

    def columns(self, has_logprobs: bool) -> dict[str, Any]:
        """The dict TRL takes from a ``rollout_func`` (``logprobs`` None without an engine's)."""
        result: dict[str, Any] = dict(self.out)
        if not has_logprobs:
            result["logprobs"] = None
        return result


def _prompt_key(prompt: Any) -> str:
    """The dataset prompt's identity: the last user message's text (or the raw string)."""
    if isinstance(prompt, str):
        return prompt
    return str(prompt[-1]["content"])


def _judge_detail(record: RowRecord) -> str:
    """The completions table's line for a judgement: what was judged, and the verdict."""
    names = "AB" if len(record.judged) == 2 else "X"
    parts = [
        f"{n}=sol{i}({'pass' if y else 'fail'})"
        for n, i, y in zip(names, record.judged, record.labels, strict=True)
    ]
    verdict = (
        f"ratings {record.ratings}"
        if record.ratings is not None
        else f"unparsed: {record.parse_failure}"
    )
    return " ".join(parts) + f" -> {verdict}"


def _padded_count(real: int, trainer: Any) -> int:
    """How many judgement prompts this process generates.

    With several processes, every process makes the same generation calls with the same
    count (the max over processes, at least 1): TRL's vLLM server mode slices results by
    an equal per-process count, and ZeRO-3 / FSDP gather weights collectively inside
    ``generate``. Extra prompts are fillers whose outputs are dropped.
    """
    accelerator = getattr(trainer, "accelerator", None)
    if accelerator is None or accelerator.num_processes == 1:
        return real
    import torch

    count = torch.tensor([real], device=accelerator.device)
    return max(1, int(accelerator.gather(count).max().item()))
