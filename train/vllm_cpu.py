"""vLLM colocate training on vLLM's CPU build: the engine settings and the weight sync.

The one place where CPU differs from GPU; :class:`~pairrl.train.trainer.PairRLTrainer`
applies it only when TRL runs vLLM in colocate mode and vLLM's platform is the CPU
(:func:`cpu_colocate`), so GPU runs take TRL's own path untouched.

Engine. TRL builds ``vllm.LLM`` itself (``VLLMGeneration._init_vllm``) with no ``dtype``
and chunked prefill on. On CPU, ``dtype="auto"`` makes a float32 checkpoint bfloat16
(vLLM's log-probabilities then drift from the float32 trainer's), chunked prefill kills
the engine on seeded requests, and torch.compile costs ~30 s of start-up; so the ``LLM``
that TRL constructs gets ``dtype`` = the trainer's, ``enable_chunked_prefill=False`` (with
a batch budget of at least the context length, which vLLM then requires) and
``enforce_eager=True``. The CPU backend's environment defaults (KV cache size) are set
before, and ``torch.set_num_threads``, which the in-process CPU worker disables for the
rest of the process, is put back after.

Weight sync. TRL's colocate sync calls ``model.load_weights([(name, param)])`` for each
parameter; on CPU vLLM repacks every linear weight into its GEMM kernel's own format after
loading and leaves ``layer.weight`` an empty parameter without a ``weight_loader``, so
that call fails (``'Parameter' object has no attribute 'weight_loader'``), and writing
into the old tensor would not reach the kernel anyway. :func:`reload_weights` pushes the
weights through the worker's ``reload_weights`` instead, which restores the
checkpoint-format parameters, loads with the real weight loaders and repacks layer by
layer; then it repacks a tied ``lm_head`` from the new embedding (it loads nothing of its
own, so its packed copy would stay the initial embedding and the logits stale). After each
sync, :func:`sync_check` compares the two engines' log-probabilities of one fixed
conversation; the trainer logs it (``vllm/sync_max_abs_logprob_diff``), so weights that
did not reach the kernels show up as a number, not as silently off-policy samples.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable, Iterator
from typing import Any

import torch

__all__ = [
    "cpu_colocate",
    "patch_weight_sync",
    "reload_weights",
    "sync_check",
    "wants_cpu_colocate",
]


def wants_cpu_colocate(args: Any) -> bool:
    """Whether TRL will run vLLM colocated on vLLM's CPU backend for these GRPOConfig args."""
    if not getattr(args, "use_vllm", False) or getattr(args, "vllm_mode", None) != "colocate":
        return False
    from pairrl.rollout.samplers.vllm import apply_cpu_env, installed_vllm, vllm_is_cpu

    build = installed_vllm()
    if build is None:
        return False
    if build.cpu:
        apply_cpu_env(in_process=True)  # before vLLM reads it
    return vllm_is_cpu()


@contextlib.contextmanager
def cpu_colocate(args: Any, dtype: str = "float32") -> Iterator[bool]:
    """Around the trainer's construction: the CPU engine settings (see the module
    docstring) when :func:`wants_cpu_colocate`; yields whether it applied them."""
    if not wants_cpu_colocate(args):
        yield False
        return
    import trl.generation.vllm_generation as vllm_generation

    from pairrl.rollout.samplers.vllm import keep_set_num_threads

    original = vllm_generation.LLM

    def llm(*a: Any, **kwargs: Any) -> Any:
        # without chunked prefill a batch holds a whole sequence: room for the longest one,
        # the model's own context when engine.max_model_len leaves it open
        max_len = kwargs.get("max_model_len") or _model_context(
            kwargs.get("model", a[0] if a else None)
        )
        kwargs.update(dtype=dtype, enforce_eager=True, enable_chunked_prefill=False)
        kwargs["max_num_batched_tokens"] = max(kwargs.get("max_num_batched_tokens") or 0, max_len)
        return original(*a, **kwargs)

    vllm_generation.LLM = llm
    try:
        with keep_set_num_threads():
            yield True
    finally:
        vllm_generation.LLM = original


def _model_context(model: Any) -> int:
    """The model folder's context length (``max_position_embeddings``; 0 when unknown)."""
    if model is None:
        return 0
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(str(model))
    return int(getattr(config, "max_position_embeddings", 0) or 0)


def _retie_lm_head(model: torch.nn.Module) -> bool:
    """Repack a tied lm_head's GEMM copy from the (new) shared embedding weight."""
    lm_head = getattr(model, "lm_head", None)
    embed = getattr(getattr(model, "model", None), "embed_tokens", None)
    if lm_head is None or embed is None:
        return False
    if getattr(lm_head, "weight", None) is not getattr(embed, "weight", None):
        return False  # untied: reload_weights loaded and repacked lm_head itself
    quant_method = getattr(lm_head, "quant_method", None)
    if quant_method is None:
        return False
    quant_method.process_weights_after_loading(lm_head)
    return True


def reload_weights(llm: Any, named_params: Iterable[tuple[str, torch.Tensor]]) -> bool:
    """Load ``(name, tensor)`` pairs (HF names) into an in-process CPU ``vllm.LLM``, repack,
    re-tie, and drop the prefix cache. Returns whether a tied lm_head was repacked."""
    from vllm.config import set_current_vllm_config

    worker = llm.llm_engine.model_executor.driver_worker
    worker.reload_weights(weights_iterator=named_params, is_checkpoint_format=True)
    model = worker.model_runner.get_model()
    with set_current_vllm_config(worker.vllm_config), torch.no_grad():
        retied = _retie_lm_head(model)
    llm.reset_prefix_cache()
    return retied


@functools.cache
def _cpu_generation_class() -> type:
    from accelerate.utils import is_peft_model
    from trl.generation.vllm_generation import VLLMGeneration

    class CPUColocateGeneration(VLLMGeneration):
        """TRL's ``VLLMGeneration`` whose colocate sync goes through :func:`reload_weights`."""

        syncs = 0
        sync_check: dict[str, float] | None = None

        def sync_weights(self) -> None:
            if self.mode != "colocate":
                super().sync_weights()
                return
            # TRL's own iteration: PEFT merge, DeepSpeed/FSDP gathers, vLLM parameter names.
            # Sleep mode does nothing on CPU (the worker ignores it), so it needs no handling.
            params = self._iter_named_params()
            if is_peft_model(self.model):
                # The reload may hold a tensor until its layer is complete; clone, so that
                # PEFT's unmerge after the iteration cannot change it first.
                params = ((name, t.detach().clone()) for name, t in params)
            reload_weights(self.llm, params)
            self.syncs += 1
            self.sync_check = sync_check(self)

    return CPUColocateGeneration


PROBE = [
    {"role": "user", "content": "Write a function that returns the sum of a list."},
    {"role": "assistant", "content": "def f(xs):\n    return sum(xs)"},
]


def sync_check(generation: Any) -> dict[str, float] | None:
    """After a sync: vLLM's and the trainer's log-probabilities of one fixed conversation
    (``PROBE``), token by token: ``max_abs_diff`` between them and the trainer's
    ``mean_logprob`` (which moves as the weights train). None where the trainer's model
    cannot run a forward of its own (several processes, sharded weights)."""
    accelerator = generation.accelerator
    if accelerator.num_processes > 1 or getattr(accelerator.state, "deepspeed_plugin", None):
        return None
    from vllm import SamplingParams

    tokenizer = generation.processing_class
    text = tokenizer.apply_chat_template(PROBE, tokenize=False)
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    params = SamplingParams(max_tokens=1, temperature=1.0, prompt_logprobs=0)
    (out,) = generation.llm.generate([{"prompt_token_ids": ids}], params, use_tqdm=False)
    engine = torch.tensor([out.prompt_logprobs[i][ids[i]].logprob for i in range(1, len(ids))])
    model = accelerator.unwrap_model(generation.model)
    training = model.training
    model.eval()
    with torch.no_grad():
        logits = model(torch.tensor([ids], device=accelerator.device)).logits[0].float()
    model.train(training)
    trainer = torch.log_softmax(logits, -1)[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]
    return {
        "max_abs_diff": float((engine - trainer.cpu()).abs().max()),
        "mean_logprob": float(trainer.mean()),
    }


def patch_weight_sync(trainer: Any) -> bool:
    """After construction: give the trainer's vLLM generation the CPU weight sync. Returns
    whether it did (only for colocate on the CPU backend)."""
    generation = getattr(trainer, "vllm_generation", None)
    if generation is None or not wants_cpu_colocate(trainer.args):
        return False
    cls = _cpu_generation_class()
    if not isinstance(generation, cls):
        generation.__class__ = cls
    return True
