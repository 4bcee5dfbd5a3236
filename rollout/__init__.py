"""rollout: where samples come from, for training and for selection.

* the PairRL rollout TRL calls each step: ``pairrl_rollout`` (solutions, labels, pairs,
  judgements), its rows' layout (``layout``), pointwise targets and seeds
  (``judge_targets``), generation through TRL's trainer (``trl_generation``) and its
  config sections (``config``: the budget split, the verification reward, per-phase
  decoding);
* the samplers the benchmark and ``pairrl select`` use (``samplers/``: transformers, vLLM,
  an OpenAI-compatible endpoint) and the HTTP server (``serve``);
* prompts (``prompts``, ``prompt_kit``), judges and read-outs (``judges``, ``readouts``),
  training pairs (``pairs``), tournaments and their schedules (``tournament``,
  ``schedules``, and ``schedule_registry``, the one list of their names) and the recipe
  loader (``recipe``).

Kept import-light on purpose: `import pairrl.rollout` must not pull in torch or
transformers, so the CLI and the config layer start fast. Import submodules directly.
"""
