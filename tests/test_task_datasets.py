"""Tasks from `datasets` sources, built here: a parquet file, a save_to_disk folder, a hub
id read from the local cache offline; the column mapping and its error; training data and
benchmark tasks read through them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pairrl.rewards import AnswerTests, InputError
from pairrl.rewards.task_datasets import check_task_source, load_task_source, source_kind

ROWS = [  # GSM8K's column names: question, answer ("... #### N")
    {"question": "What is half of one?", "answer": "It is 1/2. #### 1/2"},
    {"question": "What is 3 + 4?", "answer": "3 + 4 = 7 #### 7"},
]
GSM8K = {"problem": "question"}


@pytest.fixture(scope="module")
def dataset() -> Any:
    import datasets

    return datasets.Dataset.from_list(ROWS)


def _check(tasks: list[Any], prefix: str) -> None:
    assert [t.task_id for t in tasks] == [f"{prefix}/0", f"{prefix}/1"]
    assert [t.prompt for t in tasks] == [r["question"] for r in ROWS]
    assert [t.tests for t in tasks] == [AnswerTests("1/2"), AnswerTests("7")]


def test_parquet_file_with_a_column_mapping(dataset: Any, tmp_path: Path) -> None:
    path = tmp_path / "gsm.parquet"
    dataset.to_parquet(str(path))
    assert source_kind(str(path)) == "parquet"
    _check(load_task_source(str(path), GSM8K), "gsm")
    with pytest.raises(InputError) as err:
        check_task_source(str(path), {"problem": "prompt"})
    assert str(err.value) == (
        f"{path}: column 'prompt' (task field 'problem' in the column mapping) is not there; "
        "its columns are: question, answer"
    )


def test_save_to_disk_folders(dataset: Any, tmp_path: Path) -> None:
    import datasets

    dataset.save_to_disk(str(tmp_path / "plain"))
    _check(load_task_source(str(tmp_path / "plain"), GSM8K), "plain")
    datasets.DatasetDict({"test": dataset}).save_to_disk(str(tmp_path / "splits"))
    _check(load_task_source(str(tmp_path / "splits"), GSM8K, split="test"), "splits")
    with pytest.raises(InputError, match=r"splits: no split 'train'; its splits are: test"):
        load_task_source(str(tmp_path / "splits"), GSM8K, split="train")
    with pytest.raises(InputError, match=r"column 'problem' .*: question, answer"):
        load_task_source(str(tmp_path / "plain"), {"problem": "problem"})


def _cache_as_hub_dataset(dataset: Any, cache: Path, repo: str, config: str, split: str) -> None:
    """Lay ``dataset`` out in a datasets cache as `load_dataset(repo, config)` leaves it."""
    from datasets.packaged_modules.parquet.parquet import Parquet

    owner, name = repo.split("/")
    source = cache / "source.parquet"
    dataset.to_parquet(str(source))
    builder = Parquet(
        cache_dir=str(cache),
        data_files={split: str(source)},
        dataset_name=name,
        config_name=config,
        hash="0123abcd",
    )
    builder.download_and_prepare()
    (cache / f"{owner}___{name}").mkdir()
    (prepared,) = (cache / name).glob(f"{config}-*")
    shutil.move(str(prepared), cache / f"{owner}___{name}" / config)


def test_hub_id_read_from_the_local_cache_offline(
    dataset: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datasets

    assert datasets.config.HF_HUB_OFFLINE  # conftest: nothing may reach the hub
    cache = tmp_path / "hf-datasets"
    cache.mkdir()
    _cache_as_hub_dataset(dataset, cache, "pairrl-tests/tiny_gsm", "main", "test")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", cache)
    assert source_kind("pairrl-tests/tiny_gsm") == "hub"
    _check(load_task_source("pairrl-tests/tiny_gsm", GSM8K, "main", "test"), "tiny_gsm/main")
    with pytest.raises(InputError, match=r"pairrl-tests/absent .*local cache"):
        load_task_source("pairrl-tests/absent", GSM8K, "main", "test")


def test_missing_local_paths_are_named() -> None:
    for path in ("/no/such.parquet", "./missing-folder", "data/a/b"):
        with pytest.raises(InputError, match=rf"^{path}: file not found; expected a task file"):
            source_kind(path)


def test_training_data_from_a_dataset_source(dataset: Any, tmp_path: Path) -> None:
    from pairrl.config import ConfigError, parse_config
    from pairrl.train.config import DataConfig
    from pairrl.train.data import check_data_source
    from pairrl.train.task_family import TaskRowsFamily

    dataset.to_parquet(str(tmp_path / "gsm.parquet"))
    cfg = DataConfig(source="dataset", path=str(tmp_path / "gsm.parquet"), columns=GSM8K)
    loaded = TaskRowsFamily(cfg)
    assert sorted(t.task_id for t in loaded.training_tasks()) == ["gsm/0", "gsm/1"]
    bad = DataConfig(source="dataset", path=str(tmp_path / "gsm.parquet"), columns={"problem": "q"})
    with pytest.raises(InputError, match="column 'q'"):
        check_data_source(bad)
    with pytest.raises(ConfigError, match=r"data\.columns applies to data\.source file or dataset"):
        parse_config({"source": "tiny_code", "columns": GSM8K}, DataConfig)


def test_benchmark_tasks_from_a_parquet_file(dataset: Any, tmp_path: Path) -> None:
    """A math pool evaluated against tasks read from parquet through the column mapping."""
    from pairrl.eval.config import EvalConfig
    from pairrl.eval.runner import run_eval

    dataset.to_parquet(str(tmp_path / "gsm.parquet"))
    pool = tmp_path / "pool.jsonl"
    answers = {"gsm/0": ["\\boxed{0.5}", "\\boxed{2}"], "gsm/1": ["\\boxed{6}", "\\boxed{7}"]}
    pool.write_text(
        "".join(
            json.dumps({"task_id": tid, "candidate_id": str(j), "text": text}) + "\n"
            for tid, texts in answers.items()
            for j, text in enumerate(texts)
        )
    )
    cfg = EvalConfig.model_validate(
        {
            "out_dir": str(tmp_path / "run"),
            "tasks": {"path": str(tmp_path / "gsm.parquet"), "columns": GSM8K},
            "candidates": {"pool": str(pool), "k": 2},
            "selectors": ["first", "oracle"],
            "bootstrap": 100,
        }
    )
    summary = run_eval(cfg, show_progress=False).summary
    assert summary["verdict"] == "PASS" and summary["num_tasks"] == 2
    assert summary["selectors"]["first"]["accuracy"]["value"] == 0.5  # 0.5 right, 6 wrong
    assert summary["pass@1"]["value"] == 0.5
