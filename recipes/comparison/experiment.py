"""The main job's comparison: baselines trained from the run's own warm start, then every
model evaluated on the held-out problems by the selection benchmark (``pairrl.eval``).

``train_baselines`` re-runs the trainer (``pairrl.train.run.run_training``) once per
baseline mode, from the same warm start, seed and steps as the main run, each in
``RUN/baselines/<mode>``. ``evaluate_models`` runs ``pairrl eval`` twice per model, each a
benchmark run with its own folder and ``config.json`` (so ``pairrl eval RUN/eval/X/config.json``
reproduces it):

* ``RUN/eval/<model>``: the model samples k candidates per held-out problem and judges
  them; pass rate, best-of-k by random / execution agreement (majority) / Swiss with the
  model as judge / oracle;
* ``RUN/eval/<model>-shared``: the model judges one pool shared by every model, the warm
  start's own candidates: Swiss on that pool, and the fixed pairs (0, 1), (2, 3), ... of
  every problem for the judge's balanced accuracy, so every judge faces the same items.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pairrl.eval.config import EvalConfig
from pairrl.recipes.comparison.options import EVALUATION_ONLY, ComparisonOptions
from pairrl.train.config import TrainConfig
from pairrl.train.heldout_probe import PAIRS_FILE

__all__ = [
    "SHARED_POOL_MODEL",
    "all_model_metrics",
    "baseline_config",
    "baseline_folder",
    "evaluate_models",
    "evaluate_own",
    "evaluate_shared_pool",
    "model_metrics",
    "swiss_selector",
    "train_baselines",
    "trained_models",
]

SHARED_POOL_MODEL = "warm_start"  # whose candidates every judge is measured on
BASELINE_DONE = "baseline.json"  # written when a baseline ran to its end: wall time, config


def train_baselines(
    cfg: TrainConfig, options: ComparisonOptions, run_dir: Path, warm_start_dir: Path
) -> dict[str, dict[str, Any]]:
    """Train each baseline from the main run's warm start (``mode`` or ``mode@G``, G its
    group size), same seed and steps; {name: {final_dir, wall_s, log_history}}. A baseline
    that a stopped main job had already finished, with the same config, is reused."""
    out: dict[str, dict[str, Any]] = {}
    for name in options.baselines:
        if name == cfg.rollout.mode:
            continue
        pairs = run_dir / PAIRS_FILE if cfg.heldout_probe.every_steps else None
        baseline = baseline_config(cfg, options, name, warm_start_dir, probe_pairs=pairs)
        folder = baseline_folder(run_dir, name)
        out[name] = _finished_baseline(baseline, folder) or _train_baseline(baseline, folder)
    return out


def baseline_folder(run_dir: Path, name: str) -> Path:
    """Where the main job in ``run_dir`` trains the baseline ``name`` (``grpo@4``: grpo-g4)."""
    return run_dir / "baselines" / name.replace("@", "-g")


def trained_models(cfg: TrainConfig, options: ComparisonOptions, run_dir: Path) -> dict[str, Path]:
    """Every model a finished main job in ``run_dir`` compares: {name: model folder}."""
    models = {SHARED_POOL_MODEL: run_dir / "warm_start"}
    for name in options.baselines:
        if name != cfg.rollout.mode:
            models[name] = baseline_folder(run_dir, name) / "final"
    models[cfg.rollout.mode] = run_dir / "final"
    return models


def baseline_config(
    cfg: TrainConfig,
    options: ComparisonOptions,
    name: str,
    warm_start_dir: Path,
    probe_pairs: Path | None = None,
) -> Any:
    """The main run's config with the baseline's mode (and group size), from the warm start;
    probed on the main run's held-out pairs (``probe_pairs``: its ``heldout_pairs.jsonl``)."""
    mode, _, group = name.partition("@")
    rollout = {**cfg.rollout.model_dump(), "mode": mode}
    if group:
        rollout["group_size"] = int(group)
    base_options = options.model_copy(update={"baselines": []})
    return cfg.model_copy(
        update={
            "kind": "train",  # a baseline is one training, run by the experiment
            "rollout": type(cfg.rollout).model_validate(rollout),
            "model": cfg.model.model_copy(
                update={"path": str(warm_start_dir), "build_tiny": False}
            ),
            "warm_start": cfg.warm_start.model_copy(update={"steps": 0}),
            "recipe": cfg.recipe.model_copy(update={"options": base_options.model_dump()}),
            "logging": cfg.logging.model_copy(
                update={"run_name": f"{cfg.logging.run_name}-{name}"}
            ),
            "heldout_probe": cfg.heldout_probe.model_copy(
                update={"pairs_file": str(probe_pairs) if probe_pairs else None}
            ),
        }
    )


def _finished_baseline(baseline: Any, folder: Path) -> dict[str, Any] | None:
    """The baseline in ``folder`` if it ran to its end with this config; None if there is
    none; an error if the one there was trained with another config."""
    done = folder / BASELINE_DONE
    if not done.is_file() or not (folder / "final" / "config.json").is_file():
        return None  # none, or not whole: trained again
    record = json.loads(done.read_text())
    trained = record.get("config")
    if trained is None:  # an older marker: the trainer's own record of the config it ran with
        saved = folder / "config.json"
        if not saved.is_file():
            return None
        trained = _comparable(json.loads(saved.read_text()))
    if trained != _comparable(baseline):
        raise RuntimeError(
            f"{folder} holds a baseline trained with another config: remove that folder to "
            "train it again with this one, or choose a new --out"
        )
    return {
        "final_dir": folder / "final",
        "wall_s": record["wall_s"],
        "log_history": _read_log(folder / "metrics.jsonl"),
    }


def _comparable(baseline: Any) -> dict[str, Any]:
    """A baseline's config (a config model, or its JSON) without what does not change its
    training: the fields that only spell folders, ``model.path`` (a baseline always starts
    from its own run's warm start, ``RUN/warm_start``) and ``checkpoint.output_dir`` (a
    baseline trains into ``RUN/baselines/<mode>`` whatever it says), since the same run
    folder may be spelled ``runs/toy``, ``./runs/toy`` or absolute on another launch;
    ``heldout_probe`` (it measures the judge, it does not change the training); and
    the recipe's evaluation-only options (``EVALUATION_ONLY``: a job run again to evaluate
    with another k keeps its baselines)."""
    data = baseline if isinstance(baseline, dict) else baseline.model_dump()
    config = json.loads(json.dumps(data, default=str))  # a copy, in JSON's own types
    config["model"].pop("path", None)
    config["checkpoint"].pop("output_dir", None)
    config.pop("heldout_probe", None)  # it measures; it does not change the training
    for name in EVALUATION_ONLY:
        (config["recipe"].get("options") or {}).pop(name, None)
    return config


def _train_baseline(baseline: Any, folder: Path) -> dict[str, Any]:
    """Train the baseline in ``folder``, continuing from the checkpoint a stopped job left
    there (trained with this config), else from its start. A stop signal during its
    training checkpoints it and raises :class:`StopRequested` (the job continues it)."""
    from pairrl.train.checkpoint_on_signal import StopRequested
    from pairrl.train.plan import resolve_plan
    from pairrl.train.run import run_training

    resume = _resumable(baseline, folder)
    if folder.is_dir() and not resume:
        shutil.rmtree(folder)  # stopped before its first checkpoint, or another config
    started = time.perf_counter()
    summary = run_training(baseline, resolve_plan(baseline, out=str(folder)), resume=resume)
    if "final_model" not in summary:
        raise StopRequested(summary["signal"])
    wall = time.perf_counter() - started
    record = {"wall_s": wall, "config": _comparable(baseline)}
    (folder / BASELINE_DONE).write_text(json.dumps(record, indent=2) + "\n")
    return {
        "final_dir": Path(summary["final_model"]),
        "wall_s": wall,
        "log_history": _read_log(folder / "metrics.jsonl"),
    }


def _resumable(baseline: Any, folder: Path) -> bool:
    """Whether ``folder`` holds a stopped training of this baseline that ``--resume`` would
    continue: an intact checkpoint, and the config it was started with (its record) the
    one it would resume with. Anything else is trained again from the warm start."""
    from pairrl.config import ConfigError
    from pairrl.errors import InputError
    from pairrl.train.checkpoints import checkpoint_folders
    from pairrl.train.resume import resume_point

    if not checkpoint_folders(folder):
        return False
    try:
        resume_point(baseline, folder)
    except (ConfigError, InputError):  # another config, or no intact checkpoint
        return False
    return True


def _read_log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def eval_config(
    cfg: TrainConfig,
    options: ComparisonOptions,
    out_dir: Path,
    model_dir: Path,
    pool: Path | None = None,
    cache_apart: bool = False,
) -> EvalConfig:
    """The benchmark run for one model: on its own samples, or judging a given pool.
    ``out_dir`` is ``RUN/eval/<model>`` or ``RUN/eval/<model>-shared``; a model's two runs
    share one cache (``RUN/eval/cache/<model>``) unless ``cache_apart`` gives this one its
    own (``RUN/eval/cache/<model>-shared``: a pool run beside the model's own run)."""
    sol, judge = cfg.sampling.solution, cfg.sampling.judgement
    swiss = swiss_selector(options)
    if pool is None:
        candidates: dict[str, Any] = {
            "source": "model",
            "model": str(model_dir),
            "k": options.eval_k,
            "sampling": {
                "temperature": options.eval_temperature or sol.temperature,
                "top_p": sol.top_p,
                "max_tokens": sol.max_tokens,
            },
            "seed": cfg.seed,
            "batch_size": options.eval_batch_size,
            "engine": options.eval_engine,
            "dtype": cfg.model.dtype,
        }
        selectors = ["random", "agreement", swiss, "oracle"]
    else:
        candidates = {"source": "pool", "pool": str(pool), "k": options.eval_k}
        selectors = ["random", swiss, "oracle"]
    return EvalConfig.model_validate(
        {
            "out_dir": str(out_dir),
            # one per model, for its two runs in turn: the pool run reuses the verdicts its
            # own run computed on identical pairs (the same values it would compute)
            "cache_dir": str(
                out_dir.parent
                / "cache"
                / (out_dir.name if cache_apart else out_dir.name.removesuffix("-shared"))
            ),
            "recipe": {"name": cfg.recipe.name, "options": cfg.recipe.options},
            "candidates": candidates,
            "judge": {
                "model": str(model_dir),
                "readout": "sampled",
                "temperature": judge.temperature,
                "top_p": judge.top_p,
                "max_tokens": judge.max_tokens,
                "seed": cfg.seed + 1,
                "batch_size": options.eval_batch_size,
                "engine": options.eval_engine,
                # measured in the dtype it was trained in
                "dtype": cfg.model.dtype,
                "controls": False,
                "fixed_pairs": pool is not None,
            },
            "selectors": selectors,
            "executor": cfg.executor.model_dump(),
            "selective": {"enabled": False},
            # a tiny sampled judge now and then truncates or garbles a rating: tolerate 1%
            # failed calls (counted and reported), no more
            "gate": {"tolerance": 0.01},
            # no preflight: a model the job trained is measured as it is, failed judgements
            # counted by the gate, and its own run must write the pool the others judge
            "preflight": {"enabled": False},
            "bootstrap": 200,
            "seed": cfg.seed,
        }
    )


def evaluate_models(
    cfg: TrainConfig, options: ComparisonOptions, run_dir: Path, models: dict[str, Path]
) -> dict[str, dict[str, Any]]:
    """Both benchmark runs for every model (the shared pool's owner first: the others judge
    its candidates); their summaries."""
    order = sorted(models, key=lambda m: m != SHARED_POOL_MODEL)
    summaries: dict[str, dict[str, Any]] = {}
    for name in order:
        summaries[name] = evaluate_own(cfg, options, run_dir, name, models[name])
        summaries[f"{name}-shared"] = evaluate_shared_pool(
            cfg, options, run_dir, name, models[name]
        )
    return summaries


def evaluate_own(
    cfg: TrainConfig, options: ComparisonOptions, run_dir: Path, name: str, model: Path
) -> dict[str, Any]:
    """The model's run on its own candidates (``RUN/eval/<name>``); its summary."""
    from pairrl.eval.runner import run_eval

    return run_eval(eval_config(cfg, options, run_dir / "eval" / name, model)).summary


def evaluate_shared_pool(
    cfg: TrainConfig,
    options: ComparisonOptions,
    run_dir: Path,
    name: str,
    model: Path,
    cache_apart: bool = False,
) -> dict[str, Any]:
    """The model's shared-pool run (the pool's owner must have run); its summary. By
    default in the cache the model's own run left; ``cache_apart``: in one of its own, to
    run beside the own run (the same verdicts: a judge's samples do not depend on the
    batch they are drawn in, so a cached verdict is the one it would draw again)."""
    from pairrl.eval.runner import run_eval

    pool = run_dir / "eval" / SHARED_POOL_MODEL / "candidates.jsonl"
    out_dir = run_dir / "eval" / f"{name}-shared"
    return run_eval(eval_config(cfg, options, out_dir, model, pool, cache_apart)).summary


def swiss_selector(options: ComparisonOptions) -> str:
    """The name of the benchmark's Swiss selector at the recipe's budget (``swiss_2n``)."""
    return f"swiss_{options.swiss_budget_per_candidate}n"


def all_model_metrics(
    evals: dict[str, dict[str, Any]], names: Iterable[str], options: ComparisonOptions
) -> dict[str, dict[str, Any]]:
    """:func:`model_metrics` of every model named, from ``evaluate_models``'s summaries."""
    swiss = swiss_selector(options)
    return {name: model_metrics(evals[name], evals[f"{name}-shared"], swiss) for name in names}


def model_metrics(own: dict[str, Any], shared: dict[str, Any], swiss: str) -> dict[str, Any]:
    """One model's headline numbers from its two benchmark summaries."""
    from pairrl.recipes.comparison.failures import judge_failures

    value = lambda s, name: s["selectors"][name]["accuracy"]["value"]  # noqa: E731
    fixed = shared.get("judge_quality", {}).get("fixed_pairs", {})
    failures = judge_failures(s["config"]["out_dir"] for s in (own, shared) if "config" in s)
    return {
        "solution_pass_rate": own["pass@1"]["value"],
        "judge_balanced_accuracy": fixed.get("balanced_accuracy"),
        "judge_failed_pairs": fixed.get("failed"),
        # every judge call of both runs: the share without a verdict, and why
        "judge_failure_rate": failures["rate"],
        "judge_failures": failures,
        "best_of_k": {
            "random": value(own, "random"),
            "majority": value(own, "agreement"),
            "swiss": value(own, swiss),
            "oracle": value(own, "oracle"),
        },
        "shared_pool": {
            "random": value(shared, "random"),
            "swiss": value(shared, swiss),
            "oracle": value(shared, "oracle"),
        },
        "verdicts": {"own": own["verdict"], "shared": shared["verdict"]},
    }
