"""The CPU demo: PairRL teaches a tiny model to add (as code) and to judge its own answers.

``tasks`` (the toy family, checked by the sandboxed executor), ``prompts`` (compact prompts,
single-token ratings), ``warm_start`` (TRL SFTTrainer), ``evaluate`` and ``selection``
(held-out pass rate, judge balanced accuracy, best-of-k), ``report`` (summary.json, PNG),
``pipeline`` (what the trainer calls before and after training), ``config`` (``demo:``).
"""
