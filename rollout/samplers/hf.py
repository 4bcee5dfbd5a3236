"""HF transformers sampler: batched, left-padded decoding with our own loop (CPU or GPU).

Why our own loop rather than ``model.generate``: it gives per-row random generators (so a
seed gives a prompt the same random draws in any batch, alone or with others), the sampled
tokens' log-probabilities and top-k alternatives without keeping every step's full logits, and stop
strings with the OpenAI semantics (text cut before the stop, ``matched_stop`` reported).

Log-probabilities are ``log_softmax`` of the raw logits (temperature 1, no top-p), as vLLM
reports them by default; sampling itself uses temperature and nucleus (top-p) filtering.
Token ids include the end-of-sequence token when one was sampled and every token up to the
one that completed a stop string; the text excludes both.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from pairrl.cpu_dtype import cpu_dtype
from pairrl.model_source import resolve_model_path
from pairrl.rollout.samplers.base import (
    Completion,
    Prompt,
    SamplerError,
    SamplingParams,
    logaddexp,
    prompt_seeds,
    render_prompt,
    validate_prompts,
)


def _row_seed(prompt_seed: int, sample_index: int) -> int:
    """A per-row seed that depends only on (the prompt's seed, sample), not on batching."""
    return (prompt_seed * 1_000_003 + sample_index) % (2**63)


def nucleus_filter(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """Set to -inf every logit outside the smallest set whose probability reaches ``top_p``.

    The most likely token is always kept. Works on a (batch, vocab) tensor.
    """
    if top_p >= 1.0:
        return logits
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
    probs = torch.softmax(sorted_logits, dim=-1)
    # A token is dropped when the mass strictly before it already reaches top_p.
    mass_before = torch.cumsum(probs, dim=-1) - probs
    drop_sorted = mass_before >= top_p
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


def pick_tokens(
    logits: torch.Tensor,
    sampling: SamplingParams,
    generators: Sequence[torch.Generator],
    active: Sequence[bool],
) -> torch.Tensor:
    """One token per row of a (batch, vocab) tensor; rows not ``active`` (finished) get an
    arbitrary token.

    Each active row draws exactly what ``torch.multinomial(probs[b], 1, generator=g)``
    draws: for one sample that is ``argmax(probs / q)`` with ``q ~ Exp(1)`` from the row's
    generator, so the noise is drawn per row and the division and argmax run once for the
    batch. Finished rows draw nothing, which leaves the other rows' generators, and so
    their samples, unchanged.
    """
    if sampling.greedy:
        return logits.argmax(dim=-1)
    probs = torch.softmax(nucleus_filter(logits / sampling.temperature, sampling.top_p), -1)
    if not bool(torch.isfinite(probs).all()):
        raise ValueError("probability tensor contains inf or nan")
    noise = torch.ones_like(probs)
    for b, row_active in enumerate(active):
        if row_active:
            noise[b].exponential_(1, generator=generators[b])
    return (probs / noise).argmax(dim=-1)


class HFSampler:
    """A :class:`~rollout.samplers.base.Sampler` over an in-memory HF causal LM and tokenizer."""

    def __init__(self, model: Any, tokenizer: Any, *, batch_size: int = 16) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if tokenizer.pad_token_id is None:
            raise ValueError("tokenizer has no pad token; set tokenizer.pad_token first")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.device = next(model.parameters()).device
        eos = [tokenizer.eos_token_id]
        generation_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        if isinstance(generation_eos, int):
            eos.append(generation_eos)
        elif isinstance(generation_eos, list):
            eos.extend(generation_eos)
        self.eos_ids = frozenset(i for i in eos if i is not None)
        self.max_context = getattr(model.config, "max_position_embeddings", None)
        self._ids_by_string: dict[str, list[int]] | None = None

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path,
        *,
        device: str | None = None,
        dtype: str = "auto",
        batch_size: int = 16,
    ) -> HFSampler:
        """Load a model folder, hub id or ``.gguf`` file (its converted folder,
        ``pairrl.model_source``) with its tokenizer; padding on the left. On CPU ``dtype``
        ``auto`` follows ``pairrl.cpu_dtype`` (bfloat16 only where the CPU computes it
        natively); on a GPU it is transformers' (the checkpoint's)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = resolve_model_path(path)
        tokenizer = AutoTokenizer.from_pretrained(path)
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        target = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if target == "cpu":
            dtype = cpu_dtype(dtype)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
        return cls(model.to(target), tokenizer, batch_size=batch_size)

    # ---- prompts ---------------------------------------------------------------------------

    def render(self, prompt: Prompt) -> str:
        """The exact text the model sees for ``prompt`` (chat template applied to messages)."""
        return render_prompt(self.tokenizer, prompt)

    def encode(self, prompt: Prompt) -> list[int]:
        """Token ids of ``prompt``; raw strings get the tokenizer's special tokens (e.g. BOS)."""
        text = self.render(prompt)
        return list(self.tokenizer(text, add_special_tokens=isinstance(prompt, str))["input_ids"])

    def _left_pad(self, rows: Sequence[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for b, row in enumerate(rows):
            ids[b, width - len(row) :] = torch.tensor(row, dtype=torch.long)
            mask[b, width - len(row) :] = 1
        return ids.to(self.device), mask.to(self.device)

    # ---- generation ------------------------------------------------------------------------

    def generate(
        self,
        prompts: Sequence[Prompt],
        n: int,
        sampling: SamplingParams,
        *,
        seeds: Sequence[int] | None = None,
    ) -> list[list[Completion]]:
        """``n`` completions per prompt; prompts too long for the context fail with a reason.
        ``seeds``: each prompt's seed as given (a server's request seed) instead of
        :func:`prompt_seeds` of ``sampling.seed``."""
        validate_prompts(prompts)
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        if seeds is None:
            base_seed = (
                sampling.seed
                if sampling.seed is not None
                else int(torch.randint(0, 2**31 - 1, (1,)).item())
            )
            seeds = prompt_seeds(base_seed, prompts)
        elif len(seeds) != len(prompts):
            raise ValueError(f"{len(seeds)} seeds for {len(prompts)} prompts")
        results: list[list[Completion | None]] = [[None] * n for _ in prompts]
        rows: list[tuple[int, int, list[int]]] = []
        for p, prompt in enumerate(prompts):
            ids = self.encode(prompt)
            if self.max_context is not None and len(ids) + sampling.max_tokens > self.max_context:
                error = SamplerError(
                    "invalid_request",
                    f"prompt of {len(ids)} tokens + max_tokens {sampling.max_tokens} exceeds "
                    f"the model context of {self.max_context}",
                )
                results[p] = [Completion.failed(error) for _ in range(n)]
                continue
            rows.extend((p, s, ids) for s in range(n))
        for start in range(0, len(rows), self.batch_size):
            chunk = rows[start : start + self.batch_size]
            row_seeds = [_row_seed(seeds[p], s) for p, s, _ in chunk]
            try:
                completions = self._decode([ids for _, _, ids in chunk], sampling, row_seeds)
            except (RuntimeError, ValueError) as exc:  # e.g. CUDA OOM: report, don't crash
                error = SamplerError("backend", f"{type(exc).__name__}: {exc}")
                completions = [Completion.failed(error) for _ in chunk]
            for (p, s, _), completion in zip(chunk, completions, strict=True):
                results[p][s] = completion
        return [[c for c in row if c is not None] for row in results]

    def _top(self, logprobs: torch.Tensor, k: int) -> dict[str, float]:
        values, indices = torch.topk(logprobs, k)
        top: dict[str, float] = {}
        for value, index in zip(values.tolist(), indices.tolist(), strict=True):
            token = self.tokenizer.decode([index], skip_special_tokens=False)
            # Several ids can decode to one string (byte fragments); their mass adds up.
            top[token] = logaddexp(top[token], value) if token in top else value
        return top

    @torch.no_grad()
    def _decode(
        self, prompt_rows: Sequence[list[int]], sampling: SamplingParams, seeds: list[int]
    ) -> list[Completion]:
        """Decode every left-padded prompt row together (KV cache, one token per step) until
        each has finished; one Completion per row, in order."""
        batch = len(prompt_rows)
        input_ids, mask = self._left_pad(prompt_rows)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        generators = [torch.Generator(device=self.device).manual_seed(s) for s in seeds]
        tokens: list[list[int]] = [[] for _ in range(batch)]
        logprobs: list[list[float]] = [[] for _ in range(batch)]
        tops: list[list[dict[str, float]]] = [[] for _ in range(batch)]
        finish: list[str | None] = [None] * batch
        cut: list[tuple[int, str] | None] = [None] * batch  # (text index, stop string)
        past = None
        step_ids, step_positions = input_ids, positions
        for step in range(sampling.max_tokens):
            out = self.model(
                input_ids=step_ids,
                attention_mask=mask,
                position_ids=step_positions,
                past_key_values=past,
                use_cache=True,
                logits_to_keep=1,  # the next token's row only, not one per prompt token
            )
            past = out.past_key_values
            logits = out.logits[:, -1, :].float()
            step_logprobs = torch.log_softmax(logits, dim=-1)
            active = [f is None for f in finish]
            picked = pick_tokens(logits, sampling, generators, active)
            picked_logprobs = step_logprobs.gather(1, picked.unsqueeze(1)).squeeze(1).tolist()
            for b, token in enumerate(picked.tolist()):
                if not active[b]:
                    continue
                tokens[b].append(token)
                logprobs[b].append(picked_logprobs[b])
                if sampling.top_logprobs:
                    tops[b].append(self._top(step_logprobs[b], sampling.top_logprobs))
                if token in self.eos_ids:
                    finish[b] = "stop"
                elif sampling.stop and (hit := self._find_stop(tokens[b], sampling.stop)):
                    finish[b], cut[b] = "stop", hit
                elif step + 1 == sampling.max_tokens:
                    finish[b] = "length"
            if all(f is not None for f in finish):
                break
            pad = torch.full_like(picked, self.tokenizer.pad_token_id)
            done = torch.tensor([f is not None for f in finish], device=self.device)
            step_ids = torch.where(done, pad, picked).unsqueeze(1)
            mask = torch.cat(
                [mask, torch.ones((batch, 1), dtype=mask.dtype, device=self.device)], 1
            )
            step_positions = step_positions[:, -1:] + 1
        return [
            self._completion(tokens[b], logprobs[b], tops[b], finish[b], cut[b], sampling)
            for b in range(batch)
        ]

    def _completion(
        self,
        token_ids: list[int],
        logprobs: list[float],
        tops: list[dict[str, float]],
        finish: str | None,
        cut: tuple[int, str] | None,
        sampling: SamplingParams,
    ) -> Completion:
        """One decoded row as a Completion; ``cut`` (text index, stop string) ends its text
        before the stop string that finished it."""
        text = self._text(token_ids)
        matched = None
        if cut is not None:
            index, matched = cut
            text = text[:index]
        return Completion(
            text=text,
            token_ids=token_ids,
            logprobs=logprobs,
            finish_reason=finish,  # type: ignore[arg-type]
            matched_stop=matched,
            top_logprobs=tops if sampling.top_logprobs else None,
        )

    def _text(self, token_ids: list[int]) -> str:
        """Decoded text without a trailing end-of-sequence token (special tokens kept)."""
        ids = token_ids[:-1] if token_ids and token_ids[-1] in self.eos_ids else token_ids
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    def _find_stop(self, token_ids: list[int], stops: tuple[str, ...]) -> tuple[int, str] | None:
        """Earliest stop string in the decoded text, as (index, stop), or None.

        Called after every token, so a stop can only have just completed: decoding a tail
        window (generous: a token may hold a partial character) keeps this O(window) per
        step; the full text is decoded only on a hit, to cut at the earliest occurrence.
        """
        window = 4 * max(len(stop) for stop in stops) + 8
        if len(token_ids) > window:
            tail = self.tokenizer.decode(token_ids[-window:], skip_special_tokens=False)
            if not any(stop in tail for stop in stops):
                return None
        text = self._text(token_ids)
        hits = [(text.find(stop), stop) for stop in stops if stop in text]
        return min(hits) if hits else None

    # ---- scoring ---------------------------------------------------------------------------

    def _vocab_by_string(self) -> dict[str, list[int]]:
        """Map each decoded token string to the ids that decode to it (built once)."""
        if self._ids_by_string is None:
            table: dict[str, list[int]] = {}
            for index in range(len(self.tokenizer)):
                token = self.tokenizer.decode([index], skip_special_tokens=False)
                table.setdefault(token, []).append(index)
            self._ids_by_string = table
        return self._ids_by_string

    @torch.no_grad()
    def next_token_logprobs(
        self, prompts: Sequence[Prompt], candidates: Sequence[str]
    ) -> list[dict[str, float] | SamplerError]:
        """Exact next-token log-probabilities of the candidates that are single tokens.

        A candidate's log-probability sums (log-sum-exp) over every vocabulary id that
        decodes to exactly that string; candidates no single token decodes to are absent.
        """
        validate_prompts(prompts)
        table = self._vocab_by_string()
        ids_of = {c: table[c] for c in dict.fromkeys(candidates) if c in table}
        results: list[dict[str, float] | SamplerError] = []
        encoded = [self.encode(p) for p in prompts]
        for start in range(0, len(encoded), self.batch_size):
            chunk = encoded[start : start + self.batch_size]
            try:
                input_ids, mask = self._left_pad(chunk)
                positions = (mask.cumsum(-1) - 1).clamp(min=0)
                logits = self.model(
                    input_ids=input_ids,
                    attention_mask=mask,
                    position_ids=positions,
                    logits_to_keep=1,
                ).logits[:, -1, :]
            except (RuntimeError, ValueError) as exc:
                error = SamplerError("backend", f"{type(exc).__name__}: {exc}")
                results.extend(error for _ in chunk)
                continue
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            for row in logprobs:
                results.append(
                    {c: float(torch.logsumexp(row[ids], dim=0)) for c, ids in ids_of.items()}
                )
        return results
