"""pairrl.slurm: render and submit Slurm jobs for training (trainer nodes and a vLLM server
node) and sharded evaluation (an array job and a merge), the ``pairrl slurm`` command, and
``local_cluster.sh``, a one-node cluster for tests.

The renderer reads the typed train and eval configs (``pairrl.train.config``,
``pairrl.eval.config``); nothing below this package imports it.
"""
