"""Config validation, the quick command line's errors, task selection and W&B logging."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from pairrl.config import ConfigError, parse_config
from pairrl.eval.config import EvalConfig
from pairrl.eval.runner import finish
from pairrl.eval.tasks import select_tasks


def test_config_errors_name_field_and_allowed_values() -> None:
    with pytest.raises(ConfigError, match=r"selectors\.0 = 'best' is invalid.*'random', 'first'"):
        parse_config({"candidates": {"pool": "p.jsonl"}, "selectors": ["best"]}, EvalConfig)
    with pytest.raises(ConfigError, match=r"candidates\.source='model' needs candidates\.model"):
        parse_config({"candidates": {"source": "model"}, "tasks": {"path": "t"}}, EvalConfig)
    with pytest.raises(ConfigError, match=r"tasks\.path is required"):
        parse_config({"candidates": {"source": "endpoint", "endpoint": "http://x/v1"}}, EvalConfig)
    with pytest.raises(ConfigError, match=r"candidates\.k"):
        parse_config({"candidates": {"pool": "p", "k": 0}}, EvalConfig)
    with pytest.raises(ConfigError, match="shard"):
        parse_config({"candidates": {"pool": "p"}, "shard": "2/2"}, EvalConfig)


def test_quick_cli_usage_errors(eval_cli: Callable[..., tuple[int, str]], tmp_path: Path) -> None:
    code, out = eval_cli(["--tasks", "t.jsonl", "--k", "2"], reraise=False)
    assert code != 0 and "needs one of --model, --endpoint, --pool" in out
    code, out = eval_cli(["--pool", "p", "--model", "m"], reraise=False)
    assert code != 0 and "at most one of" in out
    code, out = eval_cli(["--pool", "p", "--selectors", "random,magic"], reraise=False)
    assert code == 2 and "selectors.1" in out


def test_bad_shard_and_endpoint_are_refused_at_once(
    eval_cli: Callable[..., tuple[int, str]], tmp_path: Path
) -> None:
    out = ["--out", str(tmp_path / "o"), "--no-progress"]
    code, text = eval_cli(["--tasks", "t.jsonl", "--pool", "p.jsonl", "--shard", "5/3", *out])
    assert code == 2
    assert "shard = '5/3' is invalid" in text and "need 0 <= i < n" in text
    assert "'candidates'" not in text  # the reason, not the whole config
    code, text = eval_cli(["--tasks", "t.jsonl", "--endpoint", "notaurl", *out])
    assert code == 2
    assert "candidates.endpoint = 'notaurl' is invalid" in text and "http://" in text
    code, text = eval_cli(["--pool", "p.jsonl", "--judge-endpoint", "localhost:8000", *out])
    assert code == 2 and "judge.endpoint = 'localhost:8000' is invalid" in text
    assert not (tmp_path / "o").exists()


def test_missing_model_and_empty_task_file_are_errors_at_once(
    eval_cli: Callable[..., tuple[int, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model path that is not there, and (with HF_HUB_OFFLINE) a hub id the local cache
    lacks, are one `error:` line before anything runs: no hub lookup, no traceback."""
    import time

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"task_id": "t", "prompt": "def f():\n", "test": ""}) + "\n")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.monotonic()
    for model, expected in (
        ("runs/nomodel", "candidates.model runs/nomodel: no model folder there"),
        ("someorg/nomodel", "HF_HUB_OFFLINE is set and the local hub cache holds no model"),
    ):
        code, text = eval_cli(
            ["--tasks", str(tasks), "--model", model, "--out", "o"], reraise=False
        )
        assert code == 2, text
        assert text.startswith("error: ") and expected in text and "Traceback" not in text
    assert time.monotonic() - start < 10
    assert not (tmp_path / "o").exists()

    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, text = eval_cli(["--tasks", str(empty), "--pool", "p.jsonl", "--out", "o"])
    assert code == 2
    assert f"error: {empty}: holds no task; expected a task file" in text


def test_a_model_that_cannot_be_loaded_is_an_input_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pairrl.errors import InputError
    from pairrl.eval.config import HttpConfig
    from pairrl.eval.models import make_sampler
    from pairrl.rollout.samplers import HFSampler

    def unreachable(*_args: object, **_kwargs: object) -> None:
        raise OSError("We couldn't connect to the hub to load the files.\nCheck your network.")

    monkeypatch.setattr(HFSampler, "from_pretrained", unreachable)
    with pytest.raises(InputError, match=r"^model org/m: cannot be loaded: We couldn't connect"):
        make_sampler("org/m", None, "default", HttpConfig(), 1)


@dataclass
class _T:
    task_id: str


def test_select_tasks_split_limit_shard() -> None:
    tasks = [_T(f"Mbpp/{i}") for i in (5, 11, 12, 13, 510, 511)]
    assert [t.task_id for t in select_tasks(tasks, "mbpp_test")] == [
        "Mbpp/11",
        "Mbpp/12",
        "Mbpp/13",
        "Mbpp/510",
    ]
    assert [t.task_id for t in select_tasks(tasks, "mbpp_test", limit=3, shard="1/2")] == [
        "Mbpp/12"
    ]
    shards = [select_tasks(tasks, shard=f"{i}/3") for i in range(3)]
    assert sorted(t.task_id for s in shards for t in s) == sorted(t.task_id for t in tasks)


def test_wandb_offline_logging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real wandb library, offline: tables and images land in a local run folder."""
    from pairrl.eval.gate import GateResult
    from pairrl.eval.pipeline import EvalRun
    from pairrl.eval.selectors import select_first, select_oracle

    monkeypatch.setenv("WANDB_MODE", "offline")
    cfg = EvalConfig.model_validate(
        {
            "out_dir": str(tmp_path),
            "candidates": {"pool": "p.jsonl"},
            "wandb": {"enabled": True},
            "bootstrap": 100,
        }
    )
    labels = {"a": [True, False], "b": [False, False]}
    run = EvalRun(cfg, "compute", ["a", "b"], {}, {}, {})
    run.selections = {
        "first": {t: select_first(t, v) for t, v in labels.items()},
        "oracle": {t: select_oracle(t, v) for t, v in labels.items()},
    }
    from pairrl.eval.aggregate import summarise

    run.summary = summarise(labels, run.selections, n_boot=100)
    outcome = finish(run, GateResult("PASS", [], 0.0), tmp_path)
    assert json.loads((tmp_path / "summary.json").read_text())["verdict"] == "PASS"
    assert "Integrity gate: PASS" in outcome.report_text
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and any(runs[0].rglob("*.wandb"))
