"""pairrl: train language models to write solutions and judge them in pairs (PairRL), pick
the best of k candidates with a pairwise tournament, and benchmark that selection.

The repository's top-level folders install as subpackages of this one namespace:
``pairrl.rewards`` (sandboxed execution, rewards, rating parsing; no torch),
``pairrl.rollout`` (samplers, prompts, judges, training pairs, tournaments),
``pairrl.train`` (PairRL on TRL's GRPOTrainer), ``pairrl.eval`` (the selection
benchmark), ``pairrl.slurm`` (cluster jobs) and ``pairrl.recipes`` (worked examples
built on the public interfaces). This root holds what they all share: the typed-config
base (``pairrl.config``), the progress bars of long stages (``pairrl.progress``), the
tiny local model (``pairrl.tiny_model``), glibc's memory reuse for CPU steps
(``pairrl.memory``), ``doctor`` and the ``pairrl`` command (``pairrl.cli``).

Importing ``pairrl`` loads nothing heavy; import the subpackage you need.
"""

# The subpackages live in folders beside this one (setuptools maps them). If a wheel is
# installed and Python also finds this source folder first (run from a checkout), let
# the installed portion supply them.
__path__ = __import__("pkgutil").extend_path(__path__, __name__)
