"""Training configs: every configs/*.yaml of kind train parses; plans and errors are right."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from pairrl.config import ConfigError, load_config, parse_config
from pairrl.train.config import TrainConfig
from pairrl.train.plan import grpo_config_kwargs, resolve_plan

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
# The trainer's own configs (configs/toy_cpu.yaml belongs to the CPU demo).
OWN_CONFIGS = ("tiny_cpu.yaml", "qwen3_4b_deepcoder.yaml", "qwen3_1p7b_deepcoder_1gpu.yaml")
TRAIN_CONFIGS = [CONFIGS / name for name in OWN_CONFIGS]


def _app():
    import typer

    from pairrl.train.cli import register

    app = typer.Typer()
    register(app)

    @app.command("noop")
    def _noop() -> None:  # a second command keeps typer from collapsing to a single one
        """Unused."""

    return app


def test_train_configs_exist_with_kind_train() -> None:
    for path in TRAIN_CONFIGS:
        assert yaml.safe_load(path.read_text())["kind"] == "train", path.name
    for name in ("toy_cpu.yaml", "smollm2_cpu.yaml"):  # the two jobs that compare
        assert yaml.safe_load((CONFIGS / name).read_text())["kind"] == "experiment", name


@pytest.mark.parametrize("path", TRAIN_CONFIGS, ids=lambda p: p.name)
def test_config_parses_and_opens_with_its_command(path: Path) -> None:
    cfg = load_config(path, TrainConfig)
    first = path.read_text().splitlines()[0]
    assert first.startswith("# Launch") and "pairrl" in first + path.read_text().splitlines()[1]
    plan = resolve_plan(cfg, num_processes=1)
    assert plan.solutions_per_step == cfg.batch.problems_per_step * cfg.rollout.num_solutions


@pytest.mark.parametrize("path", TRAIN_CONFIGS, ids=lambda p: p.name)
def test_dry_run_prints_plan(path: Path) -> None:
    result = CliRunner().invoke(_app(), ["train", str(path), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    assert plan["group_size"] == plan["solutions_per_problem"] + plan["judgements_per_problem"]


def test_paper_recipe_values() -> None:
    cfg = load_config(CONFIGS / "qwen3_4b_deepcoder.yaml", TrainConfig)
    assert cfg.model.path.startswith("Qwen/Qwen3-4B-Instruct")
    assert (cfg.rollout.solutions_per_problem, cfg.rollout.judgements_per_problem) == (4, 4)
    assert (cfg.optim.lr, cfg.batch.problems_per_step, cfg.batch.max_steps) == (1e-6, 64, 150)
    assert (cfg.loss.loss_type, cfg.loss.epsilon_low, cfg.loss.epsilon_high) == ("dapo", 0.2, 0.28)
    assert (cfg.loss.beta, cfg.advantage.scale, cfg.advantage.lambda_ver) == (0.0, "none", 1.0)
    assert (cfg.sampling.solution.temperature, cfg.sampling.solution.top_p) == (0.6, 0.95)
    assert cfg.engine.kind == "vllm_colocate" and cfg.advantage.judgement_baseline == "batch"
    # On 8 processes: 8 problems (64 rows) each, 8 rows per micro-batch.
    plan = resolve_plan(cfg, num_processes=8)
    assert (plan.rows_per_process, plan.per_device_train_batch_size) == (64, 8)
    assert plan.judgements_per_step == 256


def _base() -> dict:
    return {"kind": "train", "model": {"path": "m"}, "data": {"source": "tiny_code"}}


def test_split_is_derived_from_the_mode() -> None:
    # pairrl 4 + 4 by default; a split that leaves no judgement is refused.
    cfg = parse_config(_base(), TrainConfig)
    assert (cfg.rollout.solutions_per_problem, cfg.rollout.judgements_per_problem) == (4, 4)
    full = _base() | {"rollout": {"group_size": 8, "num_solutions": 8}}
    with pytest.raises(ConfigError, match="needs at least one judgement"):
        parse_config(full, TrainConfig)
    # One override switches to the GRPO baseline with the same G: 8 solutions, 0 judgements.
    grpo = load_config(CONFIGS / "tiny_cpu.yaml", TrainConfig, ["rollout.mode=grpo"])
    assert (grpo.rollout.solutions_per_problem, grpo.rollout.judgements_per_problem) == (8, 0)
    plan = resolve_plan(grpo, num_processes=1)
    assert (plan.solutions_per_step, plan.judgements_per_step) == (32, 0)


def test_bad_values_name_field_and_allowed() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(_base() | {"engine": {"kind": "sglang"}}, TrainConfig)
    assert "engine.kind = 'sglang'" in str(info.value) and "'vllm_colocate'" in str(info.value)
    with pytest.raises(ConfigError, match=r"data\.path is required"):
        parse_config(_base() | {"data": {"source": "hub"}}, TrainConfig)


def test_plan_requires_whole_groups_per_process() -> None:
    cfg = parse_config(_base() | {"batch": {"problems_per_step": 3}}, TrainConfig)
    with pytest.raises(ConfigError, match="multiple of the process count"):
        resolve_plan(cfg, num_processes=2)
    cfg = parse_config(
        _base() | {"batch": {"problems_per_step": 2, "gradient_accumulation_steps": 3}}, TrainConfig
    )
    with pytest.raises(ConfigError, match="must divide the rows per process"):
        resolve_plan(cfg, num_processes=1)


def test_grpo_config_accepts_mapping(tmp_path: Path) -> None:
    from trl import GRPOConfig

    cfg = load_config(CONFIGS / "tiny_cpu.yaml", TrainConfig)
    plan = resolve_plan(cfg, num_processes=1, out=str(tmp_path))
    args = GRPOConfig(**grpo_config_kwargs(cfg, plan))
    assert args.num_generations == 8 and args.scale_rewards == "none"
    assert args.generation_batch_size == cfg.batch.problems_per_step * 8
    assert args.max_completion_length == 40 and not args.bf16


def test_recipe_errors_name_the_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pairrl.train.task_family import resolve_recipe

    toy = CONFIGS / "toy_cpu.yaml"
    cfg = load_config(toy, TrainConfig, ["recipe.options.eval_k=1"])
    with pytest.raises(ConfigError, match=r"recipe\.options\.eval_k = 1 is invalid"):
        resolve_recipe(cfg.recipe)
    cfg = load_config(toy, TrainConfig, ["recipe.options.evalk=8"])
    with pytest.raises(ConfigError, match=r"recipe\.options\.evalk: unknown key"):
        resolve_recipe(cfg.recipe)
    cfg = load_config(toy, TrainConfig, ["recipe.name=no_such_recipe_module"])
    with pytest.raises(ConfigError, match="cannot import recipe module 'no_such_recipe_module'"):
        resolve_recipe(cfg.recipe)
    with pytest.raises(ConfigError, match="go together"):
        load_config(toy, TrainConfig, ["data.source=tiny_code"])
    # A user's recipe is any module in the working directory that exposes RECIPE.
    (tmp_path / "my_recipe.py").write_text(
        "from pairrl.recipes.toy_addition.recipe import ToyAdditionRecipe\n"
        "class Mine(ToyAdditionRecipe):\n    pass\nRECIPE = Mine()\nNOT_A_RECIPE = object()\n"
    )
    monkeypatch.chdir(tmp_path)
    cfg = load_config(toy, TrainConfig, ["recipe.name=my_recipe"])
    assert type(resolve_recipe(cfg.recipe).recipe).__name__ == "Mine"
    cfg = load_config(toy, TrainConfig, ["recipe.name=my_recipe:NOT_A_RECIPE"])
    with pytest.raises(ConfigError, match="is not a Recipe"):
        resolve_recipe(cfg.recipe)


def test_a_recipe_without_an_experiment_trains_and_pairrl_experiment_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from pairrl.train.task_family import resolve_recipe

    # every required member, delegated to the toy recipe; no run_experiment
    members = ["training_tasks", "heldout_tasks", "prompt_kit", "warm_start_conversations"]
    (tmp_path / "plain_recipe.py").write_text(
        "from pairrl.recipes.toy_addition.recipe import ToyAdditionRecipe\n"
        "TOY = ToyAdditionRecipe()\n"
        "class Plain:\n"
        "    options_model = TOY.options_model\n"
        + "".join(f"    {m} = TOY.{m}\n" for m in members)
        + "RECIPE = Plain()\n"
    )
    monkeypatch.chdir(tmp_path)
    cfg = load_config(CONFIGS / "toy_cpu.yaml", TrainConfig, ["recipe.name=plain_recipe"])
    assert not hasattr(resolve_recipe(cfg.recipe).recipe, "run_experiment")
    result = CliRunner().invoke(
        _app(), ["experiment", str(CONFIGS / "toy_cpu.yaml"), "--dry-run",
                 "--set", "recipe.name=plain_recipe"],
    )  # fmt: skip
    assert result.exit_code == 2 and "has no experiment" in result.output, result.output
    trained = CliRunner().invoke(
        _app(), ["train", str(CONFIGS / "toy_cpu.yaml"), "--dry-run", "--set", "recipe.name=plain_recipe",
                 "--set", "kind=train"],
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output


def test_each_command_refuses_the_others_config_and_names_the_right_one() -> None:
    from typer.testing import CliRunner

    toy, tiny = str(CONFIGS / "toy_cpu.yaml"), str(CONFIGS / "tiny_cpu.yaml")
    train = CliRunner().invoke(_app(), ["train", toy, "--dry-run"])
    assert train.exit_code == 2 and f"pairrl experiment {toy}" in train.output, train.output
    experiment = CliRunner().invoke(_app(), ["experiment", tiny, "--dry-run"])
    assert experiment.exit_code == 2 and f"pairrl train {tiny}" in experiment.output
    assert CliRunner().invoke(_app(), ["experiment", toy, "--dry-run"]).exit_code == 0
    with pytest.raises(ConfigError, match="kind 'experiment' needs a recipe"):
        load_config(CONFIGS / "tiny_cpu.yaml", TrainConfig, ["kind=experiment"])


def test_per_sample_type_normalisation_needs_the_dapo_loss() -> None:
    ok = parse_config(_base() | {"loss": {"token_normalisation": "per_sample_type"}}, TrainConfig)
    assert ok.loss.token_normalisation == "per_sample_type"
    bad = _base() | {"loss": {"token_normalisation": "per_sample_type", "loss_type": "grpo"}}
    with pytest.raises(ConfigError, match="reweights TRL's dapo token mean"):
        parse_config(bad, TrainConfig)
