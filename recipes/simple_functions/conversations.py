"""The warm start's data: the model's own solutions, labelled by execution.

An instruction-tuned model can often write a simple function but rarely stops after it
(it adds usage examples and tests that crash), and it has never seen the rating tags. The
warm start teaches the two formats, not the answers:

1. the untrained model samples ``n`` solutions per warm-start task (``sample_completions``);
2. the first python block of each is cut out and run against the hidden tests
   (``pairrl.rewards.code_extract.first_code_block``, ``label_blocks``): a correct first
   block followed by broken code is a correct function in the wrong format;
3. ``build_conversations``: each task's distinct passing blocks become solution targets (the
   block alone), and pairs and single blocks of the task, passing and failing, become
   judgements whose ratings are the execution labels (9 correct, 1 incorrect), and single
   blocks become answers to the A/B question (A correct, B incorrect). A task
   with no passing sample gives no solution target: the model is never shown an answer
   it did not write.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pairrl.recipes.simple_functions.prompts import (
    pairwise_judgement_text,
    pointwise_ab_text,
    pointwise_judgement_text,
    solution_text,
)
from pairrl.rewards.code_extract import first_code_block
from pairrl.rewards.tasks import Task
from pairrl.rollout.prompt_kit import Messages, PromptKit

__all__ = [
    "LabelledBlock",
    "build_conversations",
    "label_blocks",
    "sample_completions",
]

SAMPLE_CHUNK = 16  # prompts per generate call: a progress line after each


@dataclass(frozen=True)
class LabelledBlock:
    """One distinct first code block a task's samples produced, and whether it passed."""

    code: str
    passed: bool


def sample_completions(
    model: str,
    tasks: Sequence[Task],
    kit: PromptKit,
    *,
    n: int,
    temperature: float,
    max_tokens: int,
    seed: int,
    engine: str,
    dtype: str = "auto",
    stage: str = "warm start",
) -> list[list[str]]:
    """``n`` sampled solutions per task from ``model`` (a folder, ``.gguf`` file or
    ``smollm2``), with ``engine`` ``vllm`` (in-process) or ``hf`` (transformers) in
    ``dtype`` (``auto``: ``pairrl.cpu_dtype.local_dtype``), in a child process, so that the
    engine's memory is the system's again before training starts; failed samples are empty
    strings. ``stage`` names the work in the progress lines."""
    import multiprocessing

    from pairrl.child_process import start_worker
    from pairrl.cpu_dtype import local_dtype

    prompts = [kit.generation(task) for task in tasks]
    settings = {"temperature": temperature, "max_tokens": max_tokens, "seed": seed}
    dtype = local_dtype(dtype)
    started = time.perf_counter()
    # the sampler ends with this process, however it ends (pairrl.child_process)
    spawn = multiprocessing.get_context("spawn")
    with spawn.Pool(1, initializer=start_worker, initargs=(os.getpid(),)) as pool:
        texts = pool.apply(_sample, (model, prompts, n, settings, engine, dtype, stage))
    print(
        f"[pairrl] {stage}: sampled {n} x {len(tasks)} solutions with {engine} ({dtype}) in "
        f"{time.perf_counter() - started:.0f} s (start-up included)",
        flush=True,
    )
    return texts


def _sample(
    model: str,
    prompts: list[Any],
    n: int,
    settings: dict[str, Any],
    engine: str,
    dtype: str,
    stage: str,
) -> list[list[str]]:
    from pairrl.rollout.samplers.base import SamplingParams

    sampler: Any
    if engine == "vllm":
        from pairrl.rollout.samplers import VLLMSampler

        sampler = VLLMSampler(model, dtype=dtype, seed=settings["seed"])
    else:
        from pairrl.rollout.samplers import HFSampler

        sampler = HFSampler.from_pretrained(model, dtype=dtype, batch_size=64)
    from pairrl.progress import bar

    sampling = SamplingParams(**settings)
    texts: list[list[str]] = []
    with bar(f"{stage}: sample", len(prompts)) as shown:
        for start in range(0, len(prompts), SAMPLE_CHUNK):
            chunk = sampler.generate(prompts[start : start + SAMPLE_CHUNK], n, sampling)
            texts += [[c.text if c.error is None else "" for c in row] for row in chunk]
            shown.update(len(texts))
    return texts


def label_blocks(
    tasks: Sequence[Task], completions: Sequence[Sequence[str]], executor: Any
) -> list[list[LabelledBlock]]:
    """Each task's distinct first code blocks, labelled by its hidden tests (``executor``:
    ``pairrl.rewards.Executor``); samples without a block are dropped."""
    from pairrl.rewards.results import ExecJob

    jobs, owners = [], []
    for index, (task, texts) in enumerate(zip(tasks, completions, strict=True)):
        blocks = dict.fromkeys(b for b in map(first_code_block, texts) if b is not None)
        for number, code in enumerate(blocks):
            jobs.append(ExecJob(task=task, code=code, candidate_id=str(number)))
            owners.append(index)
    results = list(executor.run(jobs)) if jobs else []
    labelled: list[list[LabelledBlock]] = [[] for _ in tasks]
    for job, owner, result in zip(jobs, owners, results, strict=True):
        labelled[owner].append(LabelledBlock(job.code or "", bool(result.passed)))
    return labelled


def build_conversations(
    tasks: Sequence[Task],
    labelled: Sequence[Sequence[LabelledBlock]],
    kit: PromptKit,
    *,
    seed: int,
    solutions_per_task: int,
    pairs_per_task: int,
    pointwise_per_task: int,
    ab_per_task: int = 0,
) -> list[Messages]:
    """Solution, pairwise, pointwise and A/B conversations (see the module docstring),
    shuffled. Pairs are drawn from distinct blocks, mixed (one correct, one not) when the
    task has both, in both orders across draws."""
    rng = random.Random(seed)
    out: list[Messages] = []
    for task, blocks in zip(tasks, labelled, strict=True):
        passing = [b for b in blocks if b.passed]
        for block in passing[:solutions_per_task]:
            answer = {"role": "assistant", "content": solution_text(block.code)}
            out.append([*kit.generation(task), answer])
        for first, second in _pairs(blocks, pairs_per_task, rng):
            prompt = kit.pairwise(task, solution_text(first.code), solution_text(second.code))
            target = pairwise_judgement_text(first.passed, second.passed)
            out.append([*prompt, {"role": "assistant", "content": target}])
        for block in rng.sample(list(blocks), min(pointwise_per_task, len(blocks))):
            prompt = kit.pointwise(task, solution_text(block.code))
            out.append([*prompt, {"role": "assistant", "content": pointwise_judgement_text(block.passed)}])  # fmt: skip
        for block in rng.sample(list(blocks), min(ab_per_task, len(blocks))):
            prompt = kit.pointwise_ab(task, solution_text(block.code))
            out.append([*prompt, {"role": "assistant", "content": pointwise_ab_text(block.passed)}])  # fmt: skip
    rng.shuffle(out)
    return out


def _pairs(
    blocks: Sequence[LabelledBlock], count: int, rng: random.Random
) -> list[tuple[LabelledBlock, LabelledBlock]]:
    """``count`` ordered pairs of distinct blocks: mixed ones when there are both labels,
    else any two (a judge must also rate two correct or two wrong solutions alike)."""
    if len(blocks) < 2:
        return []
    right = [b for b in blocks if b.passed]
    wrong = [b for b in blocks if not b.passed]
    pairs = []
    for _ in range(count):
        if right and wrong and rng.random() < 0.75:
            pair = (rng.choice(right), rng.choice(wrong))
            pairs.append(pair if rng.random() < 0.5 else pair[::-1])
        else:
            first, second = rng.sample(list(blocks), 2)
            pairs.append((first, second))
    return pairs
