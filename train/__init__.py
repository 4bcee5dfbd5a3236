"""pairrl train: PairRL on TRL's GRPOTrainer.

Modules (import them directly; this package import stays light, no torch):

* ``train.config``     the run config schema (``TrainConfig``), validated before anything loads
* ``train.plan``       the resolved plan a dry run prints, and the GRPOConfig it maps to
* ``train.layout``     the rows TRL receives per problem group (solutions, then judgements)
* ``train.advantages`` PairRL / PointRL / GRPO advantages as pure functions
* ``train.metrics``    per-step metrics from the row records
* ``train.rollout``    the ``rollout_func`` plugged into ``GRPOTrainer``
* ``train.trainer``    ``PairRLTrainer``: the one override (advantages), reward functions
* ``train.run``        wiring: model, data, executor, trainer, resume
* ``train.cli``        ``pairrl train CONFIG``
"""
