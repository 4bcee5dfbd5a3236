"""pairrl train: PairRL on TRL's GRPOTrainer (the rollout it calls is ``pairrl.rollout``).

Modules (import them directly; this package import stays light, no torch):

* ``pairrl.train.config``     the run config schema (``TrainConfig``), validated before anything loads
* ``pairrl.train.plan``       the resolved plan a dry run prints, and the GRPOConfig it maps to
* ``pairrl.train.advantages`` PairRL / PointRL / GRPO advantages as pure functions
* ``pairrl.train.metrics``    per-step metrics from the row records
* ``pairrl.train.task_family`` where problems, prompts and warm-start data come from
* ``pairrl.train.trainer``    ``PairRLTrainer``: GRPOTrainer with PairRL's advantages (its overrides: that module's docstring)
* ``pairrl.train.trl_seam``   every private TRL symbol pairrl touches, each pinned by a test
* ``pairrl.train.warm_start`` the warm start every task family feeds: SFT, its record, its reuse
* ``pairrl.train.build``      the rollout, executor and trainer of one training run
* ``pairrl.train.run``        one training run's stages (warm start, train), resume, summary
* ``pairrl.train.cli``        ``pairrl train CONFIG`` (and ``pairrl experiment CONFIG``)
"""
