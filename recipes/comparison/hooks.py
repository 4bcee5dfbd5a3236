"""The two training hooks of a recipe that compares PairRL with its baselines: the work
that needs only the warm start, started beside training (``before_training``), and the
held-out comparison after it (``after_training``). A recipe inherits them and names its
task family in ``task`` (``pairrl.recipes.comparison.report.TaskDescription``)."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from pairrl.recipes.comparison.options import ComparisonOptions
from pairrl.recipes.comparison.report import TaskDescription
from pairrl.train.task_family import FinishedRun

__all__ = ["ComparisonHooks"]


class ComparisonHooks:
    """``before_training`` and ``after_training`` of a comparison recipe."""

    task: TaskDescription

    def before_training(
        self, cfg: Any, options: ComparisonOptions, run_dir: Path, warm_start_dir: Path | None
    ) -> AbstractContextManager[Any]:
        """The comparison's work that needs only the warm start, started beside training."""
        if not options.evaluate or warm_start_dir is None:
            return nullcontext()
        from pairrl.recipes.comparison.beside import Beside

        return Beside(cfg, options, run_dir, warm_start_dir)

    def after_training(
        self, cfg: Any, options: ComparisonOptions, run: FinishedRun
    ) -> dict[str, Any]:
        """Evaluate the final model, collect the baselines and the other benchmark runs
        (``run.beside``), write ``summary.json``, ``demo.png`` and the table; returns the
        headline."""
        if not options.evaluate:  # a baseline run: the main run evaluates it
            return {"evaluated": False}
        if run.warm_start_dir is None:
            raise ValueError(
                f"the {self.task.title} recipe compares against its warm start: "
                "warm_start.steps > 0"
            )
        from pairrl.recipes.comparison.report import finish

        summary = finish(cfg, options, run, self.task)
        return {
            "verification_gain": summary["verification_gain"],
            "summary": str(run.run_dir / "summary.json"),
        }
