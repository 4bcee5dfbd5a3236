"""LoRA training (`model.lora`) and `pairrl export` on CPU with the tiny model.

Fast: the schema's bounds and errors, the PEFT config it maps to, a missing peft, a misspelt
target module, the plan line, and the merged export (same logits as base + adapter, loaded
by transformers and by the benchmark's sampler), its errors, and a full-weight export.
Slow: PairRL steps with LoRA from the warm-started tiny model: checkpoints hold the adapter
and its optimiser state only; a run killed after its step-2 checkpoint and resumed gives
the uninterrupted run's step 3 (completions, rewards, advantages) and the same final
adapter, bit for bit; the run's export matches its adapter.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import test_train_cpu as train_cpu
import torch
import typer
from typer.testing import CliRunner

from pairrl.config import ConfigError, load_config
from pairrl.errors import InputError
from pairrl.train.config import TrainConfig
from pairrl.train.lora import LoraConfig, check_targets, peft_config

REPO = Path(__file__).resolve().parents[1]
TINY_CONFIG = REPO / "configs" / "tiny_cpu.yaml"
warm_tiny_model = train_cpu.warm_tiny_model  # the session's warm-started tiny model


def tiny_cfg(*overrides: str) -> TrainConfig:
    return load_config(TINY_CONFIG, TrainConfig, list(overrides))


# ---- schema --------------------------------------------------------------------------------


def test_lora_is_off_by_default_and_maps_to_peft() -> None:
    assert tiny_cfg().model.lora is None and peft_config(None) is None
    cfg = tiny_cfg("model.lora.rank=8", "model.lora.target_modules=[q_proj, v_proj]")
    lora = cfg.model.lora
    assert lora == LoraConfig(rank=8, alpha=32.0, dropout=0.0, target_modules=["q_proj", "v_proj"])
    peft = peft_config(lora)
    assert (peft.r, peft.lora_alpha, peft.lora_dropout) == (8, 32.0, 0.0)
    assert peft.target_modules == {"q_proj", "v_proj"} and peft.task_type == "CAUSAL_LM"
    assert peft_config(LoraConfig(target_modules="all-linear")).target_modules == "all-linear"
    # null turns LoRA off again (a LoRA config run as full fine-tuning)
    assert tiny_cfg("model.lora.rank=8", "model.lora=null").model.lora is None


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("model.lora.rank=0", "model.lora.rank = 0 is invalid"),
        ("model.lora.alpha=0", "model.lora.alpha = 0 is invalid"),
        ("model.lora.dropout=1.0", "model.lora.dropout = 1.0 is invalid"),
        ("model.lora.target_modules=[]", "name at least one module"),
        ("model.lora.target_modules=['q_proj', '']", "must be non-empty"),
        ("model.lora.target_modules=[q_proj, q_proj]", "module names repeat"),
        ("model.lora.target_modules=attention", "list of module names or 'all-linear'"),
        ("model.lora.r=8", "model.lora.r: unknown key; allowed keys here: alpha, dropout, rank"),
    ],
)
def test_lora_config_errors_name_the_field(override: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        tiny_cfg(override)
    assert message in str(err.value)


def test_missing_peft_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "peft", None)  # `import peft` raises ImportError
    with pytest.raises(ConfigError) as err:
        peft_config(LoraConfig())
    assert "LoRA needs the peft package" in str(err.value)
    assert "pip install -e '.[lora]'" in str(err.value)


def test_misspelt_target_module_lists_the_linear_layers(tiny_model_dir: Path) -> None:
    check_targets(str(tiny_model_dir), LoraConfig())  # the Qwen projections are all there
    with pytest.raises(ConfigError) as err:
        check_targets(str(tiny_model_dir), LoraConfig(target_modules=["q_proj", "qproj"]))
    text = str(err.value)
    assert "['qproj'] name no module" in text
    assert "down_proj, gate_proj, k_proj, lm_head, o_proj, q_proj" in text


def test_plan_says_what_trains() -> None:
    from pairrl.train.plan import resolve_plan

    assert resolve_plan(tiny_cfg(), num_processes=1).trainable == "all weights"
    plan = resolve_plan(tiny_cfg("model.lora.rank=4"), num_processes=1)
    assert plan.trainable.startswith("LoRA r=4 alpha=32 dropout=0 on q_proj,k_proj")


def test_one_gpu_lora_config_plans_one_row_per_micro_batch() -> None:
    from pairrl.train.plan import grpo_config_kwargs, resolve_plan

    cfg = load_config(REPO / "configs" / "qwen3_4b_lora_1gpu.yaml", TrainConfig)
    plan = resolve_plan(cfg, num_processes=1)
    assert plan.trainable.startswith("LoRA r=32 alpha=64")
    assert plan.per_device_train_batch_size == 1 and plan.rows_per_process == 64
    kwargs = grpo_config_kwargs(cfg, plan)
    assert kwargs["vllm_max_model_length"] == 10240 and kwargs["vllm_enable_sleep_mode"]


# ---- merged export -------------------------------------------------------------------------


def export_cli(args: list[str]) -> tuple[int, str]:
    """`pairrl export ARGS` in-process, as the root CLI runs it (InputError: exit 2)."""
    from pairrl.train.cli import register

    root = typer.Typer()
    register(root)
    result = CliRunner().invoke(root, ["export", *args])
    if isinstance(result.exception, InputError):
        return 2, str(result.exception)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def logits(model: torch.nn.Module, tokenizer: object) -> torch.Tensor:
    text = "def add(a, b):\n    return a + b\n<|im_end|>"
    ids = tokenizer(text, return_tensors="pt")["input_ids"]  # type: ignore[operator]
    with torch.no_grad():
        return model.eval()(input_ids=ids).logits


def random_adapter(base: Path, out: Path) -> Path:
    """A LoRA adapter on ``base`` with random A and B (a fresh one is the identity)."""
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(1)
    model = AutoModelForCausalLM.from_pretrained(base)
    config = peft_config(LoraConfig(rank=4, alpha=8.0))
    config.init_lora_weights = False
    get_peft_model(model, config).save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)
    return out


def assert_export_matches_adapter(adapter: Path, merged: Path, base: Path) -> None:
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(merged)
    with_adapter = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), adapter)
    plain = AutoModelForCausalLM.from_pretrained(merged)
    assert not any("lora" in name for name, _ in plain.named_parameters())
    expected, got = logits(with_adapter, tokenizer), logits(plain, tokenizer)
    assert not torch.allclose(
        expected, logits(AutoModelForCausalLM.from_pretrained(base), tokenizer)
    )
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_merged_export_gives_the_adapter_models_logits(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    adapter = random_adapter(tiny_model_dir, tmp_path / "adapter")
    code, out = export_cli([str(adapter), "--out", str(tmp_path / "merged")])
    assert code == 0, out
    merged = tmp_path / "merged"
    record = json.loads(out[out.index("{") :])
    assert record["kind"] == "merged LoRA adapter" and record["dtype"] == "float32"
    assert record["base"] == str(tiny_model_dir)
    for name in ("config.json", "model.safetensors", "tokenizer.json", "generation_config.json"):
        assert (merged / name).is_file(), name
    assert not (merged / "adapter_config.json").exists()
    assert_export_matches_adapter(adapter, merged, tiny_model_dir)

    # What `pairrl eval --model DIR` loads it with.
    from pairrl.rollout.samplers.hf import HFSampler

    sampler = HFSampler.from_pretrained(merged, device="cpu")
    assert sampler.model.config.model_type == "qwen3"


def test_export_in_bfloat16_and_of_full_weights(tiny_model_dir: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    adapter = random_adapter(tiny_model_dir, tmp_path / "adapter")
    code, out = export_cli([str(adapter), "--out", str(tmp_path / "bf16"), "--dtype", "bfloat16"])
    assert code == 0, out
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "bf16")
    assert model.dtype == torch.bfloat16

    # A full-weight folder is re-written as it is (no optimiser state, same logits).
    code, out = export_cli([str(tiny_model_dir), "--out", str(tmp_path / "full")])
    assert code == 0 and json.loads(out[out.index("{") :])["kind"] == "full weights"
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    a = logits(AutoModelForCausalLM.from_pretrained(tiny_model_dir), tokenizer)
    b = logits(AutoModelForCausalLM.from_pretrained(tmp_path / "full"), tokenizer)
    assert torch.equal(a, b)


def test_export_errors_name_the_folder(tiny_model_dir: Path, tmp_path: Path) -> None:
    code, out = export_cli([str(tmp_path / "nowhere"), "--out", str(tmp_path / "x")])
    assert code == 2 and "no such folder" in out
    (tmp_path / "empty").mkdir()
    code, out = export_cli([str(tmp_path / "empty"), "--out", str(tmp_path / "x")])
    assert code == 2 and "holds no model" in out and "checkpoint-N" in out
    code, out = export_cli([str(tiny_model_dir), "--out", str(tiny_model_dir)])
    assert code == 2 and "is not empty" in out
    adapter = random_adapter(tiny_model_dir, tmp_path / "adapter")
    config = json.loads((adapter / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = str(tmp_path / "moved-away")
    (adapter / "adapter_config.json").write_text(json.dumps(config))
    code, out = export_cli([str(adapter), "--out", str(tmp_path / "y")])
    assert code == 2 and "pass --base PATH" in out
    code, out = export_cli(
        [str(adapter), "--out", str(tmp_path / "y"), "--base", str(tiny_model_dir)]
    )
    assert code == 0, out


# ---- LoRA training -------------------------------------------------------------------------

LORA = ("--set", "model.lora.rank=8", "--set", "model.lora.dropout=0.1", "--set", "optim.lr=3e-3")


def lora_args(model: Path, out: Path, steps: int, *extra: str) -> list[str]:
    return train_cpu.train_args(model, out, steps, *LORA, "--set", "logging.wandb=disabled", *extra)


@pytest.fixture(scope="module")
def lora_run(warm_tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An uninterrupted 3-step LoRA run (checkpoints at steps 2 and 3)."""
    out = tmp_path_factory.mktemp("lora") / "reference"
    summary = train_cpu.run_pairrl(lora_args(warm_tiny_model, out, 3))
    assert summary["global_step"] == 3
    return out


def adapter_tensors(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(folder / "adapter_model.safetensors")


@pytest.mark.slow
def test_lora_steps_train_the_adapter_and_checkpoint_it_alone(
    warm_tiny_model: Path, lora_run: Path
) -> None:
    rows = [json.loads(line) for line in (lora_run / "metrics.jsonl").open()]
    steps = [r for r in rows if "pairrl/solution_pass_rate" in r]
    assert len(steps) == 3 and any(r["pairrl/solution_pass_rate"] > 0 for r in steps)
    assert any(r["grad_norm"] > 0 for r in steps)
    for folder in (lora_run / "checkpoint-2", lora_run / "final"):
        assert (folder / "adapter_config.json").is_file()
        assert not (folder / "model.safetensors").exists(), (
            "a LoRA checkpoint holds no base weights"
        )
        weights = adapter_tensors(folder)
        assert weights and all(".lora_A." in k or ".lora_B." in k for k in weights)
        assert any(v.abs().max() > 0 for k, v in weights.items() if ".lora_B." in k), "untrained"
    config = json.loads((lora_run / "checkpoint-2" / "adapter_config.json").read_text())
    assert (config["r"], config["lora_alpha"], config["lora_dropout"]) == (8, 32.0, 0.1)
    assert config["base_model_name_or_path"] == str(warm_tiny_model)
    # The optimiser state covers the adapter's tensors only.
    optim = torch.load(lora_run / "checkpoint-2" / "optimizer.pt", weights_only=False)
    assert len(optim["state"]) == len(adapter_tensors(lora_run / "checkpoint-2"))


@pytest.mark.slow
def test_lora_kill_and_resume_is_exact(
    warm_tiny_model: Path, lora_run: Path, tmp_path: Path
) -> None:
    cut = tmp_path / "interrupted"
    train_cpu.kill_after_checkpoint_2(lora_args(warm_tiny_model, cut, 8), cut)

    resumed = train_cpu.run_pairrl(lora_args(warm_tiny_model, cut, 3, "--resume"))
    assert resumed["global_step"] == 3 and resumed["resumed_from"].endswith("checkpoint-2")
    train_cpu.assert_same_step(lora_run, cut, 3)
    ref, got = adapter_tensors(lora_run / "final"), adapter_tensors(cut / "final")
    assert ref.keys() == got.keys() and all(torch.equal(ref[k], got[k]) for k in ref)


@pytest.mark.slow
def test_lora_run_exports_a_merged_model_that_eval_loads(
    lora_run: Path,
    tmp_path: Path,
    eval_cli: Callable[..., tuple[int, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    merged = tmp_path / "merged"
    code, out = export_cli([str(lora_run), "--out", str(merged)])
    assert code == 0, out
    record = json.loads(out[out.index("{") :])
    assert record["source"] == str(lora_run / "final")
    assert_export_matches_adapter(lora_run / "final", merged, Path(record["base"]))

    monkeypatch.chdir(REPO)  # the eval config names its task file from the repository root
    args = ["configs/eval_math_tiny_cpu.yaml", "--strict", "--no-progress", "--model", str(merged)]
    overrides = ["--set", "candidates.k=2", "--set", "tasks.limit=2"]
    code, out = eval_cli([*args, "--out", str(tmp_path / "eval"), *overrides])
    assert code == 0, out
    assert json.loads((tmp_path / "eval" / "summary.json").read_text())["verdict"] == "PASS"
