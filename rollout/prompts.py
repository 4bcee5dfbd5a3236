"""Prompt builders (generation, pairwise and pointwise judging, aggregation) and the
thinking budget.

Every builder returns chat messages; the sampler applies the model's chat template.
Wording follows the paper's description (see docs/design.md, "Facts from the paper"): the
pairwise code reviewer traces both solutions on test cases including edge cases, prefers
the more robust one when both look correct, reasons first and ends with
``<rating_A>k</rating_A>`` and ``<rating_B>k</rating_B>`` (10 correct and robust, 5
borderline, 1 incorrect); the math variant rates the final answer only; the pointwise judge
emits one ``<rating>k</rating>``; the pointwise A/B judge answers one letter, read from the
A/B log-probabilities. The aggregation prompt (recursive self-aggregation) shows a problem
and candidate solutions and asks for one improved solution in the generation format.

Thinking budget (:func:`generate_with_thinking_budget`): the model thinks for at most B
tokens (stopping early if it closes thinking itself), then ``</think>`` is forced and the
answer is generated as a continuation of that assistant message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from pairrl.rewards import extract_code
from pairrl.rollout.samplers.base import (
    ChatMessage,
    Completion,
    Prompt,
    Sampler,
    SamplerError,
    SamplingParams,
)

Domain = Literal["code", "math"]
DOMAINS: tuple[str, ...] = ("code", "math")
THINK_CLOSE = "</think>"
AFTER_THINK = "\n\n"  # what thinking models write between </think> and the answer

CODE_GENERATION = (
    "Solve the following programming problem in Python.\n\n"
    "{problem}\n\n"
    "Reason step by step about the problem first. Then give your complete solution as one "
    "fenced code block:\n```python\n# your code\n```"
)

MATH_GENERATION = (
    "Solve the following math problem.\n\n"
    "{problem}\n\n"
    "Reason step by step, then put your final answer within \\boxed{{}}."
)

_SCALE = (
    "10 means {ten}, 5 means borderline (you are unsure), and 1 means {one}. "
    "Use any integer from 1 to 10."
)
_CODE_SCALE = _SCALE.format(ten="correct and robust", one="incorrect")
_MATH_SCALE = _SCALE.format(ten="the final answer is correct", one="the final answer is wrong")

PAIRWISE_CODE = (
    "You are an expert code reviewer. Compare two candidate solutions, Solution A and "
    "Solution B, to the programming problem below.\n\n"
    "Trace each solution mentally on several test cases, including edge cases (empty or "
    "minimal inputs, boundaries, large values, special characters). Decide whether each "
    "solution is correct. If both look correct, prefer the more robust one.\n\n"
    "Reason first. Then rate each solution from 1 to 10: " + _CODE_SCALE + "\n"
    "End your answer with exactly these two lines:\n"
    "<rating_A>k</rating_A>\n<rating_B>k</rating_B>\n\n"
    "## Problem\n{problem}\n\n## Solution A\n{solution_a}\n\n## Solution B\n{solution_b}"
)

PAIRWISE_MATH = (
    "You are an expert mathematician reviewing two candidate solutions, Solution A and "
    "Solution B, to the math problem below.\n\n"
    "Judge the final answer of each solution only: work out the problem yourself and check "
    "each final answer against your own; the style of the reasoning does not matter.\n\n"
    "Reason first. Then rate each final answer from 1 to 10: " + _MATH_SCALE + "\n"
    "End your answer with exactly these two lines:\n"
    "<rating_A>k</rating_A>\n<rating_B>k</rating_B>\n\n"
    "## Problem\n{problem}\n\n## Solution A\n{solution_a}\n\n## Solution B\n{solution_b}"
)

POINTWISE_CODE = (
    "You are an expert code reviewer. Judge the candidate solution to the programming "
    "problem below.\n\n"
    "Trace it mentally on several test cases, including edge cases (empty or minimal "
    "inputs, boundaries, large values, special characters), and decide whether it is "
    "correct.\n\n"
    "Reason first. Then rate the solution from 1 to 10: " + _CODE_SCALE + "\n"
    "End your answer with exactly this line:\n<rating>k</rating>\n\n"
    "## Problem\n{problem}\n\n## Solution\n{solution}"
)

POINTWISE_MATH = (
    "You are an expert mathematician reviewing a candidate solution to the math problem "
    "below. Judge its final answer only: work out the problem yourself and check the final "
    "answer against your own.\n\n"
    "Reason first. Then rate the final answer from 1 to 10: " + _MATH_SCALE + "\n"
    "End your answer with exactly this line:\n<rating>k</rating>\n\n"
    "## Problem\n{problem}\n\n## Solution\n{solution}"
)

AGGREGATION_CODE = (
    "Below are candidate solutions to the programming problem. Some may be wrong. Read "
    "them, find their mistakes, and write one improved solution: combine what is right in "
    "them, or write a new one if none is right.\n\n"
    "## Problem\n{problem}\n\n{candidates}\n\n"
    "Reason step by step first. Then give your complete solution as one fenced code "
    "block:\n```python\n# your code\n```"
)

AGGREGATION_MATH = (
    "Below are candidate solutions to the math problem. Some may be wrong. Read them, find "
    "their mistakes, and write one improved solution: combine what is right in them, or "
    "solve it anew if none is right.\n\n"
    "## Problem\n{problem}\n\n{candidates}\n\n"
    "Reason step by step, then put your final answer within \\boxed{{}}."
)

POINTWISE_AB = (
    "## Problem\n{problem}\n\n## Solution\n{solution}\n\n"
    "Is this solution correct{what}?\nA) yes\nB) no\n"
    "Answer with a single letter, A or B."
)


def _check_domain(domain: str) -> None:
    if domain not in DOMAINS:
        raise ValueError(f"domain {domain!r} unknown; allowed: {list(DOMAINS)}")


def _user(text: str) -> list[ChatMessage]:
    return [{"role": "user", "content": text}]


def generation_messages(problem: str, domain: Domain = "code") -> list[ChatMessage]:
    """Ask for a solution: reasoning then one fenced python block (code) or ``\\boxed{}`` (math)."""
    _check_domain(domain)
    template = CODE_GENERATION if domain == "code" else MATH_GENERATION
    return _user(template.format(problem=problem.strip()))


def solution_for_judge(completion_text: str, domain: Domain = "code") -> str:
    """What a judge sees of a candidate.

    Code: the extracted program in a python fence; a completion with no code block is shown
    whole (it is a real candidate, typically incorrect, and the judge should see that).
    Math: the whole completion (the judge rates its final answer).
    """
    _check_domain(domain)
    if domain == "code":
        code = extract_code(completion_text)
        if code is not None:
            return f"```python\n{code.rstrip()}\n```"
    return completion_text.strip()


def pairwise_messages(
    problem: str, solution_a: str, solution_b: str, domain: Domain = "code"
) -> list[ChatMessage]:
    """The paper's pairwise judge prompt (solutions inserted verbatim)."""
    _check_domain(domain)
    template = PAIRWISE_CODE if domain == "code" else PAIRWISE_MATH
    return _user(
        template.format(problem=problem.strip(), solution_a=solution_a, solution_b=solution_b)
    )


def pointwise_messages(problem: str, solution: str, domain: Domain = "code") -> list[ChatMessage]:
    """The pointwise 1-10 rating prompt (``<rating>k</rating>``)."""
    _check_domain(domain)
    template = POINTWISE_CODE if domain == "code" else POINTWISE_MATH
    return _user(template.format(problem=problem.strip(), solution=solution))


def pointwise_ab_messages(
    problem: str, solution: str, domain: Domain = "code"
) -> list[ChatMessage]:
    """The yes/no prompt whose answer is read from the A (yes) / B (no) log-probabilities."""
    _check_domain(domain)
    what = "" if domain == "code" else " (is its final answer right)"
    return _user(POINTWISE_AB.format(problem=problem.strip(), solution=solution, what=what))


def aggregation_messages(
    problem: str, solutions: Sequence[str], domain: Domain = "code"
) -> list[ChatMessage]:
    """Recursive self-aggregation's prompt: the problem and candidate solutions (shown
    verbatim, numbered), asking for one improved solution in the generation format."""
    _check_domain(domain)
    template = AGGREGATION_CODE if domain == "code" else AGGREGATION_MATH
    shown = "\n\n".join(
        f"## Candidate {i}\n{text.strip()}" for i, text in enumerate(solutions, start=1)
    )
    return _user(template.format(problem=problem.strip(), candidates=shown))


def continuation(prompt: Prompt, assistant_text: str) -> Prompt:
    """``prompt`` followed by a partial assistant answer that the model will continue."""
    if isinstance(prompt, str):
        return prompt + assistant_text
    if prompt and prompt[-1]["role"] == "assistant":
        last = {**prompt[-1], "content": prompt[-1]["content"] + assistant_text}
        return [*prompt[:-1], last]
    return [*prompt, {"role": "assistant", "content": assistant_text}]


def think_prefixes(
    sampler: Sampler,
    prompts: Sequence[Prompt],
    n: int,
    sampling: SamplingParams,
    think_tokens: int,
) -> list[list[Completion]]:
    """Phase 1 of the thinking budget: up to ``think_tokens`` tokens of thinking.

    Each returned completion's text is the thinking *with* ``</think>`` and the blank line
    appended (forced when the budget ran out, restored when the model closed thinking
    itself and the stop string cut it), i.e. the assistant prefix to continue from.
    Completions that ended with end-of-sequence and no ``</think>`` are returned as they
    are, with ``matched_stop`` None and finish reason "stop": the model answered without
    thinking, and :func:`needs_answer` says so.
    """
    if think_tokens < 1:
        raise ValueError(f"think_tokens must be >= 1, got {think_tokens}")
    phase = replace(sampling, max_tokens=think_tokens, stop=(THINK_CLOSE,))
    rows = sampler.generate(prompts, n, phase)
    out: list[list[Completion]] = []
    for row in rows:
        closed = []
        for c in row:
            if c.error is None and (c.finish_reason == "length" or c.matched_stop == THINK_CLOSE):
                c = replace(c, text=c.text + THINK_CLOSE + AFTER_THINK, matched_stop=THINK_CLOSE)
            closed.append(c)
        out.append(closed)
    return out


def needs_answer(thinking: Completion) -> bool:
    """Whether a phase-1 completion still needs its answer generated."""
    return thinking.error is None and thinking.matched_stop == THINK_CLOSE


def generate_with_thinking_budget(
    sampler: Sampler,
    prompts: Sequence[Prompt],
    n: int,
    sampling: SamplingParams,
    think_tokens: int,
) -> list[list[Completion]]:
    """Think for at most ``think_tokens`` tokens, force ``</think>``, then answer.

    The answer phase uses ``sampling`` as given (its ``max_tokens`` is the answer budget,
    its stop strings apply to the answer only). The returned text is thinking +
    ``</think>`` + blank line + answer; ``token_ids`` / ``logprobs`` hold the *sampled*
    tokens of both phases (forced text has no sampled tokens), and the finish reason and
    any error are the answer phase's.
    """
    thinking = think_prefixes(sampler, prompts, n, sampling, think_tokens)
    jobs = [
        (p, s, continuation(prompts[p], c.text))
        for p, row in enumerate(thinking)
        for s, c in enumerate(row)
        if needs_answer(c)
    ]
    # The answer phase gets a seed of its own (its prompts differ from the thinking
    # phase's, so their streams differ anyway; the offset keeps the two phases' seeds apart
    # for a backend that takes a request's seed as given).
    answer_sampling = (
        sampling if sampling.seed is None else replace(sampling, seed=sampling.seed + 1)
    )
    answers = sampler.generate([job[2] for job in jobs], 1, answer_sampling) if jobs else []
    results = [list(row) for row in thinking]
    for (p, s, _), (answer,) in zip(jobs, answers, strict=True):
        results[p][s] = _join(thinking[p][s], answer)
    return results


def _join(thinking: Completion, answer: Completion) -> Completion:
    if answer.error is not None:
        reason = f"answer phase after thinking failed: {answer.error.reason}"
        return Completion.failed(SamplerError(answer.error.kind, reason))
    tops = None
    if thinking.top_logprobs is not None and answer.top_logprobs is not None:
        tops = thinking.top_logprobs + answer.top_logprobs
    return Completion(
        text=thinking.text + answer.text,
        token_ids=thinking.token_ids + answer.token_ids,
        logprobs=thinking.logprobs + answer.logprobs,
        finish_reason=answer.finish_reason,
        matched_stop=answer.matched_stop,
        top_logprobs=tops,
    )
