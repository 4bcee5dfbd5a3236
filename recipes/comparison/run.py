"""The experiment of a recipe that compares PairRL with its baselines (``pairrl
experiment``): the warm start; then, beside PairRL's training, the work that needs only the
warm start (``beside``: the baselines and the warm start's benchmark); then the held-out
comparison (``report.finish``). A recipe inherits it and names its task family in
``task`` (``pairrl.recipes.comparison.report.TaskDescription``)."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from typing import Any

from pairrl.errors import InputError
from pairrl.recipes.comparison.options import ComparisonOptions
from pairrl.recipes.comparison.report import TaskDescription
from pairrl.train.run import FinishedRun, TrainingRun

__all__ = ["ComparisonExperiment"]


class ComparisonExperiment:
    """``run_experiment`` of a comparison recipe."""

    task: TaskDescription

    def run_experiment(
        self, run: TrainingRun, cfg: Any, options: ComparisonOptions
    ) -> dict[str, Any]:
        """Warm start, PairRL with the baselines beside it, the benchmark of every model;
        the training's summary with the comparison's headline as ``recipe``."""
        policy = run.warm_start()
        if policy.warm_start_dir is None:
            raise InputError(
                f"the {self.task.title} experiment compares against its warm start: "
                "warm_start.steps must be above 0"
            )
        run.probe_pairs()  # built before the baselines start: they are probed on the same
        with self._beside(run, cfg, options, policy.warm_start_dir) as beside:
            summary = run.train()
            if run.finished is not None and run.is_main:
                summary["recipe"] = self._compare(
                    cfg, options, replace(run.finished, beside=beside)
                )
        return summary

    def _beside(
        self, run: TrainingRun, cfg: Any, options: ComparisonOptions, warm_start_dir: Any
    ) -> AbstractContextManager[Any]:
        """The comparison's work that needs only the warm start, started beside training
        (on the main process)."""
        if not run.is_main:
            return nullcontext()
        from pairrl.recipes.comparison.beside import Beside

        return Beside(cfg, options, run.run_dir, warm_start_dir)

    def _compare(self, cfg: Any, options: ComparisonOptions, run: FinishedRun) -> dict[str, Any]:
        """Evaluate the final model, collect the baselines and the other benchmark runs
        (``run.beside``), write ``summary.json``, ``demo.png`` and the table; returns the
        headline."""
        from pairrl.recipes.comparison.report import finish

        summary = finish(cfg, options, run, self.task)
        return {
            "verification_gain": summary["verification_gain"],
            "summary": str(run.run_dir / "summary.json"),
        }
