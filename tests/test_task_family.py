"""One task-family interface: every built-in source (tiny code tasks, task rows from a file or
a dataset, DeepCoder-style hub rows, a recipe) is a ``TaskFamily`` chosen from the YAML in
one place, and gives tasks, a prompt kit and warm-start conversations the same way."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from pairrl.config import load_config
from pairrl.errors import InputError
from pairrl.rewards.tasks import StdioTests
from pairrl.train.config import TrainConfig
from pairrl.train.task_family import (
    DeepCoderFamily,
    RecipeFamily,
    TaskFamily,
    TaskRowsFamily,
    TinyCodeFamily,
    task_family,
)

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _deepcoder_parquet(path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    stdin = [{"input": "1\n", "output": "2\n", "testtype": "stdin"}]
    functional = [{"input": "1", "output": "2", "testtype": "functional"}]
    rows = {
        "problem": ["Read n, print n+1", "Read n, print n*2", "call f"],
        "tests": [json.dumps(stdin), json.dumps(stdin), json.dumps(functional)],
    }
    pq.write_table(pa.table(rows), path)
    return path


def _families(tmp_path: Path) -> dict[str, tuple[list[str], type]]:
    """{name: (--set overrides of configs/tiny_cpu.yaml, the family class expected)}."""
    hub = _deepcoder_parquet(tmp_path / "deepcoder.parquet")
    return {
        "tiny_code": ([], TinyCodeFamily),
        "file": (
            ["data.source=file", f"data.path={CONFIGS / 'data' / 'tiny_math.jsonl'}"],
            TaskRowsFamily,
        ),
        "hub": (["data.source=hub", f"data.path={hub}"], DeepCoderFamily),
        "recipe": ([], RecipeFamily),
    }


@pytest.mark.parametrize("name", ["tiny_code", "file", "hub", "recipe"])
def test_each_built_in_source_is_a_task_family(name: str, tmp_path: Path) -> None:
    overrides, expected = _families(tmp_path)[name]
    config = CONFIGS / ("toy_cpu.yaml" if name == "recipe" else "tiny_cpu.yaml")
    cfg = load_config(config, TrainConfig, overrides)
    family = task_family(cfg)
    assert isinstance(family, TaskFamily) and type(family) is expected
    tasks = family.training_tasks()
    assert tasks and len({t.task_id for t in tasks}) == len(tasks)
    kit = family.prompt_kit()
    prompts = {kit.generation(t)[-1]["content"] for t in tasks}
    assert len(prompts) == len(tasks)  # each prompt identifies its task
    conversations = family.warm_start_conversations(0, tasks)
    # code rows have no format-teaching data (a real model starts from its own); others do
    assert bool(conversations) == (name != "hub")
    assert all(c[-1]["role"] == "assistant" for c in conversations)
    assert family.warm_start_conversations(0, tasks) == conversations  # seeded
    assert not hasattr(family, "before_training") and not hasattr(family, "after_training")


def test_a_recipes_experiment_starts_its_work_beside_training_from_the_warm_start(
    tmp_path: Path,
) -> None:
    """The toy recipe's experiment: its work beside training (the second process) is built
    from the warm start and entered around the run's training, on the main process."""
    from pairrl.recipes.comparison.beside import Beside

    cfg = load_config(CONFIGS / "toy_cpu.yaml", TrainConfig)
    family = task_family(cfg)
    run = SimpleNamespace(is_main=True, run_dir=tmp_path)
    context = family.recipe._beside(run, cfg, family.options, tmp_path / "warm_start")
    assert isinstance(context, Beside)  # built, not entered: no process started
    assert context.warm_start_dir == tmp_path / "warm_start"
    other = SimpleNamespace(is_main=False, run_dir=tmp_path)
    assert family.recipe._beside(other, cfg, family.options, tmp_path).__enter__() is None


def test_an_experiment_without_a_warm_start_is_refused_before_training(tmp_path: Path) -> None:
    from pairrl.errors import InputError

    cfg = load_config(CONFIGS / "toy_cpu.yaml", TrainConfig, ["warm_start.steps=0"])
    family = task_family(cfg)
    trained: list[bool] = []
    run = SimpleNamespace(
        warm_start=lambda: SimpleNamespace(warm_start_dir=None),
        train=lambda: trained.append(True),
        is_main=True,
        run_dir=tmp_path,
    )
    with pytest.raises(InputError, match=r"warm_start\.steps must be above 0"):
        family.recipe.run_experiment(run, cfg, family.options)
    assert not trained


def test_hub_rows_whose_tests_cannot_run_are_skipped_and_counted(tmp_path: Path) -> None:
    hub = _deepcoder_parquet(tmp_path / "deepcoder.parquet")
    cfg = load_config(
        CONFIGS / "tiny_cpu.yaml", TrainConfig, ["data.source=hub", f"data.path={hub}"]
    )
    family = task_family(cfg)
    assert len(family.training_tasks()) == 2
    assert all(isinstance(t.tests, StdioTests) for t in family.training_tasks())
    assert family.skipped == {"None: test type 'functional' is not stdin/stdout": 1}


def test_a_source_with_no_usable_tasks_is_an_error_naming_it(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    only_functional = tmp_path / "functional.parquet"
    tests = json.dumps([{"input": "1", "output": "2", "testtype": "functional"}])
    pq.write_table(pa.table({"problem": ["p"], "tests": [tests]}), only_functional)
    overrides = ["data.source=hub", f"data.path={only_functional}"]
    cfg = load_config(CONFIGS / "tiny_cpu.yaml", TrainConfig, overrides)
    with pytest.raises(InputError, match=r"data source 'hub' .* gave no usable tasks"):
        task_family(cfg)
