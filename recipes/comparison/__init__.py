"""A recipe's comparison of PairRL with its baselines, on held-out problems.

Any recipe whose options extend ``ComparisonOptions`` gets the main job's shape: baselines
trained from the run's own warm start, same seed and steps (``experiment``), run beside
training in a second process on a CPU (``beside``), every model evaluated by the selection
benchmark on its own candidates and on one shared pool, and ``summary.json``, the table
and ``demo.png`` with paired bootstrap intervals (``report``, ``intervals``).
"""
