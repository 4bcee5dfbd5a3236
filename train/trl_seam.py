"""Every private symbol of TRL (and of transformers' ``Trainer``) that pairrl touches.

pairrl builds on ``trl.GRPOTrainer`` through its public hooks (``rollout_func``, reward
functions, callbacks) and, where those cannot express PairRL, through the private symbols
below. A TRL release may rename or reshape any of them without notice, so each is pinned
by ``tests/test_trl_seam.py``: it fails, naming the symbol and where pairrl uses it, when
the installed release changes one (TRL is pinned in ``requirements/constraints.txt``).

Methods (``owner.name(params...)``: pairrl overrides or calls them with these parameters):

* ``GRPOTrainer._generate_and_score_completions(self, inputs)``: overridden; TRL's batch
  with PairRL's advantages in place of TRL's (``train/trainer.py``).
* ``GRPOTrainer._get_per_token_logps_and_entropies(self, model, input_ids, attention_mask,
  logits_to_keep, batch_size, compute_entropy, compute_aux_loss, ...)``: overridden; the
  log-probs per padding bucket and row chunk, each row at its own temperature.
* ``GRPOTrainer._generate_single_turn(self, prompt_ids, images, multimodal_fields,
  num_generations, ...)``: called; TRL's one generation path, per phase
  (``rollout/trl_generation.py``).
* ``Trainer._get_train_sampler(self, dataset)``: overridden; the shuffle of each pass the
  same after a resume (``train/resume.py``).
* ``Trainer._save_checkpoint(self, model, trial)`` and ``Trainer._get_output_dir(self,
  trial)``: overridden; checkpoints staged and renamed into place (``train/checkpoints.py``).
* ``VLLMGeneration._iter_named_params(self)``: called; TRL's weight iteration, fed to the
  CPU weight sync (``train/vllm_cpu.py``).

Attributes (set in ``__init__``; pairrl reads or writes them):

* ``GRPOTrainer._metrics``: ``{"train": defaultdict(list), "eval": ...}``; PairRL's step
  metrics appended (``train/trainer.py``).
* ``GRPOTrainer._logs["advantages"]``: the completions table's advantage column; TRL's
  group-mean values replaced with PairRL's.
* ``GRPOTrainer.generation_config``, ``generation_kwargs``, ``use_vllm``,
  ``vllm_generation`` (its ``temperature``, ``top_p``, ``max_completion_length``):
  swapped per phase (``rollout/trl_generation.py``).
* ``trl.generation.vllm_generation.LLM``: the engine class, replaced while the trainer is
  built for vLLM's CPU build (``train/vllm_cpu.py``).

Behaviour (text in a method's source):

* ``GRPOTrainer._generate_and_score_completions`` puts the ``rollout_func``'s extra columns
  on the batch's rows (``inputs``), a list's item per row and any other value as it is: the
  trainer reads each row's record, temperature and the rollout's statistics from there
  (``train/trainer.py``). TRL documents only that the extra columns reach the reward
  functions.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ATTRIBUTES", "BEHAVIOURS", "METHODS", "PinnedMethod"]


@dataclass(frozen=True)
class PinnedMethod:
    """A private method: its owner (``module:Class``), name, and the leading parameters
    pairrl passes or receives, in order."""

    owner: str
    name: str
    params: tuple[str, ...]
    used_in: str


METHODS: tuple[PinnedMethod, ...] = (
    PinnedMethod(
        "trl:GRPOTrainer", "_generate_and_score_completions", ("self", "inputs"),
        "train/trainer.py",
    ),
    PinnedMethod(
        "trl:GRPOTrainer",
        "_get_per_token_logps_and_entropies",
        ("self", "model", "input_ids", "attention_mask", "logits_to_keep", "batch_size",
         "compute_entropy", "compute_aux_loss"),
        "train/trainer.py",
    ),
    PinnedMethod(
        "trl:GRPOTrainer",
        "_generate_single_turn",
        ("self", "prompt_ids", "images", "multimodal_fields", "num_generations"),
        "rollout/trl_generation.py",
    ),
    PinnedMethod("trl:GRPOTrainer", "_get_train_sampler", ("self", "dataset"), "train/trainer.py"),
    PinnedMethod(
        "trl:GRPOTrainer", "_save_checkpoint", ("self", "model", "trial"), "train/checkpoints.py"
    ),
    PinnedMethod("trl:GRPOTrainer", "_get_output_dir", ("self", "trial"), "train/checkpoints.py"),
    PinnedMethod(
        "trl.generation.vllm_generation:VLLMGeneration", "_iter_named_params", ("self",),
        "train/vllm_cpu.py",
    ),
)  # fmt: skip

# (owner, text its __init__ holds, where pairrl uses it)
ATTRIBUTES: tuple[tuple[str, str, str], ...] = (
    ("trl:GRPOTrainer", "self._metrics = {", "train/trainer.py"),
    ("trl:GRPOTrainer", "self._logs = {", "train/trainer.py"),
    ("trl:GRPOTrainer", '"advantages": deque(', "train/trainer.py"),
    ("trl:GRPOTrainer", "self.generation_config = ", "rollout/trl_generation.py"),
    ("trl:GRPOTrainer", "self.generation_kwargs = ", "rollout/trl_generation.py"),
    ("trl:GRPOTrainer", "self.use_vllm = ", "rollout/trl_generation.py"),
    ("trl:GRPOTrainer", "self.vllm_generation = ", "rollout/trl_generation.py"),
    ("trl.generation.vllm_generation:VLLMGeneration", "self.temperature = ",
     "rollout/trl_generation.py"),
    ("trl.generation.vllm_generation:VLLMGeneration", "self.top_p = ",
     "rollout/trl_generation.py"),
    ("trl.generation.vllm_generation:VLLMGeneration", "self.max_completion_length = ",
     "rollout/trl_generation.py"),
)  # fmt: skip

# (owner, method, text its source holds, where pairrl relies on it)
BEHAVIOURS: tuple[tuple[str, str, str, str], ...] = (
    ("trl:GRPOTrainer", "_generate_and_score_completions", "inp[key] = values[i]",
     "train/trainer.py"),
    ("trl:GRPOTrainer", "_generate_and_score_completions", "inp[key] = values\n",
     "train/trainer.py"),
)  # fmt: skip
